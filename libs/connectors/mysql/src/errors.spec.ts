import { ConnectorError } from '@lockstep/connectors-core';
import {
  ERROR_KIND_BY_CODE,
  errorKindOf,
  translateMysqlError,
  type DriverErrorShape,
  type ServerFlavor,
} from './errors';

/** A driver error as mysql2 raises it (server errors carry errno and sqlState; network ones a negative errno). */
function driverError(
  code: string,
  errno?: number,
  sqlState?: string,
  message = `${code} happened`,
): DriverErrorShape {
  return Object.assign(new Error(message), {
    code,
    errno,
    sqlState,
    sqlMessage: sqlState ? message : undefined,
  });
}

describe('translateMysqlError', () => {
  it.each<[string, DriverErrorShape, ServerFlavor | undefined, string]>([
    ['access denied', driverError('ER_ACCESS_DENIED_ERROR', 1045, '28000'), 'mariadb', 'auth'],
    [
      'access denied without password',
      driverError('ER_ACCESS_DENIED_NO_PASSWORD_ERROR', 1698, '28000'),
      undefined,
      'auth',
    ],
    ['host not allowed', driverError('ER_HOST_NOT_PRIVILEGED', 1130, 'HY000'), undefined, 'auth'],
    [
      'no access to the database',
      driverError('ER_DBACCESS_DENIED_ERROR', 1044, '42000'),
      'mariadb',
      'permission',
    ],
    [
      'TRIGGER command denied',
      driverError('ER_TABLEACCESS_DENIED_ERROR', 1142, '42000'),
      'mariadb',
      'permission',
    ],
    [
      'column access denied',
      driverError('ER_COLUMNACCESS_DENIED_ERROR', 1143, '42000'),
      'mysql',
      'permission',
    ],
    [
      'trigger needs SUPER with binlog',
      driverError('ER_BINLOG_CREATE_ROUTINE_NEED_SUPER', 1419, 'HY000'),
      'mysql',
      'permission',
    ],
    ['read-only server', driverError('ER_OPTION_PREVENTS_STATEMENT', 1290, 'HY000'), 'mariadb', 'permission'],
    ['duplicate key', driverError('ER_DUP_ENTRY', 1062, '23000'), 'mariadb', 'invalid_data'],
    ['too long', driverError('ER_DATA_TOO_LONG', 1406, '22001'), 'mariadb', 'invalid_data'],
    ['bad datetime', driverError('ER_TRUNCATED_WRONG_VALUE', 1292, '22007'), 'mariadb', 'invalid_data'],
    [
      'bad integer',
      driverError('ER_TRUNCATED_WRONG_VALUE_FOR_FIELD', 1366, '22007'),
      'mariadb',
      'invalid_data',
    ],
    [
      'enum value not an option',
      driverError('WARN_DATA_TRUNCATED', 1265, '01000'),
      'mariadb',
      'invalid_data',
    ],
    ['null into NOT NULL', driverError('ER_BAD_NULL_ERROR', 1048, '23000'), 'mariadb', 'invalid_data'],
    [
      'missing value without default',
      driverError('ER_NO_DEFAULT_FOR_FIELD', 1364, 'HY000'),
      'mariadb',
      'invalid_data',
    ],
    [
      'foreign key target missing',
      driverError('ER_NO_REFERENCED_ROW_2', 1452, '23000'),
      'mariadb',
      'invalid_data',
    ],
    ['row still referenced', driverError('ER_ROW_IS_REFERENCED_2', 1451, '23000'), 'mariadb', 'invalid_data'],
    ['out of range', driverError('ER_WARN_DATA_OUT_OF_RANGE', 1264, '22003'), 'mariadb', 'invalid_data'],
    [
      'MariaDB CHECK (json_valid) failed, named by mysql2 after MySQL 4025',
      driverError('ER_INNODB_AUTOEXTEND_SIZE_OUT_OF_RANGE', 4025, '23000'),
      'mariadb',
      'invalid_data',
    ],
    [
      'MySQL CHECK failed',
      driverError('ER_CHECK_CONSTRAINT_VIOLATED', 3819, 'HY000'),
      'mysql',
      'invalid_data',
    ],
    ['MySQL invalid JSON', driverError('ER_INVALID_JSON_TEXT', 3140, '22032'), 'mysql', 'invalid_data'],
    ['MySQL statement timeout', driverError('ER_QUERY_TIMEOUT', 3024, 'HY000'), 'mysql', 'transient'],
    ['MariaDB statement timeout', driverError('ER_STATEMENT_TIMEOUT', 1969, '70100'), 'mariadb', 'transient'],
    [
      'errno >= 1900 with unknown flavour falls back to SQLSTATE',
      driverError('ER_INNODB_AUTOEXTEND_SIZE_OUT_OF_RANGE', 4025, '23000'),
      undefined,
      'invalid_data',
    ],
    ['deadlock', driverError('ER_LOCK_DEADLOCK', 1213, '40001'), 'mariadb', 'transient'],
    ['lock wait timeout', driverError('ER_LOCK_WAIT_TIMEOUT', 1205, 'HY000'), 'mariadb', 'transient'],
    ['too many connections', driverError('ER_CON_COUNT_ERROR', 1040, '08004'), 'mariadb', 'transient'],
    [
      'per-user connection limit',
      driverError('ER_TOO_MANY_USER_CONNECTIONS', 1203, '42000'),
      'mariadb',
      'rate_limited',
    ],
    ['server shutting down', driverError('ER_SERVER_SHUTDOWN', 1053, '08S01'), 'mariadb', 'transient'],
    ['connection refused', driverError('ECONNREFUSED', -111), undefined, 'transient'],
    ['connection reset', driverError('ECONNRESET', -104), undefined, 'transient'],
    ['timed out', driverError('ETIMEDOUT'), undefined, 'transient'],
    ['host name does not resolve', driverError('ENOTFOUND', -3008), undefined, 'transient'],
    ['connection lost', driverError('PROTOCOL_CONNECTION_LOST'), undefined, 'transient'],
    ['no such table', driverError('ER_NO_SUCH_TABLE', 1146, '42S02'), 'mariadb', 'not_found'],
    ['no such database', driverError('ER_BAD_DB_ERROR', 1049, '42000'), 'mariadb', 'not_found'],
    ['no such column', driverError('ER_BAD_FIELD_ERROR', 1054, '42S22'), 'mariadb', 'not_found'],
    [
      'a view that cannot be written',
      driverError('ER_NON_UPDATABLE_TABLE', 1288, 'HY000'),
      'mariadb',
      'unsupported',
    ],
    [
      'unknown server error with a data SQLSTATE',
      driverError('ER_SOMETHING_NEW', 1999, '22999'),
      'mariadb',
      'invalid_data',
    ],
    [
      'unknown server error with a generic SQLSTATE',
      driverError('ER_SOMETHING_NEW', 1999, 'HY000'),
      'mariadb',
      'invalid_data',
    ],
    ['unknown client error', driverError('SOMETHING_LOCAL'), undefined, 'transient'],
  ])('%s -> kind', (_what, error, flavor, kind) => {
    const translated = translateMysqlError(error, { flavor });
    expect(translated).toBeInstanceOf(ConnectorError);
    expect((translated as ConnectorError).kind).toBe(kind);
    // From 1900 up only MySQL's numbering matches mysql2's names (see the test below).
    if (!(error.errno !== undefined && error.errno >= 1900 && flavor !== 'mysql'))
      expect((translated as ConnectorError).appCode).toBe(error.code);
  });

  it("names MariaDB's errors from 1900 up by MariaDB's names (or the number), not mysql2's MySQL names", () => {
    const appCode = (error: ReturnType<typeof driverError>, flavor?: 'mariadb' | 'mysql') =>
      (translateMysqlError(error, { flavor }) as ConnectorError).appCode;
    const check = driverError('ER_INNODB_AUTOEXTEND_SIZE_OUT_OF_RANGE', 4025, '23000');
    expect(appCode(check, 'mariadb')).toBe('ER_CONSTRAINT_FAILED');
    expect(appCode(check)).toBe('ER_CONSTRAINT_FAILED');
    expect(appCode(driverError('ER_SOMETHING_NEW', 1999, 'HY000'), 'mariadb')).toBe('1999');
    expect(appCode(driverError('ER_CHECK_CONSTRAINT_VIOLATED', 3819, 'HY000'), 'mysql')).toBe(
      'ER_CHECK_CONSTRAINT_VIOLATED',
    );
    expect(appCode(driverError('ER_LOCK_DEADLOCK', 1213, '40001'), 'mariadb')).toBe('ER_LOCK_DEADLOCK');
  });

  it('keeps the server reason as the message, with context', () => {
    const error = driverError(
      'ER_TABLEACCESS_DENIED_ERROR',
      1142,
      '42000',
      "TRIGGER command denied to user 'u'@'localhost' for table `db`.`t`",
    );
    const translated = translateMysqlError(error, {
      context: 'Table setup failed for "t"',
    }) as ConnectorError;
    expect(translated.message).toBe(
      "Table setup failed for \"t\": TRIGGER command denied to user 'u'@'localhost' for table `db`.`t`",
    );
    expect(translated.retryable).toBe(false);
  });

  it('never lets a password or connection string through', () => {
    const error = driverError(
      'ECONNREFUSED',
      -111,
      undefined,
      'connect failed for mysql://app:s3cret-pw@db.example:3306/x (s3cret-pw)',
    );
    const translated = translateMysqlError(error, { secrets: ['s3cret-pw'] }) as ConnectorError;
    expect(translated.message).not.toContain('s3cret-pw');
    expect(translated.message).toContain('***');
  });

  it('passes ConnectorErrors and programming errors through unchanged', () => {
    const connectorError = new ConnectorError('not_found', 'gone');
    const bug = new TypeError('undefined is not a function');
    expect(translateMysqlError(connectorError)).toBe(connectorError);
    expect(translateMysqlError(bug)).toBe(bug);
  });

  it('maps every code of the code table to a kind the engine knows', () => {
    const kinds = new Set([
      'auth',
      'permission',
      'not_found',
      'rate_limited',
      'transient',
      'invalid_data',
      'unsupported',
    ]);
    for (const [code, kind] of Object.entries(ERROR_KIND_BY_CODE)) {
      expect({ code, known: kinds.has(kind) }).toEqual({ code, known: true });
    }
    expect(errorKindOf(driverError('ER_DUP_ENTRY', 1062, '23000'))).toBe('invalid_data');
  });
});
