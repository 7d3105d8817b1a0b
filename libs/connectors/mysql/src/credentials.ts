/**
 * The one credential of a MySQL / MariaDB side: `connectionString`,
 * `mysql://user:password@host:port/database` (`mariadb://` is accepted too). The side's base (a database)
 * wins over a database in the path. TLS is asked for with `?ssl-mode=` (`disabled`, `preferred` = off,
 * `required` = encrypted without verifying the certificate, `verify_ca`, `verify_identity`) or `?ssl=true`
 * (= `verify_identity`).
 *
 * Nothing here ever puts the connection string or the password into an error message.
 */
import { ConnectorError, type Credentials } from '@lockstep/connectors-core';

export interface ParsedConnectionString {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string | null;
  ssl: { rejectUnauthorized: boolean; verifyIdentity: boolean } | null;
}

const SSL_MODES: Record<string, ParsedConnectionString['ssl']> = {
  disabled: null,
  false: null,
  preferred: null,
  required: { rejectUnauthorized: false, verifyIdentity: false },
  verify_ca: { rejectUnauthorized: true, verifyIdentity: false },
  verify_identity: { rejectUnauthorized: true, verifyIdentity: true },
  true: { rejectUnauthorized: true, verifyIdentity: true },
};

function refuse(reason: string): never {
  throw new ConnectorError('auth', `Invalid connection string: ${reason}`);
}

export function parseConnectionString(credentials: Credentials): ParsedConnectionString {
  const text = credentials.connectionString?.trim();
  if (!text) refuse('it is empty (expected mysql://user:password@host:3306/database)');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    refuse('it is not a URL (expected mysql://user:password@host:3306/database)');
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:')
    refuse(`the scheme must be mysql:// or mariadb://, not ${url.protocol}//`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) refuse('it has no host');
  const port = url.port ? Number(url.port) : 3306;
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    refuse('the port is not a number between 1 and 65535');
  let user: string;
  let password: string;
  let database: string | null;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
    database = decodeURIComponent(url.pathname.replace(/^\//, '')) || null;
  } catch {
    refuse('it has a badly percent-encoded part');
  }
  if (!user) refuse('it has no user name');
  const mode = (
    url.searchParams.get('ssl-mode') ??
    url.searchParams.get('sslmode') ??
    url.searchParams.get('ssl') ??
    'disabled'
  )
    .toLowerCase()
    .replace(/-/g, '_');
  if (!(mode in SSL_MODES))
    refuse(`unknown ssl mode "${mode}" (disabled, required, verify_ca, verify_identity)`);
  return { host, port, user, password, database, ssl: SSL_MODES[mode] };
}

/** Every secret part of the credentials, for redaction (the whole string, the password, decoded and raw). */
export function secretsOf(credentials: Credentials): string[] {
  const secrets = Object.values(credentials).filter(
    (value): value is string => typeof value === 'string' && value !== '',
  );
  try {
    const url = new URL(credentials.connectionString ?? '');
    if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
  } catch {
    // Not a URL: the whole string is already in the list.
  }
  return secrets;
}
