/**
 * The one table of Airtable's own error codes (https://airtable.com/developers/web/api/errors): the `type` of
 * its error body `{ error: { type, message } }` (some routes answer `{ error: "NOT_FOUND" }`) -> the SDK's
 * kind. The HTTP status and network codes are the shared layer's table (`@lockstep/connectors-http`); a code
 * this table does not list falls back to its status there (a 4xx is `invalid_data`, a 5xx `transient`).
 */
import { ConnectorError, type ConnectorErrorKind } from '@lockstep/connectors-core';
import { type AppErrorTable, translateThrown } from '@lockstep/connectors-http';

export const AIRTABLE_ERROR_KINDS: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  AUTHENTICATION_REQUIRED: 'auth',
  INVALID_AUTHORIZATION: 'auth',
  // A missing scope and a base the token cannot see are answered alike; the connection tells them apart.
  INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND: 'permission',
  INVALID_PERMISSIONS: 'permission',
  PUBLIC_API_BILLING_LIMIT_EXCEEDED: 'permission',
  NOT_FOUND: 'not_found',
  TABLE_NOT_FOUND: 'not_found',
  MODEL_ID_NOT_FOUND: 'not_found',
  VIEW_NAME_NOT_FOUND: 'not_found',
  INVALID_VALUE_FOR_COLUMN: 'invalid_data',
  UNKNOWN_FIELD_NAME: 'invalid_data',
  ROW_DOES_NOT_EXIST: 'invalid_data',
  INVALID_MULTIPLE_CHOICE_OPTIONS: 'invalid_data',
  INVALID_RECORDS: 'invalid_data',
  INVALID_REQUEST_UNKNOWN: 'invalid_data',
  INVALID_REQUEST_MISSING_FIELDS: 'invalid_data',
  INVALID_FILTER_BY_FORMULA: 'invalid_data',
  INVALID_FIELD_TYPE: 'unsupported',
  INVALID_FIELD_TYPE_OPTIONS_FOR_CREATE: 'invalid_data',
  DUPLICATE_TABLE_NAME: 'invalid_data',
  DUPLICATE_OR_EMPTY_FIELD_NAME: 'invalid_data',
  REQUEST_TOO_LARGE: 'invalid_data',
  // An offset token Airtable no longer keeps: paging must start again, which the engine's next scan does.
  LIST_RECORDS_ITERATOR_NOT_AVAILABLE: 'transient',
  RATE_LIMIT_REACHED: 'rate_limited',
  SERVER_ERROR: 'transient',
  SERVICE_UNAVAILABLE: 'transient',
});

/** The `error` member of an error body, when the body is an object. */
function errorOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
}

export const AIRTABLE_ERRORS: AppErrorTable = Object.freeze({
  kinds: AIRTABLE_ERROR_KINDS,
  codeOf: (body: unknown) => {
    const error = errorOf(body);
    if (typeof error === 'string') return error;
    const type = (error as { type?: unknown } | undefined)?.type;
    return typeof type === 'string' ? type : undefined;
  },
  messageOf: (body: unknown) => {
    const error = errorOf(body);
    if (typeof error === 'string') return error;
    const { type, message } = (error ?? {}) as { type?: unknown; message?: unknown };
    if (typeof message === 'string') return typeof type === 'string' ? `${type}: ${message}` : message;
    return typeof type === 'string' ? type : undefined;
  },
});

/** Anything a call threw, as a `ConnectorError` (the client's errors pass through), redacted. */
export function translateAirtableError(
  error: unknown,
  options: { secrets: Iterable<string>; context?: string },
): ConnectorError {
  if (error instanceof ConnectorError) return error;
  return translateThrown(error, { context: options.context, secrets: options.secrets, app: AIRTABLE_ERRORS });
}
