/**
 * Canonical type classes. Every connector maps each of its own field types onto one of these; the
 * type-compatibility table (mapping validation) and the engine's converters are keyed by them, so what
 * validates always converts. A connector's own `type` string stays what the app calls it.
 */
export const TYPE_CLASSES = [
  'text',
  'integer',
  'decimal',
  'float',
  'boolean',
  'date',
  'time',
  'datetime',
  'timestamp',
  'interval',
  'uuid',
  'json',
  'select',
  'multi_select',
  'array',
  'relation',
  'unsupported',
] as const;

export type TypeClass = (typeof TYPE_CLASSES)[number];

export function isTypeClass(value: unknown): value is TypeClass {
  return typeof value === 'string' && (TYPE_CLASSES as readonly string[]).includes(value);
}

/**
 * How a value of each class travels between a connector and the engine (and is kept in shadows):
 *
 * | class        | JavaScript value                                                                 |
 * |--------------|----------------------------------------------------------------------------------|
 * | text         | string                                                                           |
 * | integer      | number when it is a safe integer, otherwise a string of decimal digits (bigint)  |
 * | decimal      | string, the database's exact decimal text (for example "12.50")                 |
 * | float        | number                                                                           |
 * | boolean      | boolean                                                                          |
 * | date         | string "YYYY-MM-DD"                                                              |
 * | time         | string "HH:MM:SS" with optional fraction ".ffffff"                               |
 * | datetime     | string "YYYY-MM-DDTHH:MM:SS[.ffffff]", wall-clock time without a zone            |
 * | timestamp    | string, an instant in UTC: "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"                      |
 * | interval     | string, an ISO 8601 duration ("P1DT2H", "PT0.5S")                                |
 * | uuid         | string, lower case                                                               |
 * | json         | any JSON value (object, array, string, number, boolean)                          |
 * | select       | string, one of the field's options                                               |
 * | multi_select | string[], each one of the field's options                                        |
 * | array        | array of values of `type_details.element_class`                                  |
 * | relation     | string, the remote id of the target record (string[] when it allows several)     |
 * | unsupported  | never read or written (the field is listed with read and write false)            |
 *
 * `null` means no value for every class.
 */
export type CanonicalValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue };
export type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue };
