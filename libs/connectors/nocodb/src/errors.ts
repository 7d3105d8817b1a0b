/**
 * The one table of NocoDB's own error codes (https://nocodb.com/docs/apis/errors; the codes are nocodb-sdk's
 * `NcErrorType`): the `error` of its body `{ error, message }` (older routes answer `{ msg }`) -> the SDK's
 * kind. The HTTP status and network codes are the shared layer's table (`@lockstep/connectors-http`); a code
 * this table does not list falls back to its status there (a 4xx is `invalid_data`, a 5xx `transient`).
 */
import { ConnectorError, type ConnectorErrorKind } from '@lockstep/connectors-core';
import { type AppErrorTable, translateThrown } from '@lockstep/connectors-http';

export const NOCODB_ERROR_KINDS: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  ERR_AUTHENTICATION_REQUIRED: 'auth',
  ERR_SSO_LOGIN_REQUIRED: 'auth',
  ERR_SSO_GENERATED_TOKEN_REQUIRED: 'auth',
  ERR_FORBIDDEN: 'permission',
  ERR_PERMISSION_DENIED: 'permission',
  ERR_API_TOKEN_NOT_ALLOWED: 'permission',
  ERR_PLAN_LIMIT_EXCEEDED: 'permission',
  ERR_FEATURE_NOT_SUPPORTED: 'unsupported',
  ERR_NOT_IMPLEMENTED: 'unsupported',
  ERR_UNSUPPORTED_RELATION: 'unsupported',
  ERR_WORKSPACE_NOT_FOUND: 'not_found',
  ERR_BASE_NOT_FOUND: 'not_found',
  ERR_SOURCE_NOT_FOUND: 'not_found',
  ERR_TABLE_NOT_FOUND: 'not_found',
  ERR_VIEW_NOT_FOUND: 'not_found',
  ERR_FIELD_NOT_FOUND: 'not_found',
  ERR_RECORD_NOT_FOUND: 'not_found',
  ERR_GENERIC_NOT_FOUND: 'not_found',
  ERR_HOOK_NOT_FOUND: 'not_found',
  ERR_RELATION_FIELD_NOT_FOUND: 'not_found',
  ERR_REQUIRED_FIELD_MISSING: 'invalid_data',
  ERR_DUPLICATE_RECORD: 'invalid_data',
  ERR_DUPLICATE_IN_ALIAS: 'invalid_data',
  ERR_INVALID_VALUE_FOR_FIELD: 'invalid_data',
  ERR_INVALID_JSON: 'invalid_data',
  ERR_INVALID_PK_VALUE: 'invalid_data',
  ERR_INVALID_ATTACHMENT_JSON: 'invalid_data',
  ERR_INVALID_REQUEST_BODY: 'invalid_data',
  ERR_INVALID_FILTER: 'invalid_data',
  ERR_INVALID_OFFSET_VALUE: 'invalid_data',
  ERR_INVALID_LIMIT_VALUE: 'invalid_data',
  ERR_MAX_PAYLOAD_LIMIT_EXCEEDED: 'invalid_data',
  ERR_DATABASE_OP_FAILED: 'invalid_data',
  ERR_COLUMN_OP_FAILED: 'invalid_data',
  ERR_TABLE_OP_FAILED: 'invalid_data',
  ERR_WEBHOOK_URL_INVALID: 'invalid_data',
  ERR_INTERNAL_SERVER: 'transient',
  ERR_UNKNOWN: 'transient',
  ERR_EXTERNAL_DATA_SOURCE_TIMEOUT: 'transient',
});

function bodyOf(body: unknown): { error?: unknown; message?: unknown; msg?: unknown } {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
}

export const NOCODB_ERRORS: AppErrorTable = Object.freeze({
  kinds: NOCODB_ERROR_KINDS,
  codeOf: (body: unknown) => {
    const { error } = bodyOf(body);
    return typeof error === 'string' ? error : undefined;
  },
  messageOf: (body: unknown) => {
    const { error, message, msg } = bodyOf(body);
    const text = typeof message === 'string' ? message : typeof msg === 'string' ? msg : undefined;
    if (text && typeof error === 'string') return `${error}: ${text}`;
    return text ?? (typeof error === 'string' ? error : undefined);
  },
});

/** Anything a call threw, as a `ConnectorError` (the client's errors pass through), redacted. */
export function translateNocodbError(
  error: unknown,
  options: { secrets: Iterable<string>; context?: string },
): ConnectorError {
  if (error instanceof ConnectorError) return error;
  return translateThrown(error, { context: options.context, secrets: options.secrets, app: NOCODB_ERRORS });
}
