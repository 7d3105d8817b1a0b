/**
 * The token check (`checkCredentials`): the token works (`whoami`), and it holds the scopes the connector
 * needs (https://airtable.com/developers/web/api/scopes). An OAuth token reports its scopes; a personal access
 * token does not, so each scope that can be tried without writing is tried (listing bases, the base's schema
 * and its webhooks). A missing one is kind `auth` naming it (the API's `invalid_auth`).
 */
import { ConnectorError, isConnectorError } from '@lockstep/connectors-core';
import { collectAll } from '@lockstep/connectors-http';
import type { AirtableApi } from './db';
import { REQUIRED_SCOPES } from './oauth-endpoints';
import { basePages, baseSchema, whoami } from './sql';

export { REQUIRED_SCOPES };

function missing(scope: string): ConnectorError {
  return new ConnectorError(
    'auth',
    `The Airtable token lacks the scope ${scope} (it needs ${REQUIRED_SCOPES.join(', ')}); ` +
      'create a token with these scopes, or sign in again',
    { appCode: 'MISSING_SCOPE' },
  );
}

/** Runs a probe; a 403 means the scope is missing (the base itself was found by the list before). */
async function probe(scope: string, action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (isConnectorError(error) && error.kind === 'permission') throw missing(scope);
    throw error;
  }
}

export async function checkScopes(api: AirtableApi, baseRef: string | null): Promise<void> {
  const user = await whoami(api);
  if (Array.isArray(user.scopes)) {
    const lacking = REQUIRED_SCOPES.find((scope) => !user.scopes!.includes(scope));
    if (lacking) throw missing(lacking);
    return;
  }
  let bases: { id: string; name: string }[] = [];
  await probe('schema.bases:read', async () => (bases = await collectAll(basePages(api))));
  if (!baseRef) return;
  const base = bases.find((candidate) => candidate.id === baseRef) ?? bases.find((b) => b.name === baseRef);
  if (!base) return;
  await probe('schema.bases:read', () => baseSchema(api, base.id));
  await probe('webhook:manage', () =>
    api.get(`/v0/bases/${encodeURIComponent(base.id)}/webhooks`, { baseId: base.id }),
  );
}
