/**
 * The one place where mysql2 / MySQL / MariaDB errors become ConnectorErrors. Everything is a table: first
 * the driver `code` (server errors below 1900 share their numbers between MySQL and MariaDB, and node /
 * mysql2 client codes), then the flavour-specific server error numbers (from 1900 up MySQL and MariaDB reuse
 * numbers for different errors, and mysql2 names them after MySQL: MariaDB's 4025 CONSTRAINT_FAILED arrives
 * as `ER_INNODB_AUTOEXTEND_SIZE_OUT_OF_RANGE`), then the SQLSTATE class as the last resort.
 *
 * Messages are the server's own reason (safe to show: a server never echoes a password) passed through
 * `redactSecrets()` anyway, so a password or connection string can never leak through a driver message.
 */
import {
  ConnectorError,
  isConnectorError,
  redactSecrets,
  type ConnectorErrorKind,
} from '@lockstep/connectors-core';

export type ServerFlavor = 'mariadb' | 'mysql';

/** The fields of a mysql2 error (server errors have errno and sqlState; client / network errors a code). */
export interface DriverErrorShape {
  code?: string;
  errno?: number;
  sqlState?: string;
  sqlMessage?: string;
  message: string;
}

/** Driver `code` -> kind. Server codes listed here have the same number on MySQL and MariaDB (< 1900). */
export const ERROR_KIND_BY_CODE: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  // Credentials rejected
  ER_ACCESS_DENIED_ERROR: 'auth', // 1045
  ER_ACCESS_DENIED_NO_PASSWORD_ERROR: 'auth', // 1698
  ER_HOST_NOT_PRIVILEGED: 'auth', // 1130 "Host ... is not allowed to connect"
  ER_HOST_IS_BLOCKED: 'auth', // 1129
  ER_PASSWORD_NO_MATCH: 'auth', // 1133
  ER_MUST_CHANGE_PASSWORD_LOGIN: 'auth', // 1862
  ER_NOT_SUPPORTED_AUTH_MODE: 'unsupported', // 1251
  HANDSHAKE_NO_SSL_SUPPORT: 'unsupported',
  // Signed in, but not allowed to do this
  ER_DBACCESS_DENIED_ERROR: 'permission', // 1044
  ER_TABLEACCESS_DENIED_ERROR: 'permission', // 1142 (also "TRIGGER command denied")
  ER_COLUMNACCESS_DENIED_ERROR: 'permission', // 1143
  ER_SPECIFIC_ACCESS_DENIED_ERROR: 'permission', // 1227
  ER_PROCACCESS_DENIED_ERROR: 'permission', // 1370
  ER_BINLOG_CREATE_ROUTINE_NEED_SUPER: 'permission', // 1419 (CREATE TRIGGER with binary logging on)
  ER_OPTION_PREVENTS_STATEMENT: 'permission', // 1290 (--read-only)
  ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: 'permission', // 1792
  ER_NON_UPDATABLE_TABLE: 'unsupported', // 1288 (a view that cannot be written)
  ER_NON_INSERTABLE_TABLE: 'unsupported', // 1471
  ER_VIEW_MULTIUPDATE: 'unsupported', // 1393
  ER_NOT_SUPPORTED_YET: 'unsupported', // 1235
  ER_PARSE_ERROR: 'unsupported', // 1064 (the server does not understand a statement this connector sends)
  // Bad data: the row is refused, the others go on
  ER_DUP_ENTRY: 'invalid_data', // 1062
  ER_DUP_ENTRY_WITH_KEY_NAME: 'invalid_data', // 1586
  ER_DATA_TOO_LONG: 'invalid_data', // 1406
  ER_TRUNCATED_WRONG_VALUE: 'invalid_data', // 1292
  ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: 'invalid_data', // 1366
  WARN_DATA_TRUNCATED: 'invalid_data', // 1265 (ENUM / SET value not among the options)
  ER_WARN_DATA_OUT_OF_RANGE: 'invalid_data', // 1264
  ER_BAD_NULL_ERROR: 'invalid_data', // 1048
  ER_NO_DEFAULT_FOR_FIELD: 'invalid_data', // 1364
  ER_NO_REFERENCED_ROW: 'invalid_data', // 1216
  ER_NO_REFERENCED_ROW_2: 'invalid_data', // 1452
  ER_ROW_IS_REFERENCED: 'invalid_data', // 1217
  ER_ROW_IS_REFERENCED_2: 'invalid_data', // 1451
  ER_DIVISION_BY_ZERO: 'invalid_data', // 1365
  ER_INVALID_CHARACTER_STRING: 'invalid_data', // 1300
  ER_WRONG_VALUE_FOR_TYPE: 'invalid_data', // 1411
  ER_WARN_NULL_TO_NOTNULL: 'invalid_data', // 1263
  ER_SIGNAL_EXCEPTION: 'invalid_data', // 1644 (a user trigger refused the row with SIGNAL)
  ER_TABLE_EXISTS_ERROR: 'invalid_data', // 1050
  ER_DUP_FIELDNAME: 'invalid_data', // 1060
  ER_TOO_LONG_IDENT: 'invalid_data', // 1059
  ER_WRONG_COLUMN_NAME: 'invalid_data', // 1166
  ER_WRONG_TABLE_NAME: 'invalid_data', // 1103
  ER_TOO_BIG_ROWSIZE: 'invalid_data', // 1118
  ER_TOO_BIG_FIELDLENGTH: 'invalid_data', // 1074
  // Missing things
  ER_NO_SUCH_TABLE: 'not_found', // 1146
  ER_BAD_DB_ERROR: 'not_found', // 1049
  ER_BAD_TABLE_ERROR: 'not_found', // 1051
  ER_BAD_FIELD_ERROR: 'not_found', // 1054
  ER_TRG_DOES_NOT_EXIST: 'not_found', // 1360
  // Try again later
  ER_LOCK_DEADLOCK: 'transient', // 1213
  ER_LOCK_WAIT_TIMEOUT: 'transient', // 1205
  ER_CON_COUNT_ERROR: 'transient', // 1040 too many connections
  ER_TOO_MANY_USER_CONNECTIONS: 'rate_limited', // 1203
  ER_USER_LIMIT_REACHED: 'rate_limited', // 1226 (max_queries_per_hour ...)
  ER_SERVER_SHUTDOWN: 'transient', // 1053
  ER_QUERY_INTERRUPTED: 'transient', // 1317
  ER_NET_READ_ERROR: 'transient', // 1158
  ER_NET_READ_INTERRUPTED: 'transient', // 1159
  ER_NET_ERROR_ON_WRITE: 'transient', // 1160
  ER_NET_WRITE_INTERRUPTED: 'transient', // 1161
  ER_LOCK_TABLE_FULL: 'transient', // 1206
  ER_OUT_OF_RESOURCES: 'transient', // 1041
  ER_OUTOFMEMORY: 'transient', // 1037
  ER_CANT_LOCK: 'transient', // 1015
  ER_NEW_ABORTING_CONNECTION: 'transient', // 1184
  ER_UNKNOWN_COM_ERROR: 'transient', // 1047 (Galera node not ready)
  // Client side (node, mysql2)
  ECONNREFUSED: 'transient',
  ECONNRESET: 'transient',
  ECONNABORTED: 'transient',
  ETIMEDOUT: 'transient',
  EPIPE: 'transient',
  EHOSTUNREACH: 'transient',
  EHOSTDOWN: 'transient',
  ENETUNREACH: 'transient',
  ENETDOWN: 'transient',
  ENOTFOUND: 'transient',
  EAI_AGAIN: 'transient',
  PROTOCOL_CONNECTION_LOST: 'transient',
  PROTOCOL_SEQUENCE_TIMEOUT: 'transient',
  PROTOCOL_PACKETS_OUT_OF_ORDER: 'transient',
  PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR: 'transient',
  PROTOCOL_ENQUEUE_AFTER_QUIT: 'transient',
  POOL_CLOSED: 'transient',
  POOL_ENQUEUELIMIT: 'rate_limited',
});

