import { ConnectorError } from '@lockstep/connectors-core';
import { translateHttpFailure } from '@lockstep/connectors-http';
import { AIRTABLE_ERRORS, translateAirtableError } from './errors';

/** An Airtable error answer as the shared layer sees it, translated with this connector's table. */
function answer(status: number, body: unknown) {
  return translateHttpFailure({ status, body }, { app: AIRTABLE_ERRORS, secrets: ['patSECRET.123'] });
}

describe('Airtable error table', () => {
  it.each([
    [401, 'AUTHENTICATION_REQUIRED', 'auth'],
    [403, 'INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND', 'permission'],
    [403, 'INVALID_PERMISSIONS', 'permission'],
    [404, 'NOT_FOUND', 'not_found'],
    [404, 'TABLE_NOT_FOUND', 'not_found'],
    [404, 'MODEL_ID_NOT_FOUND', 'not_found'],
    [422, 'VIEW_NAME_NOT_FOUND', 'not_found'],
    [422, 'INVALID_VALUE_FOR_COLUMN', 'invalid_data'],
    [422, 'UNKNOWN_FIELD_NAME', 'invalid_data'],
    [422, 'ROW_DOES_NOT_EXIST', 'invalid_data'],
    [422, 'INVALID_MULTIPLE_CHOICE_OPTIONS', 'invalid_data'],
    [422, 'INVALID_RECORDS', 'invalid_data'],
    [422, 'INVALID_REQUEST_UNKNOWN', 'invalid_data'],
    [422, 'INVALID_FILTER_BY_FORMULA', 'invalid_data'],
    [422, 'INVALID_FIELD_TYPE', 'unsupported'],
    [422, 'INVALID_FIELD_TYPE_OPTIONS_FOR_CREATE', 'invalid_data'],
    [422, 'DUPLICATE_TABLE_NAME', 'invalid_data'],
    [422, 'DUPLICATE_OR_EMPTY_FIELD_NAME', 'invalid_data'],
    [422, 'LIST_RECORDS_ITERATOR_NOT_AVAILABLE', 'transient'],
    [413, 'REQUEST_TOO_LARGE', 'invalid_data'],
    [429, 'RATE_LIMIT_REACHED', 'rate_limited'],
    [429, 'PUBLIC_API_BILLING_LIMIT_EXCEEDED', 'permission'],
    [500, 'SERVER_ERROR', 'transient'],
    [503, 'SERVICE_UNAVAILABLE', 'transient'],
  ])('HTTP %i %s is %s', (status, type, kind) => {
    const error = answer(status, { error: { type, message: 'the reason' } });
    expect([error.kind, error.appCode]).toEqual([kind, type]);
    expect(error.message).toContain(`${type}: the reason`);
  });

  it.each([
    [413, 'invalid_data'],
    [422, 'invalid_data'],
    [502, 'transient'],
    [503, 'transient'],
    [504, 'transient'],
  ])('a code it does not list falls back to the status: %i is %s', (status, kind) => {
    expect(answer(status, { error: { type: 'SOMETHING_NEW', message: 'x' } }).kind).toBe(kind);
    expect(answer(status, '<html>Bad gateway</html>').kind).toBe(kind);
  });

  it('reads the short error body of some routes ({ error: "NOT_FOUND" })', () => {
    const error = answer(404, { error: 'NOT_FOUND' });
    expect([error.kind, error.appCode]).toEqual(['not_found', 'NOT_FOUND']);
  });

  it('never carries the token, and passes a ConnectorError through unchanged', () => {
    const error = answer(422, {
      error: { type: 'INVALID_VALUE_FOR_COLUMN', message: 'token patSECRET.123 was bad' },
    });
    expect(error.message).not.toContain('patSECRET.123');
    const own = new ConnectorError('changed', 'edited since');
    expect(translateAirtableError(own, { secrets: [] })).toBe(own);
    const network = translateAirtableError(
      Object.assign(new Error('reset by patSECRET.123'), { code: 'ECONNRESET' }),
      {
        secrets: ['patSECRET.123'],
        context: 'Reading records',
      },
    );
    expect(network.kind).toBe('transient');
    expect(network.message).not.toContain('patSECRET.123');
  });
});
