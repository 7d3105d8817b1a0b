import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppConfig } from '@lockstep/config';
import { DomainError, ERROR_CATALOG, ErrorCode, type ErrorBody } from '@lockstep/contracts';
import { ReplayedResponse } from '../idempotency/idempotency.interceptor';
import { OpenApiDocument } from '../openapi/openapi';
import { routeNotFoundMessage } from './route-hint';

/** Nest's own HTTP exceptions (unknown route, guards of libraries) mapped onto spec codes by status. */
const HTTP_STATUS_CODES: Record<number, ErrorCode> = {
  400: ErrorCode.InvalidRequest,
  401: ErrorCode.InvalidApiKey,
  403: ErrorCode.Forbidden,
  404: ErrorCode.NotFound,
  405: ErrorCode.NotFound,
  409: ErrorCode.Conflict,
  413: ErrorCode.InvalidRequest,
  415: ErrorCode.InvalidRequest,
  422: ErrorCode.Unprocessable,
  429: ErrorCode.RateLimitExceeded,
};

export function errorBody(config: AppConfig, error: DomainError, requestId?: string): ErrorBody {
  const entry = ERROR_CATALOG[error.code];
  return {
    error: {
      type: entry.type,
      code: error.code,
      message: error.message,
      doc_url: `${config.publicUrl}/docs/errors/${error.code}`,
      ...(requestId ? { request_id: requestId } : {}),
      ...(error.details ? { details: error.details } : {}),
      ...(error.requiredAction ? { required_action: error.requiredAction } : {}),
    },
  };
}

/**
 * Converts anything thrown into a DomainError; unknown failures become `internal_error`. `notFound` words the
 * message of a request no route serves (Nest's own 404).
 */
export function toDomainError(
  exception: unknown,
  notFound = () => 'No such endpoint.',
): { error: DomainError; unexpected: boolean } {
  if (exception instanceof DomainError) return { error: exception, unexpected: false };
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const code = HTTP_STATUS_CODES[status];
    if (code) {
      const message = status === 404 || status === 405 ? notFound() : exception.message;
      return { error: new DomainError(code, message), unexpected: false };
    }
  }
  return {
    error: new DomainError(
      ErrorCode.InternalError,
      'An unexpected error occurred. Retry; if it persists, report the request id.',
    ),
    unexpected: true,
  };
}

/** Renders every error with the shape of spec 7.1 and the status/type of the error catalog. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ErrorFilter');

  constructor(
    private readonly config: AppConfig,
    private readonly openApi: OpenApiDocument,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const request = http.getRequest<Request>();
    if (exception instanceof ReplayedResponse) {
      response.set(exception.headers).status(exception.status).json(exception.body);
      return;
    }
    const paths = this.openApi.document?.paths ?? {};
    const { error, unexpected } = toDomainError(exception, () =>
      routeNotFoundMessage(request.method, request.originalUrl, paths),
    );
    const requestId = String(request.id ?? '');
    if (unexpected) {
      this.logger.error({ err: exception, request_id: requestId }, 'unexpected error');
    }
    if (response.headersSent) return;
    for (const [name, value] of Object.entries(error.headers ?? {})) response.setHeader(name, value);
    // A route may have set another type.
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response
      .status(ERROR_CATALOG[error.code].status)
      .json(errorBody(this.config, error, unexpected ? requestId : undefined));
  }
}