/** Server error numbers from 1900 up, which mean different things on MariaDB and on MySQL. */
export const ERROR_KIND_BY_ERRNO: Readonly<
  Record<ServerFlavor, Readonly<Record<number, ConnectorErrorKind>>>
> = Object.freeze({
  mariadb: Object.freeze({
    1927: 'transient', // ER_CONNECTION_KILLED
    1969: 'transient', // ER_STATEMENT_TIMEOUT (max_statement_time)
    4025: 'invalid_data', // ER_CONSTRAINT_FAILED (CHECK, including JSON's json_valid())
  }),
  mysql: Object.freeze({
    3024: 'transient', // ER_QUERY_TIMEOUT (max_execution_time)
    3140: 'invalid_data', // ER_INVALID_JSON_TEXT
    3156: 'invalid_data', // ER_INVALID_JSON_VALUE_FOR_CAST
    3159: 'auth', // ER_SECURE_TRANSPORT_REQUIRED
    3819: 'invalid_data', // ER_CHECK_CONSTRAINT_VIOLATED
    3572: 'transient', // ER_LOCK_NOWAIT
    4031: 'transient', // ER_CLIENT_INTERACTION_TIMEOUT (disconnected for inactivity)
  }),
});

/** SQLSTATE class (first two characters) -> kind, when nothing more specific matched. */
export const ERROR_KIND_BY_SQLSTATE_CLASS: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  '08': 'transient', // connection exception
  '22': 'invalid_data', // data exception
  '23': 'invalid_data', // integrity constraint violation
  '28': 'auth', // invalid authorization specification
  '40': 'transient', // transaction rollback (serialization failure, deadlock)
  '42': 'permission', // MySQL puts access violations (42000) here; syntax errors are matched by code first
});

