import { ConnectorError } from '@lockstep/connectors-core';
import { pgErrorKind, translatePgError } from './errors';

describe('pgErrorKind', () => {
  it.each([
    // exact SQLSTATE codes
    ['28P01', 'auth'], // invalid_password
    ['28000', 'auth'], // invalid_authorization_specification (unknown role, pg_hba)
    ['3D000', 'auth'], // database does not exist
    ['42501', 'permission'], // insufficient_privilege
    ['25006', 'permission'], // read_only_sql_transaction
    ['42P01', 'not_found'], // undefined_table
    ['42703', 'not_found'], // undefined_column
    ['3F000', 'not_found'], // invalid_schema_name
    ['42804', 'invalid_data'], // datatype_mismatch
    ['0A000', 'unsupported'], // feature_not_supported
    ['53300', 'rate_limited'], // too_many_connections
    ['55P03', 'transient'], // lock_not_available
    ['57014', 'transient'], // query_canceled
    ['25P02', 'transient'], // in_failed_sql_transaction
    // classes
    ['22P02', 'invalid_data'], // invalid_text_representation
    ['22001', 'invalid_data'], // string_data_right_truncation
    ['22003', 'invalid_data'], // numeric_value_out_of_range
    ['22007', 'invalid_data'], // invalid_datetime_format
    ['23505', 'invalid_data'], // unique_violation
    ['23502', 'invalid_data'], // not_null_violation
    ['23503', 'invalid_data'], // foreign_key_violation
    ['23514', 'invalid_data'], // check_violation
    ['40001', 'transient'], // serialization_failure
    ['40P01', 'transient'], // deadlock_detected
    ['08006', 'transient'], // connection_failure
    ['08001', 'transient'], // sqlclient_unable_to_establish_sqlconnection
    ['53100', 'transient'], // disk_full
    ['57P01', 'transient'], // admin_shutdown
    ['57P03', 'transient'], // cannot_connect_now
    ['42601', 'unsupported'], // syntax_error
    ['42883', 'unsupported'], // undefined_function
    ['54000', 'invalid_data'], // program_limit_exceeded
    ['P0001', 'invalid_data'], // raise_exception from a user trigger
    ['XX000', 'transient'], // internal_error
    ['HV000', 'transient'], // unknown class: retry
    // network and TLS errors
    ['ECONNREFUSED', 'transient'],
    ['ECONNRESET', 'transient'],
    ['ETIMEDOUT', 'transient'],
    ['ENOTFOUND', 'transient'],
    ['EHOSTUNREACH', 'transient'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'transient'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'transient'],
    [undefined, 'transient'],
  ])('%s -> %s', (code, kind) => {
    expect(pgErrorKind(code)).toBe(kind);
  });
});

describe('translatePgError', () => {
  it('keeps the server reason and detail, and the SQLSTATE as appCode', () => {
    const error = translatePgError(
      Object.assign(new Error('duplicate key value violates unique constraint "t_pkey"'), {
        code: '23505',
        detail: 'Key (id)=(1) already exists.',
      }),
    );
    expect(error).toBeInstanceOf(ConnectorError);
    expect(error).toMatchObject({ kind: 'invalid_data', appCode: '23505', retryable: false });
    expect(error.message).toBe(
      'duplicate key value violates unique constraint "t_pkey" (Key (id)=(1) already exists.)',
    );
  });

  it('prefixes the context', () => {
    const error = translatePgError(Object.assign(new Error('must be owner of table t'), { code: '42501' }), {
      context: 'Could not prepare table "t"',
    });
    expect(error).toMatchObject({
      kind: 'permission',
      message: 'Could not prepare table "t": must be owner of table t',
    });
  });

  it.each([
    [
      'a message echoing the password',
      'password "hunter22" is wrong',
      ['hunter22'],
      'password "***" is wrong',
    ],
    [
      'a URL with credentials',
      'cannot parse postgres://bob:hunter22@db/x',
      [],
      'cannot parse postgres://bob:***@db/x',
    ],
    [
      'a message mentioning the connection string',
      'invalid connectionString postgres://x',
      [],
      'the connection string could not be used',
    ],
  ])('never echoes secrets: %s', (_case, message, secrets, expected) => {
    expect(translatePgError(new Error(message), { secrets }).message).toBe(expected);
  });

  it('passes a ConnectorError through unchanged', () => {
    const original = new ConnectorError('permission', 'refused');
    expect(translatePgError(original)).toBe(original);
  });

  it('handles something that is not an error', () => {
    expect(translatePgError('boom')).toMatchObject({ kind: 'transient', message: 'unknown database error' });
  });
});
