/**
 * The one table of the shared layer: an HTTP status or a network error code -> `ConnectorError` kind. An app
 * connector adds its own error codes (`AppErrorTable`), looked up first: the most specific code wins. A
 * status this table does not list is `invalid_data` when it is a 4xx (the app refused the request) and
 * `transient` otherwise (a later attempt may succeed); a network code it does not list is `transient`.
 */
import {
  ConnectorError,
  type ConnectorErrorKind,
  NODE_NETWORK_CODES,
  redactSecrets,
} from '@lockstep/connectors-core';

export const HTTP_STATUS_KINDS: Readonly<Record<number, ConnectorErrorKind>> = Object.freeze({
  400: 'invalid_data',
  401: 'auth',
  402: 'permission', // the account's plan does not allow it
  403: 'permission',
  404: 'not_found',
  405: 'unsupported',
  408: 'transient',
  409: 'transient', // a concurrent change on the app's side
  410: 'not_found',
  413: 'invalid_data',
  415: 'unsupported',
  422: 'invalid_data',
  423: 'transient',
  425: 'transient',
  429: 'rate_limited',
  500: 'transient',
  501: 'unsupported',
  502: 'transient',
  503: 'transient',
  504: 'transient',
});

/** Node.js network and TLS errors, a stream closed early, and an answer over the size limit. */
export const NETWORK_CODES: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  ...NODE_NETWORK_CODES,
  ECONNABORTED: 'transient',
  ERR_STREAM_PREMATURE_CLOSE: 'transient',
  RESPONSE_TOO_LARGE: 'unsupported',
});

/**
 * An app's own error codes (Airtable's `error.type`), and how to read code and reason from its error body.
 */
export interface AppErrorTable {
  kinds: Readonly<Record<string, ConnectorErrorKind>>;
  /** The app's error code in a parsed error body (JSON when it parsed, else the text). */
  codeOf(body: unknown): string | undefined;
  /** The app's reason in words, shown to a person after redaction. */
  messageOf(body: unknown): string | undefined;
}

/**
 * The error body every OAuth 2 token endpoint answers with (RFC 6749 section 5.2): `{ error,
 * error_description }`. Pass it as `appErrors` to the client that refreshes tokens: a refused grant is `auth`
 * (the person must sign in again), and the reason names the OAuth error.
 */
export const OAUTH_ERRORS: AppErrorTable = Object.freeze({
  kinds: Object.freeze({
    invalid_grant: 'auth',
    invalid_client: 'auth',
    unauthorized_client: 'auth',
    invalid_scope: 'permission',
    invalid_request: 'invalid_data',
    unsupported_grant_type: 'unsupported',
  } satisfies Record<string, ConnectorErrorKind>),
  codeOf: (body: unknown) => {
    const error = (body as { error?: unknown } | null)?.error;
    return typeof error === 'string' ? error : undefined;
  },
  messageOf: (body: unknown) => {
    const { error, error_description: description } = (body ?? {}) as {
      error?: unknown;
      error_description?: unknown;
    };
    if (typeof error !== 'string') return undefined;
    return typeof description === 'string' ? `${error}: ${description}` : error;
  },
});

/** What went wrong with one request: an answer with a failing status, or no answer (a network error). */
export type HttpFailure =
  | { status: number; body: unknown; retryAfterSeconds?: number }
  | { status: null; code: string | undefined; reason: string };

export interface TranslateOptions {
  /** What the call was doing (`Listing bases`); prefixes the message. */
  context?: string;
  secrets?: Iterable<string>;
  app?: AppErrorTable;
}

export function statusKind(status: number): ConnectorErrorKind {
  return HTTP_STATUS_KINDS[status] ?? (status >= 400 && status < 500 ? 'invalid_data' : 'transient');
}

export function networkKind(code: string | undefined): ConnectorErrorKind {
  return (code ? NETWORK_CODES[code] : undefined) ?? 'transient';
}

/** A failure as a `ConnectorError`: the app's code first, then the status or network code, redacted. */
export function translateHttpFailure(failure: HttpFailure, options: TranslateOptions = {}): ConnectorError {
  let kind: ConnectorErrorKind;
  let appCode: string | undefined;
  let reason: string;
  if (failure.status === null) {
    kind = networkKind(failure.code);
    appCode = failure.code;
    reason = failure.reason;
  } else {
    const code = options.app?.codeOf(failure.body);
    kind = (code ? options.app?.kinds[code] : undefined) ?? statusKind(failure.status);
    appCode = code ?? String(failure.status);
    reason = `HTTP ${failure.status}${describeBody(failure.body, options.app)}`;
  }
  const text = options.context ? `${options.context}: ${reason}` : reason;
  const retryAfterSeconds =
    failure.status !== null && kind === 'rate_limited' ? failure.retryAfterSeconds : undefined;
  return new ConnectorError(kind, redactSecrets(text, options.secrets ?? []), { appCode, retryAfterSeconds });
}

const MAX_REASON = 300;

function describeBody(body: unknown, app: AppErrorTable | undefined): string {
  const reason = app?.messageOf(body) ?? (typeof body === 'string' ? body.trim() : undefined);
  if (!reason) return '';
  return ` (${reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}...` : reason})`;
}

/** Anything else a request threw: passes a `ConnectorError` through, otherwise a network failure. */
export function translateThrown(error: unknown, options: TranslateOptions = {}): ConnectorError {
  if (error instanceof ConnectorError) return error;
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
  const reason = error instanceof Error && error.message !== '' ? error.message : 'the request failed';
  return translateHttpFailure({ status: null, code, reason }, options);
}