/** Duck-typed: network errors come from node's own realm, so `instanceof Error` is not reliable (Jest). */
export function isDriverError(error: unknown): error is DriverErrorShape {
  if (typeof error !== 'object' || error === null) return false;
  const candidate = error as { code?: unknown; sqlState?: unknown; message?: unknown };
  return (
    typeof candidate.message === 'string' &&
    (typeof candidate.code === 'string' || typeof candidate.sqlState === 'string')
  );
}

/** The kind for a driver error, looked up in the tables above (null when nothing matches). */
export function errorKindOf(error: DriverErrorShape, flavor?: ServerFlavor): ConnectorErrorKind | null {
  // Server errors carry a positive errno (node network errors a negative one, mysql2 client errors none).
  const serverErrno =
    error.errno !== undefined && error.errno > 0 && error.sqlState !== undefined ? error.errno : null;
  if (serverErrno !== null && serverErrno >= 1900) {
    // mysql2 names these after MySQL's numbering, so the name is only trusted through the flavour table.
    const kind = flavor ? ERROR_KIND_BY_ERRNO[flavor][serverErrno] : undefined;
    if (kind) return kind;
  } else if (error.code && Object.prototype.hasOwnProperty.call(ERROR_KIND_BY_CODE, error.code)) {
    return ERROR_KIND_BY_CODE[error.code];
  }
  if (error.sqlState && error.sqlState.length === 5) {
    const kind = ERROR_KIND_BY_SQLSTATE_CLASS[error.sqlState.slice(0, 2)];
    if (kind) return kind;
  }
  return null;
}

export interface TranslateOptions {
  flavor?: ServerFlavor;
  /** Credential values to keep out of messages. */
  secrets?: readonly string[];
  /** Prepended to the server's reason, e.g. "Could not install change capture on `orders`". */
  context?: string;
}

/**
 * A ConnectorError for any error a mysql2 call threw. ConnectorErrors pass through; a driver error maps by
 * the tables; anything else (a programming error) is returned unchanged so it surfaces as what it is.
 */
export function translateMysqlError(
  error: unknown,
  options: TranslateOptions = {},
): ConnectorError | unknown {
  if (isConnectorError(error)) return error;
  if (!isDriverError(error)) return error;
  // Unknown server errors are refused data (not retried forever); unknown client-side errors are network
  // trouble.
  const kind =
    errorKindOf(error, options.flavor) ?? (error.sqlState === undefined ? 'transient' : 'invalid_data');
  const reason = error.sqlMessage ?? error.message ?? error.code ?? 'MySQL error';
  const message = redactSecrets(
    options.context ? `${options.context}: ${reason}` : reason,
    options.secrets ?? [],
  );
  return new ConnectorError(kind, message, { appCode: appCodeOf(error, options.flavor) });
}

/** MariaDB's names for its server errors from 1900 up that the tables above know. */
const MARIADB_ERROR_NAMES: Readonly<Record<number, string>> = Object.freeze({
  1927: 'ER_CONNECTION_KILLED',
  1969: 'ER_STATEMENT_TIMEOUT',
  4025: 'ER_CONSTRAINT_FAILED',
});

/**
 * The code shown with the error (issues print it, and it is part of a record issue's cause). From 1900 up
 * mysql2's name is MySQL's, wrong on MariaDB (4025, a CHECK constraint, would read
 * `ER_INNODB_AUTOEXTEND_SIZE_OUT_OF_RANGE`): there MariaDB's own name, else the bare number.
 */
function appCodeOf(error: DriverErrorShape, flavor: ServerFlavor | undefined): string | undefined {
  const errno =
    error.errno !== undefined && error.errno > 0 && error.sqlState !== undefined ? error.errno : null;
  if (errno !== null && errno >= 1900 && flavor !== 'mysql')
    return MARIADB_ERROR_NAMES[errno] ?? String(errno);
  return error.code ?? (error.errno !== undefined ? String(error.errno) : undefined);
}
