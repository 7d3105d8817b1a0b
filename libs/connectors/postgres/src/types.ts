/**
 * PostgreSQL types <-> canonical type classes and values (the table in libs/domain/src/types/type-class.ts).
 *
 * Every value arrives as PostgreSQL's text output (the connection's type parsers return raw text, and the
 * session runs with TimeZone=UTC, DateStyle=ISO, IntervalStyle=iso_8601, extra_float_digits=1), and is
 * converted here, so nothing is rounded through a JavaScript Date or number on the way.
 */
import { ConnectorError, type FieldInfo, type FieldSpec } from '@lockstep/connectors-core';
import type { CanonicalValue, JsonValue, TypeClass } from '@lockstep/domain';
import { parseArrayLiteral, type ArrayText } from './sql';

/** Base type names (pg_type.typname, after resolving domains) and the class they carry. */
export const SCALAR_CLASSES: Readonly<Record<string, TypeClass>> = Object.freeze({
  text: 'text',
  varchar: 'text',
  bpchar: 'text',
  char: 'text',
  name: 'text',
  citext: 'text',
  inet: 'text',
  cidr: 'text',
  macaddr: 'text',
  macaddr8: 'text',
  timetz: 'text',
  xml: 'text',
  int2: 'integer',
  int4: 'integer',
  int8: 'integer',
  numeric: 'decimal',
  float4: 'float',
  float8: 'float',
  bool: 'boolean',
  date: 'date',
  time: 'time',
  timestamp: 'datetime',
  timestamptz: 'timestamp',
  interval: 'interval',
  uuid: 'uuid',
  json: 'json',
  jsonb: 'json',
});

/** One column as the catalog query describes it (see catalog.ts). */
export interface ColumnMeta {
  name: string;
  /** format_type(atttypid, atttypmod): `character varying(40)`, `numeric(10,2)`, `integer[]`, `my.mood`. */
  type: string;
  /** format_type(atttypid, NULL): the type without modifiers, used to cast parameters. */
  castType: string;
  notNull: boolean;
  hasDefault: boolean;
  defaultExpr: string | null;
  identity: string;
  generated: string;
  /** The resolved base type (domains followed). */
  baseName: string;
  baseTyptype: string;
  baseCategory: string;
  baseEnum: string[] | null;
  /** For arrays: the element's resolved type. */
  elemName: string | null;
  elemTyptype: string | null;
  elemEnum: string[] | null;
  /** Set when this column is a single-column foreign key to the primary key of another table. */
  relation: { targetSchema: string; targetTable: string; targetColumn: string } | null;
}

/** What a column is to the connector: class, element class, and how to decode its text. */
export interface ColumnKind {
  typeClass: TypeClass;
  /** The class of a scalar or of an array's elements (for decoding). */
  valueClass: TypeClass;
  isArray: boolean;
  options: string[] | null;
}

export function columnKind(column: ColumnMeta): ColumnKind {
  if (column.baseCategory === 'A' && column.elemName !== null) {
    if (column.elemTyptype === 'e') {
      return {
        typeClass: 'multi_select',
        valueClass: 'select',
        isArray: true,
        options: column.elemEnum ?? [],
      };
    }
    const element = SCALAR_CLASSES[column.elemName];
    if (!element)
      return { typeClass: 'unsupported', valueClass: 'unsupported', isArray: true, options: null };
    return { typeClass: 'array', valueClass: element, isArray: true, options: null };
  }
  if (column.baseTyptype === 'e') {
    return { typeClass: 'select', valueClass: 'select', isArray: false, options: column.baseEnum ?? [] };
  }
  const scalar = SCALAR_CLASSES[column.baseName] ?? 'unsupported';
  if (column.relation && scalar !== 'unsupported') {
    return { typeClass: 'relation', valueClass: 'relation', isArray: false, options: null };
  }
  return { typeClass: scalar, valueClass: scalar, isArray: false, options: null };
}

export interface FieldContext {
  /** The table is a view or materialized view, or Lockstep may not write it. */
  readOnly: boolean;
  primaryKey: string[];
  serviceIdColumn: string | null;
  /**
   * Columns that alone are a unique index other than the primary key: listed as `type_details.unique` (a
   * person is offered them as a match field). Optional: absent = none.
   */
  uniqueColumns?: string[];
}

export const SERVICE_ID_COLUMN = 'lockstep_id';

function modifiers(type: string): number[] {
  const match = /\((\d+)(?:\s*,\s*(\d+))?\)/.exec(type);
  if (!match) return [];
  return match
    .slice(1)
    .filter((part): part is string => part !== undefined)
    .map(Number);
}

