/**
 * The one place where PostgreSQL's and the driver's error codes become ConnectorError kinds. Looked up in
 * order: the exact SQLSTATE, then its two-character class, then the Node.js / TLS code of a network error.
 * Anything not listed is `transient` (the engine retries with backoff, and a persistent failure surfaces as
 * an issue). Messages are passed through `redactSecrets()`: never a password or a connection string.
 */
import {
  ConnectorError,
  NODE_NETWORK_CODES,
  redactSecrets,
  type ConnectorErrorKind,
} from '@lockstep/connectors-core';

/** Exact SQLSTATE codes (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
export const SQLSTATE_CODES: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  '3D000': 'auth', // invalid_catalog_name: the database in the connection string does not exist
  '42501': 'permission', // insufficient_privilege (also "must be owner of table")
  '42P01': 'not_found', // undefined_table
  '42703': 'not_found', // undefined_column
  '3F000': 'not_found', // invalid_schema_name
  '42704': 'not_found', // undefined_object
  '42804': 'invalid_data', // datatype_mismatch
  '42P10': 'unsupported', // invalid_column_reference (ON CONFLICT without a unique index)
  '0A000': 'unsupported', // feature_not_supported
  '53300': 'rate_limited', // too_many_connections
  '55P03': 'transient', // lock_not_available
  '55006': 'transient', // object_in_use
  '57014': 'transient', // query_canceled (statement timeout)
  '25P02': 'transient', // in_failed_sql_transaction
  '25006': 'permission', // read_only_sql_transaction (a hot standby or a read-only role)
});

/** SQLSTATE classes (the first two characters). */
export const SQLSTATE_CLASSES: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  '08': 'transient', // connection exception
  '22': 'invalid_data', // data exception: bad input syntax, out of range, value too long
  '23': 'invalid_data', // integrity constraint violation: not null, foreign key, unique, check
  '28': 'auth', // invalid authorization specification: wrong password, unknown role, pg_hba refusal
  '40': 'transient', // transaction rollback: serialization failure, deadlock
  '42': 'unsupported', // syntax error or access rule violation (not listed above)
  '44': 'invalid_data', // WITH CHECK OPTION violation
  '53': 'transient', // insufficient resources
  '54': 'invalid_data', // program limit exceeded (row too big, too many columns)
  '57': 'transient', // operator intervention: shutdown, cannot connect now
  '58': 'transient', // system error
  XX: 'transient', // internal error
  P0: 'invalid_data', // PL/pgSQL raise (a user trigger refused the row)
});

/** Network and TLS errors raised by Node.js before PostgreSQL answers: the app is unreachable. */
export const NETWORK_CODES: Readonly<Record<string, ConnectorErrorKind>> = NODE_NETWORK_CODES;

export function pgErrorKind(code: string | undefined): ConnectorErrorKind {
  if (!code) return 'transient';
  return (
    SQLSTATE_CODES[code] ??
    NETWORK_CODES[code] ??
    (code.length === 5 ? SQLSTATE_CLASSES[code.slice(0, 2)] : undefined) ??
    'transient'
  );
}

interface DriverError {
  code?: unknown;
  message?: unknown;
  detail?: unknown;
}

/**
 * Turns anything the driver threw into a ConnectorError with a message safe to show a person: the server's
 * own reason (and detail), prefixed with `context` when given, with every secret redacted.
 */
export function translatePgError(
  error: unknown,
  options: { secrets?: Iterable<string>; context?: string } = {},
): ConnectorError {
  if (error instanceof ConnectorError) return error;
  const driver = (typeof error === 'object' && error !== null ? error : {}) as DriverError;
  const code = typeof driver.code === 'string' ? driver.code : undefined;
  let reason =
    typeof driver.message === 'string' && driver.message !== '' ? driver.message : 'unknown database error';
  if (typeof driver.detail === 'string' && driver.detail !== '') reason += ` (${driver.detail})`;
  if (/connection string|connectionString/i.test(reason)) reason = 'the connection string could not be used';
  const message = redactSecrets(
    options.context ? `${options.context}: ${reason}` : reason,
    options.secrets ?? [],
  );
  return new ConnectorError(pgErrorKind(code), message, { appCode: code });
}
