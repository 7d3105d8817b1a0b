import type { components } from './generated/schema';

/** The body of every error answer (spec section 7). */
export type ErrorResponse = components['schemas']['ErrorResponse'];
/** The `error` object of an error answer. */
export type ApiError = ErrorResponse['error'];
/** Every machine-readable error code the API documents. */
export type ErrorCode = ApiError['code'];
/** The error category (`invalid_request_error`, `requires_action` ...). */
export type ErrorType = ApiError['type'];
/** A step a person must take; relay its `url` and `instruction`. */
export type PendingAction = components['schemas']['PendingActionDto'];

function isApiErrorBody(body: unknown): body is ErrorResponse {
  const error = (body as { error?: { code?: unknown; type?: unknown } } | null)?.error;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof error.code === 'string' &&
    typeof error.type === 'string'
  );
}

/**
 * An answer other than 2xx. `code` is the stable error code to branch on; `error` is the whole error object
 * (`message`, `doc_url`, `details`, `required_action`). An answer that does not carry the API's error body
 * (a proxy's page) becomes `api_error` / `internal_error` with the status and the start of the text.
 */
export class LockstepApiError extends Error {
  override readonly name = 'LockstepApiError';
  readonly status: number;
  readonly error: ApiError;
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const error: ApiError = isApiErrorBody(body)
      ? body.error
      : {
          type: 'api_error',
          code: 'internal_error',
          message: `HTTP ${response.status} without an API error body: ${String(body ?? '').slice(0, 200)}`,
          doc_url: '',
        };
    super(`${error.code}: ${error.message}`);
    this.status = response.status;
    this.error = error;
    this.response = response;
  }

  get code(): ErrorCode {
    return this.error.code;
  }

  get type(): ErrorType {
    return this.error.type;
  }

  /** Whether `value` is an API error, with the given code when one is named. */
  static is(value: unknown, code?: ErrorCode): value is LockstepApiError {
    return value instanceof LockstepApiError && (code === undefined || value.code === code);
  }
}
