import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

/** Documents the error codes an endpoint can answer, per status (the body is the shared `Error` schema). */
export function ApiErrors(errors: Record<number, string[]>): MethodDecorator {
  return applyDecorators(
    ...Object.entries(errors).map(([status, codes]) =>
      ApiResponse({
        status: Number(status),
        description: `Codes: ${codes.map((code) => `\`${code}\``).join(', ')}.`,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      }),
    ),
  );
}
