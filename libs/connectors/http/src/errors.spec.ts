import { ConnectorError } from '@lockstep/connectors-core';
import {
  type AppErrorTable,
  HTTP_STATUS_KINDS,
  NETWORK_CODES,
  OAUTH_ERRORS,
  translateHttpFailure,
  translateThrown,
} from './errors';

const APP: AppErrorTable = {
  kinds: { AUTHENTICATION_REQUIRED: 'auth', ROW_DOES_NOT_EXIST: 'not_found' },
  codeOf: (body) => (body as { error?: { type?: string } })?.error?.type,
  messageOf: (body) => (body as { error?: { message?: string } })?.error?.message,
};

describe('the HTTP error table', () => {
  it.each(Object.entries(HTTP_STATUS_KINDS))('status %s is %s', (status, kind) => {
    expect(translateHttpFailure({ status: Number(status), body: '' }).kind).toBe(kind);
  });

  it.each(Object.entries(NETWORK_CODES))('network code %s is %s', (code, kind) => {
    expect(translateHttpFailure({ status: null, code, reason: 'x' }).kind).toBe(kind);
  });

  it.each([
    [418, 'invalid_data'],
    [451, 'invalid_data'],
    [507, 'transient'],
    [599, 'transient'],
  ])('an unlisted status %s is %s', (status, kind) => {
    expect(translateHttpFailure({ status, body: '' }).kind).toBe(kind);
  });

  it('an unlisted network code, or none, is transient', () => {
    expect(translateHttpFailure({ status: null, code: 'EWHATEVER', reason: 'x' }).kind).toBe('transient');
    expect(translateThrown(new Error('socket hang up')).kind).toBe('transient');
  });

  it.each([
    [
      { error: { type: 'AUTHENTICATION_REQUIRED', message: 'no token' } },
      422,
      'auth',
      'AUTHENTICATION_REQUIRED',
    ],
    [{ error: { type: 'ROW_DOES_NOT_EXIST', message: 'gone' } }, 422, 'not_found', 'ROW_DOES_NOT_EXIST'],
    [{ error: { type: 'SOMETHING_NEW', message: '?' } }, 422, 'invalid_data', 'SOMETHING_NEW'],
    [{ unexpected: true }, 503, 'transient', '503'],
  ])('the app code comes first: %j with %s is %s (%s)', (body, status, kind, appCode) => {
    const error = translateHttpFailure({ status, body }, { app: APP });
    expect([error.kind, error.appCode]).toEqual([kind, appCode]);
  });

  it.each(Object.entries(OAUTH_ERRORS.kinds))(
    'the OAuth error %s is %s, with its description',
    (code, kind) => {
      const error = translateHttpFailure(
        { status: 400, body: { error: code, error_description: 'why' } },
        { app: OAUTH_ERRORS },
      );
      expect([error.kind, error.appCode, error.message]).toEqual([kind, code, `HTTP 400 (${code}: why)`]);
    },
  );

  it("prefixes the call's context, keeps the app's reason and redacts secrets", () => {
    const error = translateHttpFailure(
      {
        status: 401,
        body: { error: { type: 'AUTHENTICATION_REQUIRED', message: 'token patSECRET123 is invalid' } },
      },
      { app: APP, context: 'Listing bases', secrets: ['patSECRET123'] },
    );
    expect(error.message).toBe('Listing bases: HTTP 401 (token *** is invalid)');
    expect(translateThrown(new Error('connect to https://u:hunter2@host failed')).message).not.toContain(
      'hunter2',
    );
  });

  it('a rate limit carries the Retry-After hint; a ConnectorError passes through unchanged', () => {
    expect(translateHttpFailure({ status: 429, body: '', retryAfterSeconds: 30 }).retryAfterSeconds).toBe(30);
    const original = new ConnectorError('permission', 'refused');
    expect(translateThrown(original)).toBe(original);
  });
});
