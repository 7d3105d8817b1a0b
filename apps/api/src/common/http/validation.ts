import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { DomainError, ErrorCode } from '@lockstep/contracts';

function flatten(errors: ValidationError[], parent = ''): { path: string; message: string }[] {
  return errors.flatMap((e) => {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((message) => ({ path, message }));
    return [...own, ...flatten(e.children ?? [], path)];
  });
}

/** DTO validation: unknown fields and wrong types are `400 invalid_request` naming each field. */
export const validationPipe = new ValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  exceptionFactory: (errors) => {
    const problems = flatten(errors);
    return new DomainError(
      ErrorCode.InvalidRequest,
      problems.map((p) => p.message).join('; ') || 'Invalid request.',
      { errors: problems },
    );
  },
});