/** The FieldInfo a column is listed with. */
export function fieldInfo(column: ColumnMeta, table: FieldContext): FieldInfo {
  const kind = columnKind(column);
  const supported = kind.typeClass !== 'unsupported';
  const generated =
    column.identity !== '' || column.generated !== '' || /^nextval\(/i.test(column.defaultExpr ?? '');
  const isServiceId = column.name === table.serviceIdColumn;
  const details: Record<string, unknown> = {};
  if (kind.options) details['options'] = kind.options;
  if (kind.isArray && supported) details['allows_multiple_values'] = true;
  if (kind.typeClass === 'array') details['element_class'] = kind.valueClass;
  if (column.relation) {
    details['target_table'] = column.relation.targetTable;
    details['target_field'] = column.relation.targetColumn;
    if (kind.typeClass !== 'relation') details['relation_unsupported'] = true;
  }
  const [first, second] = modifiers(column.type);
  if (first !== undefined && ['varchar', 'bpchar'].includes(column.baseName)) details['max_length'] = first;
  if (first !== undefined && column.baseName === 'numeric') {
    details['precision'] = first;
    details['scale'] = second ?? 0;
  }
  if (isServiceId) details['service_id'] = true;
  else if (table.uniqueColumns?.includes(column.name) && !table.primaryKey.includes(column.name))
    details['unique'] = true;
  if (generated) details['generated'] = true;
  const writable = supported && !table.readOnly && !generated && !isServiceId;
  return {
    remoteId: column.name,
    name: column.name,
    type: column.type,
    typeClass: kind.typeClass,
    read: supported,
    write: writable,
    required: writable && column.notNull && !column.hasDefault,
    primary: table.primaryKey.includes(column.name),
    typeDetails: Object.keys(details).length > 0 ? details : null,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Text -> canonical value

const TIMESTAMP_TZ = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d)(\.\d+)?([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?$/;

/** `2024-02-29 13:45:30.5+00` -> `2024-02-29T13:45:30.5Z` (other offsets are converted to UTC). */
export function timestamptzToCanonical(text: string): string {
  // The session runs with TimeZone=UTC, so nearly every value is `YYYY-MM-DD HH:MM:SS[.f]+00`: no regex
  // needed.
  if (text.length >= 22 && text.charCodeAt(10) === 32 && text.endsWith('+00')) {
    return `${text.slice(0, 10)}T${text.slice(11, text.length - 3)}Z`;
  }
  const match = TIMESTAMP_TZ.exec(text);
  if (!match) return text; // infinity, BC dates: passed through as PostgreSQL wrote them
  const [, date, time, fraction = '', sign, hours, minutes = '00', seconds = '00'] = match;
  const offsetSeconds =
    (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * (sign === '-' ? -1 : 1);
  if (offsetSeconds === 0) return `${date}T${time}${fraction}Z`;
  const utc = new Date(Date.parse(`${date}T${time}Z`) - offsetSeconds * 1000).toISOString().slice(0, 19);
  return `${utc}${fraction}Z`;
}

/** Converts one non-null text value of a column to its canonical value. */
export type Decoder = (text: string) => CanonicalValue;

const identity: Decoder = (text) => text;
const SCALAR_DECODERS: Partial<Record<TypeClass, Decoder>> = {
  integer: (text) => {
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : text;
  },
  float: (text) => Number(text),
  boolean: (text) => text === 't' || text === 'true',
  datetime: (text) => text.replace(' ', 'T'),
  timestamp: timestamptzToCanonical,
  json: (text) => JSON.parse(text) as CanonicalValue,
};

/** The decoder of a column (what `decodeValue` does, without deciding per value). */
export function decoderFor(kind: ColumnKind): Decoder {
  if (kind.isArray) return (text) => decodeArray(parseArrayLiteral(text), kind.valueClass);
  return SCALAR_DECODERS[kind.valueClass] ?? identity;
}

// text, decimal (exact text), date, time, interval (IntervalStyle iso_8601), uuid, select, relation: as
// they are.
function decodeScalar(valueClass: TypeClass, text: string): CanonicalValue {
  return (SCALAR_DECODERS[valueClass] ?? identity)(text);
}

function decodeArray(items: ArrayText, valueClass: TypeClass): JsonValue[] {
  return items.map((item) => {
    if (item === null) return null;
    if (Array.isArray(item)) return decodeArray(item, valueClass);
    return decodeScalar(valueClass, item) as JsonValue;
  });
}

export function decodeValue(kind: ColumnKind, text: string | null): CanonicalValue {
  if (text === null) return null;
  if (kind.isArray) return decodeArray(parseArrayLiteral(text), kind.valueClass);
  return decodeScalar(kind.valueClass, text);
}

// ---------------------------------------------------------------------------------------------------------
// Canonical value -> query parameter

export type PgParam = string | number | boolean | null | PgParam[];

function encodeScalar(valueClass: TypeClass, value: JsonValue, field: string): PgParam {
  if (value === null) return null;
  if (valueClass === 'json') return JSON.stringify(value);
  if (typeof value === 'object') {
    throw new ConnectorError(
      'invalid_data',
      `Field "${field}" takes a single ${valueClass} value, ` +
        `not ${Array.isArray(value) ? 'a list' : 'an object'}`,
    );
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return value;
}

const NEEDS_ESCAPE = /[\\"]/;

/**
 * PostgreSQL's text form of an array of parameters (`{1,"a b",NULL,{2,3}}`), to send a whole column of a
 * batch as one array parameter. Strings are always quoted (so `NULL`, `""`, braces and commas stay text);
 * nested lists become nested arrays. The server parses every element with the element type's input
 * function, exactly as it parses a single `$1::type` parameter.
 */
export function arrayLiteral(items: readonly PgParam[]): string {
  let out = '{';
  for (let index = 0; index < items.length; index += 1) {
    if (index > 0) out += ',';
    out += elementLiteral(items[index]!);
  }
  return `${out}}`;
}

/** One element of an array literal (see `arrayLiteral`). */
export function elementLiteral(item: PgParam): string {
  if (item === null) return 'NULL';
  if (typeof item === 'string')
    return NEEDS_ESCAPE.test(item) ? `"${item.replace(/[\\"]/g, '\\$&')}"` : `"${item}"`;
  if (Array.isArray(item)) return arrayLiteral(item);
  return String(item);
}

/** Encodes a canonical value for a parameter cast to the column's type; ConnectorError `invalid_data`. */
export function encodeValue(kind: ColumnKind, value: CanonicalValue, field: string): PgParam {
  if (value === null) return null;
  if (kind.isArray) {
    if (!Array.isArray(value))
      throw new ConnectorError('invalid_data', `Field "${field}" takes a list of values`);
    return value.map((item) =>
      Array.isArray(item) && kind.valueClass !== 'json'
        ? encodeValue(kind, item, field)
        : encodeScalar(kind.valueClass, item, field),
    );
  }
  return encodeScalar(kind.valueClass, value, field);
}

// ---------------------------------------------------------------------------------------------------------
// Canonical class -> native type for created tables and fields

const CREATED_TYPES: Readonly<Record<Exclude<TypeClass, 'unsupported' | 'decimal' | 'array'>, string>> =
  Object.freeze({
    text: 'text',
    integer: 'bigint',
    float: 'double precision',
    boolean: 'boolean',
    date: 'date',
    time: 'time',
    datetime: 'timestamp',
    timestamp: 'timestamptz',
    interval: 'interval',
    uuid: 'uuid',
    json: 'jsonb',
    select: 'text',
    multi_select: 'text[]',
    relation: 'text',
  });

function numberDetail(details: Record<string, unknown> | null | undefined, key: string): number | null {
  const value = details?.[key];
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/** The closest native type for a field created from a counterpart of class `spec.typeClass`. */
export function nativeTypeFor(spec: Pick<FieldSpec, 'typeClass' | 'typeDetails' | 'name'>): string {
  const { typeClass, typeDetails } = spec;
  if (typeClass === 'unsupported') {
    throw new ConnectorError(
      'unsupported',
      `Field "${spec.name}" has a type Lockstep cannot create in PostgreSQL`,
    );
  }
  if (typeClass === 'decimal') {
    const precision = numberDetail(typeDetails, 'precision');
    const scale = numberDetail(typeDetails, 'scale') ?? 0;
    if (precision !== null && precision >= 1 && precision <= 1000 && scale >= 0 && scale <= precision) {
      return `numeric(${precision},${scale})`;
    }
    return 'numeric';
  }
  if (typeClass === 'array') {
    const element = typeDetails?.['element_class'] ?? 'text';
    if (
      element === 'array' ||
      element === 'multi_select' ||
      element === 'unsupported' ||
      element === 'decimal' ||
      typeof element !== 'string'
    ) {
      if (element === 'decimal') return 'numeric[]';
      throw new ConnectorError(
        'unsupported',
        `Field "${spec.name}": PostgreSQL arrays of ${String(element)} are not supported`,
      );
    }
    const native = CREATED_TYPES[element as keyof typeof CREATED_TYPES];
    if (!native)
      throw new ConnectorError('unsupported', `Field "${spec.name}": unknown element class ${element}`);
    return `${native}[]`;
  }
  return CREATED_TYPES[typeClass];
}
