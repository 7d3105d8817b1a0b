import { AppConfig, ConfigError, type OAuthClientSetting } from '@lockstep/config';
import type { ConnectorDeclaration } from '@lockstep/connectors-core';

/**
 * Boot check of `OAUTH_CLIENTS` against the offered connectors (built in and plugins): an entry for a
 * connector that does not exist or offers no browser sign-in (neither `oauth` nor an `api_key` connector with
 * a declared sign-in, such as Airtable) is a typo the operator must hear
 * about.
 */
export function assertOAuthClientsMatch(
  config: AppConfig,
  connectors: readonly ConnectorDeclaration[],
): void {
  const problems: string[] = [];
  for (const type of Object.keys(config.OAUTH_CLIENTS)) {
    const connector = connectors.find((candidate) => candidate.type === type);
    if (!connector)
      problems.push(
        `OAUTH_CLIENTS: no connector "${type}" is offered (${connectors.map((c) => c.type).join(', ')})`,
      );
    else if (!connector.auth.oauth)
      problems.push(`OAUTH_CLIENTS: connector "${type}" uses api_key credentials, not browser sign-in`);
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
}

/** The client registration of an oauth connector, or null when the operator has not configured one. */
export function oauthClientFor(config: AppConfig, type: string): OAuthClientSetting | null {
  return Object.prototype.hasOwnProperty.call(config.OAUTH_CLIENTS, type)
    ? config.OAUTH_CLIENTS[type]!
    : null;
}
