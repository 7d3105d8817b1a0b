/**
 * The rules every request body field follows, as decorators, so a DTO states each field's limits once and the
 * OpenAPI document (`maxLength`, `maxProperties`) shows the same limits the validation pipe applies.
 *
 * Invariants: a field that may be omitted is still never `null` unless the DTO says so (a service reads a
 * present value as the declared type); a nested object that is required is present and an object; texts that
 * become names or identifiers carry no control characters; credentials are a flat map of bounded strings.
 */
import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsDefined,
  IsNotEmpty,
  IsObject,
  IsString,
  MaxLength,
  ValidateBy,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/** Limits of request input, documented in the OpenAPI document and docs/api.md (input limits). */
export const INPUT_LIMITS = Object.freeze({
  /** Display names (syncs, live exports). */
  name: 200,
  /** Slugs, base and location ids, time zones and other short texts. */
  text: 1024,
  /** One credential value (a connection string, an API key). */
  credential: 16_384,
  /** Fields in one `auth` object. */
  credentialFields: 32,
  /** Nesting of a JSON body (objects and arrays). */
  jsonDepth: 32,
});

/**
 * True when `text` has a C0 or C1 control character or DEL: never part of a name, a slug or an identifier.
 */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/** Applies `decorators` in order, as one. */
function all(...decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, key) => decorators.forEach((decorator) => decorator(target, key));
}

/** May be omitted; when present it is validated as declared, so `null` is refused (unlike `@IsOptional`). */
export function Omittable(): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined);
}

/** A non-empty single-line text of at most `max` characters without control characters. */
export function Text(
  max: number = INPUT_LIMITS.text,
  options: { optional?: boolean } = {},
): PropertyDecorator {
  return all(
    ...(options.optional ? [Omittable()] : []),
    IsString(),
    IsNotEmpty(),
    MaxLength(max),
    ValidateBy({
      name: 'noControlCharacters',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !hasControlCharacter(value),
        defaultMessage: (args) => `${args?.property} must not contain control characters`,
      },
    }),
    ApiProperty({ minLength: 1, maxLength: max }),
  );
}

/**
 * A nested object of `type`: required (present and an object) unless `optional` (then omittable, never null).
 */
export function Nested(
  type: () => new () => object,
  options: { optional?: boolean } = {},
): PropertyDecorator {
  return all(...(options.optional ? [Omittable()] : [IsDefined()]), IsObject(), ValidateNested(), Type(type));
}

/** OpenAPI schema of an `auth` object; used in the DTO's `@ApiProperty`. */
export const CREDENTIALS_SCHEMA = Object.freeze({
  type: 'object' as const,
  maxProperties: INPUT_LIMITS.credentialFields,
  additionalProperties: { type: 'string', maxLength: INPUT_LIMITS.credential },
});

function credentialsProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'must be an object of texts';
  const entries = Object.entries(value);
  if (entries.length > INPUT_LIMITS.credentialFields)
    return `must have at most ${INPUT_LIMITS.credentialFields} fields`;
  for (const [key, field] of entries) {
    if (key.length > INPUT_LIMITS.text || hasControlCharacter(key)) return 'has a malformed field name';
    if (typeof field !== 'string') return `.${key.slice(0, 100)} must be a text`;
    if (field.length > INPUT_LIMITS.credential)
      return `.${key.slice(0, 100)} must be at most ${INPUT_LIMITS.credential} characters`;
  }
  return null;
}

/** An omittable `auth` object: credential field ids to texts, bounded in count and length. */
export function Credentials(): PropertyDecorator {
  return all(
    Omittable(),
    ValidateBy({
      name: 'isCredentials',
      validator: {
        validate: (value: unknown) => credentialsProblem(value) === null,
        defaultMessage: (args) => `${args?.property ?? 'auth'} ${credentialsProblem(args?.value)}`,
      },
    }),
  );
}
