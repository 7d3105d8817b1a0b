/**
 * NocoDB's field types (`uidt`, nocodb-sdk's `UITypes`) -> canonical type classes, `read` / `write` flags and
 * `type_details`. Every type is listed; a type this table does not know (one NocoDB adds later) is class
 * `unsupported`, read and write false, never hidden. NocoDB's own bookkeeping columns (the row order, the
 * hidden foreign keys and link tables of its relations) are not fields a person sees, and are left out.
 * Values are in `values.ts`; the type a created field gets is in `native-types.ts`.
 */
import type { FieldInfo } from '@lockstep/connectors-core';
import type { TypeClass } from '@lockstep/domain';
import type { NocodbColumn } from './sql';

/** The name of the service id field `prepareTable` adds (a single line text, filled by Lockstep on create). */
export const SERVICE_ID_FIELD_NAME = 'Lockstep ID';

/** Types whose values NocoDB computes: listed, read, never written. */
export const COMPUTED_TYPES: ReadonlySet<string> = new Set([
  'ID',
  'Formula',
  'Rollup',
  'Lookup',
  'Count',
  'CreatedTime',
  'LastModifiedTime',
  'CreatedBy',
  'LastModifiedBy',
  'AutoNumber',
  'Barcode',
  'QrCode',
  'Button',
  'UUID',
]);

/** Link fields: their values go through the links API, not the record's own columns. */
export const LINK_TYPES: ReadonlySet<string> = new Set(['Links', 'LinkToAnotherRecord']);

const CLASS: Readonly<Record<string, TypeClass>> = Object.freeze({
  SingleLineText: 'text',
  LongText: 'text',
  Email: 'text',
  URL: 'text',
  PhoneNumber: 'text',
  GeoData: 'text',
  Number: 'integer',
  Decimal: 'decimal',
  Currency: 'decimal',
  Percent: 'float',
  Rating: 'integer',
  Duration: 'interval',
  Checkbox: 'boolean',
  Date: 'date',
  DateTime: 'timestamp',
  Time: 'time',
  Year: 'integer',
  SingleSelect: 'select',
  MultiSelect: 'multi_select',
  JSON: 'json',
  Attachment: 'json',
  User: 'json',
  Links: 'relation',
  LinkToAnotherRecord: 'relation',
  Formula: 'text',
  Rollup: 'float',
  Lookup: 'json',
  Count: 'integer',
  CreatedTime: 'timestamp',
  LastModifiedTime: 'timestamp',
  CreatedBy: 'json',
  LastModifiedBy: 'json',
  AutoNumber: 'integer',
  Barcode: 'text',
  QrCode: 'text',
  Button: 'json',
  UUID: 'uuid',
});

/** Bookkeeping types NocoDB hides from people (the row order, hidden foreign keys, the record's meta). */
const BOOKKEEPING: ReadonlySet<string> = new Set(['Order', 'ForeignKey', 'Meta']);

/** Whether the connector lists the column: every field a person sees in NocoDB, system times and users too. */
export function isListed(column: NocodbColumn): boolean {
  if (BOOKKEEPING.has(column.uidt)) return false;
  // The link tables of many-to-many links appear as system LinkToAnotherRecord columns.
  if (column.system && LINK_TYPES.has(column.uidt)) return false;
  return true;
}

export function metaOf(column: NocodbColumn): Record<string, unknown> {
  if (typeof column.meta === 'string') {
    try {
      return JSON.parse(column.meta) as Record<string, unknown>;
    } catch {
      return {};
    }
  }
  return column.meta ?? {};
}

export function classOf(column: NocodbColumn): TypeClass {
  if (column.uidt === 'ID') return /int|serial|numeric/i.test(column.dt ?? 'int') ? 'integer' : 'text';
  return CLASS[column.uidt] ?? 'unsupported';
}

/** Digits after the point of a Decimal (NocoDB's `meta.precision`, 1 when unset) or a Currency (2). */
export function scaleOf(column: NocodbColumn): number {
  if (column.uidt === 'Currency') return 2;
  const precision = Number(metaOf(column).precision);
  return Number.isInteger(precision) && precision >= 0 ? precision : 1;
}

export function choicesOf(column: NocodbColumn): string[] {
  const options = (column.colOptions as { options?: { title?: unknown }[] } | null)?.options;
  return Array.isArray(options) ? options.map((option) => String(option.title)) : [];
}

/** A link holds several records unless it is the "belongs to" or one-to-one side. */
export function linksMany(column: NocodbColumn): boolean {
  const type = (column.colOptions as { type?: unknown } | null)?.type;
  return type !== 'bt' && type !== 'oo';
}

export function linkTarget(column: NocodbColumn): string | null {
  const target = (column.colOptions as { fk_related_model_id?: unknown } | null)?.fk_related_model_id;
  return typeof target === 'string' ? target : null;
}

/** Spec 2.7 `type_details` (snake_case) of a column, or null when it has none. */
export function typeDetailsOf(column: NocodbColumn): Record<string, unknown> | null {
  const meta = metaOf(column);
  switch (column.uidt) {
    case 'Decimal':
      return { scale: scaleOf(column) };
    case 'Currency':
      return {
        scale: 2,
        currency_code: meta.currency_code ?? null,
        currency_locale: meta.currency_locale ?? null,
      };
    case 'Rating':
      return { max: meta.max ?? 5 };
    case 'Duration':
      return { duration_format: meta.duration ?? 0 };
    case 'DateTime':
      return { time_zone: 'utc' };
    case 'SingleSelect':
      return { options: choicesOf(column), allows_multiple_values: false };
    case 'MultiSelect':
      return { options: choicesOf(column), allows_multiple_values: true };
    case 'Attachment':
    case 'Lookup':
      return { allows_multiple_values: true };
    case 'User':
      return { allows_multiple_values: meta.is_multi === true };
    case 'Links':
    case 'LinkToAnotherRecord':
      return {
        target_table: linkTarget(column),
        allows_multiple_values: linksMany(column),
        relation_type: (column.colOptions as { type?: unknown } | null)?.type ?? null,
      };
    default:
      return null;
  }
}

export function isServiceIdColumn(column: NocodbColumn): boolean {
  return column.title === SERVICE_ID_FIELD_NAME && column.uidt === 'SingleLineText';
}

export function describeField(column: NocodbColumn): FieldInfo {
  const typeClass = classOf(column);
  const known = typeClass !== 'unsupported';
  return {
    remoteId: column.id,
    name: column.title,
    type: column.uidt,
    typeClass,
    read: known,
    write: known && !COMPUTED_TYPES.has(column.uidt) && !isServiceIdColumn(column),
    required: column.rqd === true && !column.pk && !COMPUTED_TYPES.has(column.uidt),
    primary: column.pk === true,
    typeDetails: typeDetailsOf(column),
  };
}
