/**
 * Credentials -> a pg client configuration. The connection string is parsed here (with pg's own parser, so
 * `sslmode=...` and the other URI parameters mean what they mean to pg), the host is checked against the
 * egress policy, and the client connects to the address that was checked (TLS still verifies the name).
 * Nothing is taken from the server's environment (PGHOST, PGPASSWORD, ~/.pgpass, PGSSLMODE).
 */
import { isIP } from 'node:net';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import {
  assertHostAllowed,
  CONNECTION_STRING_FIELD,
  ConnectorError,
  credentialSecrets,
  type ConnectContext,
  type Credentials,
} from '@lockstep/connectors-core';
import { parse } from 'pg-connection-string';
import type { ClientConfig, CustomTypesConfig } from 'pg';

export { CONNECTION_STRING_FIELD };

/** Every value arrives as PostgreSQL's text output; types.ts converts it to the canonical form. */
const rawText = ((_oid: number) => (value: string) => value) as unknown as CustomTypesConfig['getTypeParser'];
export const RAW_TEXT_TYPES: CustomTypesConfig = { getTypeParser: rawText };

/** Session settings the decoders rely on (run on every new connection of the pool). */
export const SESSION_SQL =
  "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET " +
  'extra_float_digits = 1';

export interface ResolvedConfig {
  client: ClientConfig;
  /** Values to redact from every message. */
  secrets: string[];
  /** Host as written in the connection string (for messages). */
  host: string;
}

function authError(message: string): ConnectorError {
  return new ConnectorError('auth', message, { appCode: 'invalid_connection_string' });
}

export async function resolveConfig(
  credentials: Credentials,
  context: ConnectContext,
): Promise<ResolvedConfig> {
  const raw = (credentials[CONNECTION_STRING_FIELD] ?? '').trim();
  if (raw === '') throw authError('The connection string is missing');
  if (!/^postgres(ql)?:\/\//i.test(raw))
    throw authError('The connection string must start with postgres:// or postgresql://');
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(raw);
  } catch {
    throw authError('The connection string is not a valid PostgreSQL connection URI');
  }
  const password = typeof parsed.password === 'string' ? parsed.password : '';
  const secrets = [...credentialSecrets(credentials), password].filter((secret) => secret !== '');
  const user = parsed.user;
  if (!user)
    throw authError('The connection string has no user name (postgres://user:password@host:5432/dbname)');
  const host = parsed.host || 'localhost';
  const port = parsed.port ? Number(parsed.port) : 5432;
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw authError('The connection string has an invalid port');

  const addresses = await assertHostAllowed(host, context.egress);
  const address = addresses[0]!;
  let ssl: boolean | TlsOptions = false;
  if (parsed.ssl && typeof parsed.ssl === 'object') ssl = { ...(parsed.ssl as TlsOptions) };
  else if (parsed.ssl === true || parsed.ssl === 'true') ssl = {};
  else if (parsed.ssl === 'no-verify') ssl = { rejectUnauthorized: false };
  // We connect to the checked address; TLS must still present and verify the host's name.
  if (ssl !== false && isIP(host) === 0 && !host.startsWith('/')) ssl = { ...ssl, servername: host };

  return {
    host,
    secrets,
    client: {
      host: address,
      port,
      user,
      database: parsed.database || user,
      password: () => password,
      ssl,
      application_name: 'lockstep',
      connectionTimeoutMillis: 15_000,
      keepAlive: true,
      types: RAW_TEXT_TYPES,
    },
  };
}
