/**
 * Airtable's field types (https://airtable.com/developers/web/api/field-model) -> canonical type classes,
 * `read` / `write` flags and `type_details`. Every type is listed; a type this table does not know (one
 * Airtable adds later) is class `unsupported`, read and write false, never hidden. Decoding and encoding of
 * values are in `values.ts`; the type a created field gets is in `native-types.ts`.
 */
import type { FieldInfo } from '@lockstep/connectors-core';
import type { TypeClass } from '@lockstep/domain';
import type { AirtableField } from './sql';

/** The name of the service id field `prepareTable` adds (a single line text, filled by Lockstep on create). */
export const SERVICE_ID_FIELD_NAME = 'Lockstep ID';

/** Types whose values Airtable computes: listed, read, never written. */
export const COMPUTED_TYPES: ReadonlySet<string> = new Set([
  'formula',
  'rollup',
  'count',
  'multipleLookupValues',
  'createdTime',
  'lastModifiedTime',
  'createdBy',
  'lastModifiedBy',
  'autoNumber',
  'button',
]);

/** The class of each writable or computed type whose class does not depend on its options. */
const FIXED_CLASS: Readonly<Record<string, TypeClass>> = Object.freeze({
  singleLineText: 'text',
  multilineText: 'text',
  richText: 'text',
  email: 'text',
  url: 'text',
  phoneNumber: 'text',
  percent: 'float',
  currency: 'decimal',
  rating: 'integer',
  duration: 'interval',
  checkbox: 'boolean',
  date: 'date',
  dateTime: 'timestamp',
  singleSelect: 'select',
  multipleSelects: 'multi_select',
  singleCollaborator: 'json',
  multipleCollaborators: 'json',
  multipleRecordLinks: 'relation',
  multipleAttachments: 'json',
  barcode: 'json',
  count: 'integer',
  multipleLookupValues: 'json',
  createdTime: 'timestamp',
  lastModifiedTime: 'timestamp',
  createdBy: 'json',
  lastModifiedBy: 'json',
  autoNumber: 'integer',
  button: 'json',
});

/** A field type and its options, as the base schema gives them (a formula's `result` has the same shape). */
export interface TypeSpec {
  type: string;
  options?: Record<string, unknown>;
}

/** The canonical class of a type; a formula or rollup takes its result's class (text when it has none). */
export function classOf(spec: TypeSpec): TypeClass {
  if (spec.type === 'number') return precisionOf(spec) === 0 ? 'integer' : 'decimal';
  if (spec.type === 'formula' || spec.type === 'rollup') {
    const result = spec.options?.result as TypeSpec | undefined;
    return result && typeof result.type === 'string' ? classOf(result) : 'text';
  }
  return FIXED_CLASS[spec.type] ?? 'unsupported';
}

/** Digits after the decimal point of a number or currency (Airtable's `options.precision`, 0 to 8). */
export function precisionOf(spec: TypeSpec): number {
  const precision = spec.options?.precision;
  return typeof precision === 'number' && Number.isInteger(precision) && precision >= 0 ? precision : 0;
}

/** A link field holds several records unless Airtable was told to prefer one (`prefersSingleRecordLink`). */
export function linksMany(spec: TypeSpec): boolean {
  return spec.options?.prefersSingleRecordLink !== true;
}

export function choicesOf(spec: TypeSpec): string[] {
  const choices = spec.options?.choices;
  return Array.isArray(choices) ? choices.map((choice: { name?: unknown }) => String(choice.name)) : [];
}

/** Spec 2.7 `type_details` (snake_case) of a type, or null when it has none. */
export function typeDetailsOf(spec: TypeSpec): Record<string, unknown> | null {
  const options = spec.options ?? {};
  switch (spec.type) {
    // Airtable's `precision` is the digits after the point: the SDK's `scale` (its `precision` counts every
    // digit, which Airtable does not bound: a double holds about 15).
    case 'number':
    case 'percent':
      return { scale: precisionOf(spec) };
    case 'currency':
      return { scale: precisionOf(spec), symbol: options.symbol ?? null };
    case 'rating':
      return { max: options.max ?? null };
    case 'duration':
      return { duration_format: options.durationFormat ?? null };
    case 'dateTime':
      return { time_zone: options.timeZone ?? 'utc' };
    case 'singleSelect':
      return { options: choicesOf(spec), allows_multiple_values: false };
    case 'multipleSelects':
      return { options: choicesOf(spec), allows_multiple_values: true };
    case 'multipleCollaborators':
    case 'multipleAttachments':
    case 'multipleLookupValues':
      return { allows_multiple_values: true };
    case 'singleCollaborator':
      return { allows_multiple_values: false };
    case 'multipleRecordLinks':
      return { target_table: options.linkedTableId ?? null, allows_multiple_values: linksMany(spec) };
    case 'formula':
    case 'rollup': {
      const result = options.result as TypeSpec | undefined;
      const details = result?.type ? typeDetailsOf(result) : null;
      return { ...details, result_type: result?.type ?? null };
    }
    default:
      return null;
  }
}

export function describeField(field: AirtableField, primaryFieldId: string): FieldInfo {
  const typeClass = classOf(field);
  const known = typeClass !== 'unsupported';
  const serviceId = field.name === SERVICE_ID_FIELD_NAME && field.type === 'singleLineText';
  return {
    remoteId: field.id,
    name: field.name,
    type: field.type,
    typeClass,
    read: known,
    write: known && !COMPUTED_TYPES.has(field.type) && !serviceId,
    required: false,
    primary: field.id === primaryFieldId,
    typeDetails: typeDetailsOf(field),
  };
}
