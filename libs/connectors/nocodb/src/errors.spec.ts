/** NocoDB's error table (https://nocodb.com/docs/apis/errors) and redaction, without a server. */
import { NOCODB_ERRORS, translateNocodbError } from './errors';

describe('nocodb errors', () => {
  it.each([
    [{ error: 'ERR_AUTHENTICATION_REQUIRED', message: 'Invalid token' }, 'auth'],
    [{ error: 'ERR_TABLE_NOT_FOUND', message: "Table 'x' not found" }, 'not_found'],
    [{ error: 'ERR_RECORD_NOT_FOUND', message: "Record '1' not found" }, 'not_found'],
    [{ error: 'ERR_INVALID_VALUE_FOR_FIELD', message: 'bad' }, 'invalid_data'],
    [{ error: 'ERR_MAX_PAYLOAD_LIMIT_EXCEEDED', message: 'more than 100' }, 'invalid_data'],
    [{ error: 'ERR_FORBIDDEN', message: 'no' }, 'permission'],
    [{ error: 'ERR_INTERNAL_SERVER', message: 'oops' }, 'transient'],
  ])('maps %j to %s', (body, kind) => {
    expect(NOCODB_ERRORS.kinds[NOCODB_ERRORS.codeOf(body)!]).toBe(kind);
    expect(NOCODB_ERRORS.messageOf(body)).toContain(body.message);
  });

  it('reads the older { msg } bodies', () => {
    expect(NOCODB_ERRORS.codeOf({ msg: 'Invalid option(s)' })).toBeUndefined();
    expect(NOCODB_ERRORS.messageOf({ msg: 'Invalid option(s)' })).toBe('Invalid option(s)');
  });

  it('keeps a ConnectorError and redacts the token from anything else', () => {
    const error = translateNocodbError(new Error('failed with token abc123secret'), {
      secrets: ['abc123secret'],
      context: 'Reading records',
    });
    expect(error.message).not.toContain('abc123secret');
  });
});
