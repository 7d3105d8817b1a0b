/**
 * The Airtable field a created field gets (https://airtable.com/developers/web/api/field-model, "field options"
 * for writes), picked from the counterpart's canonical class and `type_details`: a `numeric(10,2)` becomes a
 * number with precision 2, an enum a single select with its options, a link a record link when its target
 * table is in this base. Classes Airtable has no field for are `unsupported`.
 */
import { ConnectorError, type FieldSpec } from '@lockstep/connectors-core';
import type { AirtableTable, FieldBody } from './sql';

/** Digits after the point Airtable keeps at most (`options.precision`). */
const MAX_PRECISION = 8;

/** Types Airtable refuses as a table's primary (first) field. */
export const NOT_PRIMARY: ReadonlySet<string> = new Set([
  'multipleRecordLinks',
  'multipleAttachments',
  'checkbox',
  'singleSelect',
  'multipleSelects',
  'rating',
]);

const LONG_TEXT_SOURCES = new Set(['multilineText', 'richText']);

function choices(spec: FieldSpec) {
  const options = spec.typeDetails?.options;
  const names = Array.isArray(options) ? [...new Set(options.map(String))] : [];
  return { choices: names.map((name) => ({ name })) };
}

/** Digits after the point: the counterpart's `scale` (2 without one), at most Airtable's 8. */
function precision(spec: FieldSpec): number {
  const scale = spec.typeDetails?.scale;
  const digits = typeof scale === 'number' && Number.isInteger(scale) && scale >= 0 ? scale : 2;
  return Math.min(digits, MAX_PRECISION);
}

/** The Airtable type and options for a field created from `spec`; `tables` are the base's tables (links). */
export function nativeField(spec: FieldSpec, tables: AirtableTable[]): FieldBody {
  const name = spec.name;
  switch (spec.typeClass) {
    case 'text':
      return {
        name,
        type: LONG_TEXT_SOURCES.has(spec.sourceType ?? '') ? 'multilineText' : 'singleLineText',
      };
    case 'uuid':
    case 'time':
      return { name, type: 'singleLineText' };
    case 'json':
      return { name, type: 'multilineText' };
    case 'integer':
      return { name, type: 'number', options: { precision: 0 } };
    case 'decimal':
      return { name, type: 'number', options: { precision: precision(spec) } };
    case 'float':
      return { name, type: 'number', options: { precision: MAX_PRECISION } };
    case 'boolean':
      return { name, type: 'checkbox', options: { icon: 'check', color: 'greenBright' } };
    case 'date':
      return { name, type: 'date', options: { dateFormat: { name: 'iso' } } };
    case 'datetime':
    case 'timestamp':
      return {
        name,
        type: 'dateTime',
        options: { dateFormat: { name: 'iso' }, timeFormat: { name: '24hour' }, timeZone: 'utc' },
      };
    case 'interval':
      return { name, type: 'duration', options: { durationFormat: 'h:mm:ss' } };
    case 'select':
      return { name, type: 'singleSelect', options: choices(spec) };
    case 'multi_select':
      return { name, type: 'multipleSelects', options: choices(spec) };
    case 'relation': {
      const target = String(spec.typeDetails?.target_table ?? '');
      const table = tables.find((candidate) => candidate.id === target || candidate.name === target);
      if (table) return { name, type: 'multipleRecordLinks', options: { linkedTableId: table.id } };
      return { name, type: 'singleLineText' };
    }
    default:
      throw new ConnectorError('unsupported', `Airtable has no field type for "${spec.typeClass}" values`);
  }
}

/** Airtable's names: not empty, no control characters, at most 255 characters (refused before any request). */
export function checkName(name: string, what: 'Table' | 'Field'): void {
  // eslint-disable-next-line no-control-regex
  if (name.trim() === '' || /[\u0000-\u001f]/.test(name) || name.length > 255) {
    throw new ConnectorError(
      'invalid_data',
      `${what} name ${JSON.stringify(name.slice(0, 40))} is empty, too long or has control characters`,
    );
  }
}

/** Fields for a new table: the first one Airtable accepts as primary goes first (a "Name" text when none does). */
export function orderForCreate(bodies: FieldBody[]): FieldBody[] {
  const index = bodies.findIndex((body) => !NOT_PRIMARY.has(body.type));
  if (index < 0) {
    const name = bodies.some((body) => body.name === 'Name') ? 'Lockstep name' : 'Name';
    return [{ name, type: 'singleLineText' }, ...bodies];
  }
  return [bodies[index]!, ...bodies.slice(0, index), ...bodies.slice(index + 1)];
}
