export { postgresConnector } from './declaration';
export { translatePgError, pgErrorKind, SQLSTATE_CODES, SQLSTATE_CLASSES, NETWORK_CODES } from './errors';
export { PostgresConnection } from './connection';
