import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

/** The schema of every error body (the spec's `{error: {type, code, message, doc_url, ...}}`). */
export const ERROR_RESPONSE_REF = '#/components/schemas/ErrorResponse';

/**
 * Documents the error codes an endpoint can answer, per status (the body is the shared `ErrorResponse`
 * schema).
 */
export function ApiErrors(errors: Record<number, string[]>): MethodDecorator {
  return applyDecorators(
    ...Object.entries(errors).map(([status, codes]) =>
      ApiResponse({
        status: Number(status),
        description: `Codes: ${codes.map((code) => `\`${code}\``).join(', ')}.`,
        content: { 'application/json': { schema: { $ref: ERROR_RESPONSE_REF } } },
      }),
    ),
  );
}
