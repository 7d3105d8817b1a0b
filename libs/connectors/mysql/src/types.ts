/**
 * MySQL / MariaDB column types <-> Lockstep's canonical type classes (libs/domain type-class.ts), in three
 * pure parts: classifying a column from information_schema, converting values both ways, and choosing the
 * native type for a field Lockstep creates. The README has the mapping as a table.
 */
import type { CanonicalValue, JsonValue, TypeClass } from '@lockstep/domain';
import { isTypeClass } from '@lockstep/domain';
import type { FieldSpec } from '@lockstep/connectors-core';
import { quoteString } from './sql';
import type { ServerFlavor } from './errors';

/** How a column's values are stored, which decides the value conversion both ways. */
export type Storage =
  | 'text'
  | 'integer'
  | 'bit_integer'
  | 'decimal'
  | 'float'
  | 'bool_int'
  | 'bool_bit'
  | 'date'
  | 'time'
  | 'datetime'
  | 'timestamp'
  | 'datetime_utc'
  | 'uuid'
  | 'json'
  | 'enum'
  | 'set'
  | 'json_multi_select'
  | 'json_array'
  | 'interval'
  | 'unsupported';

/** One column as information_schema describes it (plus the few joins the connector makes). */
export interface ColumnDescription {
  name: string;
  /** information_schema DATA_TYPE, lower case (`varchar`, `int`, `longtext`, `enum`...). */
  dataType: string;
  /** information_schema COLUMN_TYPE, lower case (`varchar(40)`, `tinyint(1)`, `enum('a','b')`...). */
  columnType: string;
  nullable: boolean;
  /** The column has a default (any default, NULL included, as MariaDB reports it). */
  hasDefault: boolean;
  autoIncrement: boolean;
  generated: boolean;
  comment: string;
  charMaxLength: number | null;
  numericPrecision: number | null;
  numericScale: number | null;
  /** Part of the primary key. */
  primary: boolean;
  /** MariaDB: a `json_valid(column)` CHECK constraint, which is what its JSON type is. */
  jsonCheck: boolean;
  /** Single-column foreign key to the single-column primary key of this table, in the same database. */
  references: string | null;
  /** The table is a view (every column read-only). */
  inView: boolean;
}

export interface ClassifiedColumn {
  name: string;
  /** The connector's own type name shown to people (`varchar(40)`, `enum`, `json`...). */
  type: string;
  typeClass: TypeClass;
  storage: Storage;
  read: boolean;
  write: boolean;
  required: boolean;
  primary: boolean;
  typeDetails: Record<string, unknown> | null;
}

/** Marker in a column comment that says which class a column Lockstep created stands for. */
const MARKER = /\blockstep:([a-z_]+)(?::([a-z_]+))?/;

const TEXT_TYPES = new Set([
  'char',
  'varchar',
  'tinytext',
  'text',
  'mediumtext',
  'longtext',
  'inet4',
  'inet6',
]);
const INTEGER_TYPES = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint', 'year']);
const FLOAT_TYPES = new Set(['float', 'double', 'real', 'double precision']);

/** Parses the quoted options of `enum('a','b')` / `set('a','b')` (quotes doubled, backslashes escaped). */
export function parseOptions(columnType: string): string[] {
  const open = columnType.indexOf('(');
  const options: string[] = [];
  if (open < 0) return options;
  let i = open + 1;
  while (i < columnType.length) {
    const ch = columnType[i];
    if (ch === "'") {
      let value = '';
      i += 1;
      while (i < columnType.length) {
        const c = columnType[i];
        if (c === "'" && columnType[i + 1] === "'") {
          value += "'";
          i += 2;
        } else if (c === '\\' && i + 1 < columnType.length) {
          value += columnType[i + 1];
          i += 2;
        } else if (c === "'") {
          i += 1;
          break;
        } else {
          value += c;
          i += 1;
        }
      }
      options.push(value);
    } else if (ch === ')') {
      break;
    } else {
      i += 1;
    }
  }
  return options;
}

function baseClass(column: ColumnDescription): {
  typeClass: TypeClass;
  storage: Storage;
  type: string;
  details: Record<string, unknown>;
} {
  const { dataType, columnType } = column;
  const marker = MARKER.exec(column.comment);
  const markedAs = marker?.[1];
  if (dataType === 'longtext' && column.jsonCheck) {
    if (markedAs === 'multi_select')
      return {
        typeClass: 'multi_select',
        storage: 'json_multi_select',
        type: 'json',
        details: { allows_multiple_values: true },
      };
    if (markedAs === 'array') return jsonArray(marker?.[2]);
    return { typeClass: 'json', storage: 'json', type: 'json', details: {} };
  }
  if (dataType === 'json') {
    if (markedAs === 'multi_select')
      return {
        typeClass: 'multi_select',
        storage: 'json_multi_select',
        type: 'json',
        details: { allows_multiple_values: true },
      };
    if (markedAs === 'array') return jsonArray(marker?.[2]);
    return { typeClass: 'json', storage: 'json', type: 'json', details: {} };
  }
  if (dataType === 'uuid') return { typeClass: 'uuid', storage: 'uuid', type: columnType, details: {} };
  if (dataType === 'char' && markedAs === 'uuid')
    return { typeClass: 'uuid', storage: 'uuid', type: columnType, details: {} };
  if (dataType === 'varchar' && markedAs === 'interval')
    return { typeClass: 'interval', storage: 'interval', type: columnType, details: {} };
  if (TEXT_TYPES.has(dataType)) {
    const details: Record<string, unknown> = {};
    if ((dataType === 'char' || dataType === 'varchar') && column.charMaxLength !== null)
      details.max_length = column.charMaxLength;
    return { typeClass: 'text', storage: 'text', type: columnType, details };
  }
  if (dataType === 'tinyint' && /^tinyint\(1\)/.test(columnType))
    return { typeClass: 'boolean', storage: 'bool_int', type: columnType, details: {} };
  if (dataType === 'bit') {
    if (/^bit\(1\)/.test(columnType))
      return { typeClass: 'boolean', storage: 'bool_bit', type: columnType, details: {} };
    return { typeClass: 'integer', storage: 'bit_integer', type: columnType, details: {} };
  }
  if (INTEGER_TYPES.has(dataType))
    return { typeClass: 'integer', storage: 'integer', type: columnType, details: {} };
  if (dataType === 'decimal' || dataType === 'numeric') {
    const details: Record<string, unknown> = {};
    if (column.numericPrecision !== null) details.precision = column.numericPrecision;
    if (column.numericScale !== null) details.scale = column.numericScale;
    return { typeClass: 'decimal', storage: 'decimal', type: columnType, details };
  }
  if (FLOAT_TYPES.has(dataType))
    return { typeClass: 'float', storage: 'float', type: columnType, details: {} };
  if (dataType === 'date') return { typeClass: 'date', storage: 'date', type: columnType, details: {} };
  if (dataType === 'time') return { typeClass: 'time', storage: 'time', type: columnType, details: {} };
  if (dataType === 'datetime') {
    if (markedAs === 'timestamp')
      return { typeClass: 'timestamp', storage: 'datetime_utc', type: columnType, details: {} };
    return { typeClass: 'datetime', storage: 'datetime', type: columnType, details: {} };
  }
  if (dataType === 'timestamp')
    return { typeClass: 'timestamp', storage: 'timestamp', type: columnType, details: {} };
  if (dataType === 'enum')
    return {
      typeClass: 'select',
      storage: 'enum',
      type: 'enum',
      details: { options: parseOptions(columnType) },
    };
  if (dataType === 'set') {
    return {
      typeClass: 'multi_select',
      storage: 'set',
      type: 'set',
      details: { options: parseOptions(columnType), allows_multiple_values: true },
    };
  }
  // binary, varbinary, blobs, geometry types, vector, anything newer: listed, never read or written.
  return { typeClass: 'unsupported', storage: 'unsupported', type: columnType, details: {} };
}

function jsonArray(element: string | undefined): {
  typeClass: TypeClass;
  storage: Storage;
  type: string;
  details: Record<string, unknown>;
} {
  const elementClass = element && isTypeClass(element) ? element : 'json';
  return {
    typeClass: 'array',
    storage: 'json_array',
    type: 'json',
    details: { element_class: elementClass, allows_multiple_values: true },
  };
}

export function classifyColumn(column: ColumnDescription): ClassifiedColumn {
  const base = baseClass(column);
  let { typeClass } = base;
  const details = { ...base.details };
  // A single-column foreign key to another table's primary key is a relation; its value stays the key's text.
  if (column.references !== null && typeClass !== 'unsupported') {
    typeClass = 'relation';
    details.target_table = column.references;
    details.allows_multiple_values = false;
  }
  const supported = typeClass !== 'unsupported';
  if (column.generated || column.autoIncrement) details.generated = true;
  const write = supported && !column.inView && !column.generated && !column.autoIncrement;
  return {
    name: column.name,
    type: base.type,
    typeClass,
    storage: base.storage,
    read: supported,
    write,
    required: write && !column.nullable && !column.hasDefault,
    primary: column.primary,
    typeDetails: Object.keys(details).length > 0 ? details : null,
  };
}

/* ------------------------------------------------------------------------------------------------ */
/* Reading: driver values (mysql2 with dateStrings, bigNumberStrings, jsonStrings) -> canonical form   */
/* ------------------------------------------------------------------------------------------------ */

/** Drops trailing zeros of a fraction (".500000" -> ".5", ".000" -> ""), the canonical spelling. */
function trimFraction(text: string): string {
  return text.replace(/\.(\d*?)0+$/, (_match, digits: string) => (digits.length > 0 ? `.${digits}` : ''));
}

function integerValue(raw: unknown): CanonicalValue {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'bigint') return Number.isSafeInteger(Number(raw)) ? Number(raw) : raw.toString();
  const text = String(raw);
  const asNumber = Number(text);
  return Number.isSafeInteger(asNumber) && /^-?\d+$/.test(text) ? asNumber : text;
}

function bufferToBigInt(buffer: Buffer): bigint {
  let value = 0n;
  for (const byte of buffer) value = (value << 8n) | BigInt(byte);
  return value;
}

function parseJson(raw: unknown): JsonValue {
  if (typeof raw !== 'string') return raw as JsonValue;
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return raw;
  }
}

/** Converts one non-null driver value of a column to its canonical value. */
export type Decoder = (raw: unknown) => CanonicalValue;

const asText: Decoder = (raw) => String(raw);
const DECODERS: Readonly<Record<Storage, Decoder>> = Object.freeze({
  text: asText,
  enum: asText,
  interval: asText,
  decimal: asText,
  integer: integerValue,
  bit_integer: (raw: unknown) => integerValue(Buffer.isBuffer(raw) ? bufferToBigInt(raw) : raw),
  float: (raw: unknown) => (typeof raw === 'number' ? raw : Number(raw)),
  bool_int: (raw: unknown) => Number(raw) !== 0,
  bool_bit: (raw: unknown) => (Buffer.isBuffer(raw) ? bufferToBigInt(raw) !== 0n : Number(raw) !== 0),
  date: (raw: unknown) => {
    const text = String(raw);
    return text.startsWith('0000-00-00') ? null : text;
  },
  time: (raw: unknown) => trimFraction(String(raw)),
  datetime: (raw: unknown) => {
    const text = String(raw);
    return text.startsWith('0000-00-00') ? null : trimFraction(text.replace(' ', 'T'));
  },
  // Every connection runs with time_zone '+00:00', so TIMESTAMP text is UTC; marked DATETIME columns hold UTC.
  timestamp: utcDateTime,
  datetime_utc: utcDateTime,
  uuid: (raw: unknown) => String(raw).toLowerCase(),
  json: parseJson,
  json_array: parseJson,
  json_multi_select: (raw: unknown) => {
    const value = parseJson(raw);
    return Array.isArray(value) ? value.map((item) => String(item)) : [];
  },
  set: (raw: unknown) => {
    const text = String(raw);
    return text === '' ? [] : text.split(',');
  },
  unsupported: () => null,
});

function utcDateTime(raw: unknown): CanonicalValue {
  const text = String(raw);
  if (text.startsWith('0000-00-00')) return null;
  // `YYYY-MM-DD HH:MM:SS` (no fraction, the common case) needs no regex.
  if (text.length === 19) return `${text.slice(0, 10)}T${text.slice(11)}Z`;
  return `${trimFraction(text.replace(' ', 'T'))}Z`;
}

// A relation's value is the target record's remote id, which is the key's text (see keyText()).
const relation: Decoder = (raw) => keyText(raw);

/** The decoder of a column (what `decodeValue` does, chosen once per column rather than per value). */
export function decoderFor(column: Pick<ClassifiedColumn, 'storage' | 'typeClass'>): Decoder {
  return column.typeClass === 'relation' ? relation : DECODERS[column.storage];
}

/** The canonical value of one driver value of a column. */
export function decodeValue(
  column: Pick<ClassifiedColumn, 'storage' | 'typeClass'>,
  raw: unknown,
): CanonicalValue {
  if (raw === null || raw === undefined) return null;
  return decoderFor(column)(raw);
}

/** The text of a key value as the driver returns it: a record's remote id, and a relation's value. */
export function keyText(raw: unknown): string {
  if (Buffer.isBuffer(raw)) return raw.toString('hex');
  return String(raw);
}

/* ------------------------------------------------------------------------------------------------ */
/* Writing: canonical values -> driver parameters                                                    */
/* ------------------------------------------------------------------------------------------------ */

/** A value that cannot be written to a column (becomes ConnectorError kind `invalid_data` for that row). */
export class ValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ValueError';
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^-?\d{1,3}:\d{2}(:\d{2}(\.\d{1,6})?)?$/;
const DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

/**
 * `YYYY-MM-DD HH:MM:SS[.ffffff]` for MySQL. An explicit zone (Z or an offset) is converted to UTC; a value
 * without a zone is taken as it is (UTC for timestamp columns, wall clock for datetime columns).
 */
export function toMysqlDateTime(value: string): string {
  const match = DATETIME.exec(value.trim());
  if (!match) throw new ValueError(`"${value}" is not a date and time (YYYY-MM-DDTHH:MM:SS)`);
  const [, y, mo, d, h, mi, s = '00', fraction = '', zone = ''] = match;
  let offsetMinutes = 0;
  if (zone !== '' && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMinutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
  }
  if (offsetMinutes === 0) return `${y}-${mo}-${d} ${h}:${mi}:${s}${fraction}`;
  const date = new Date(0);
  date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  date.setUTCHours(Number(h), Number(mi) - offsetMinutes, Number(s), 0);
  return (
    `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}${fraction}`
  );
}

function expectString(value: CanonicalValue, what: string): string {
  if (typeof value !== 'string') throw new ValueError(`expected ${what} as a string, got ${describe(value)}`);
  return value;
}

function describe(value: CanonicalValue): string {
  if (Array.isArray(value)) return 'an array';
  return value === null ? 'null' : typeof value;
}

function integerParam(value: CanonicalValue): number | bigint {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new ValueError(`${value} is not an integer`);
    return value;
  }
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return BigInt(value.trim());
  if (typeof value === 'boolean') return value ? 1 : 0;
  throw new ValueError(`${JSON.stringify(value)} is not an integer`);
}

/**
 * The driver parameter for a canonical value written to a column. `null` stays `null`. Throws ValueError
 * for a value of the wrong shape; the database itself checks ranges, lengths and options (strict mode).
 */
export function encodeValue(
  column: Pick<ClassifiedColumn, 'storage' | 'typeClass' | 'name'>,
  value: CanonicalValue,
): unknown {
  if (value === null || value === undefined) return null;
  try {
    return encode(column, value);
  } catch (error) {
    if (error instanceof ValueError) throw new ValueError(`Field "${column.name}": ${error.message}`);
    throw error;
  }
}

function encode(column: Pick<ClassifiedColumn, 'storage' | 'typeClass'>, value: CanonicalValue): unknown {
  if (column.typeClass === 'relation' && column.storage !== 'json_array') {
    if (typeof value === 'number') return value;
    return expectString(value, 'a record id');
  }
  switch (column.storage) {
    case 'text':
    case 'enum':
    case 'interval':
      return expectString(value, 'text');
    case 'uuid': {
      const text = expectString(value, 'a uuid').toLowerCase();
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(text))
        throw new ValueError(`"${value}" is not a uuid`);
      return text;
    }
    case 'integer':
    case 'bit_integer':
      return integerParam(value);
    case 'decimal':
      if (typeof value === 'number' && Number.isFinite(value)) return String(value);
      if (typeof value === 'string' && /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(value.trim()))
        return value.trim();
      throw new ValueError(`${JSON.stringify(value)} is not a decimal number`);
    case 'float': {
      const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof number !== 'number' || !Number.isFinite(number))
        throw new ValueError(`${JSON.stringify(value)} is not a finite number`);
      return number;
    }
    case 'bool_int':
    case 'bool_bit':
      if (typeof value === 'boolean') return value ? 1 : 0;
      if (value === 0 || value === 1) return value;
      throw new ValueError(`${JSON.stringify(value)} is not a boolean`);
    case 'date': {
      const text = expectString(value, 'a date');
      if (!DATE.test(text)) throw new ValueError(`"${text}" is not a date (YYYY-MM-DD)`);
      return text;
    }
    case 'time': {
      const text = expectString(value, 'a time');
      if (!TIME.test(text)) throw new ValueError(`"${text}" is not a time (HH:MM:SS)`);
      return text;
    }
    case 'datetime':
    case 'timestamp':
    case 'datetime_utc':
      return toMysqlDateTime(expectString(value, 'a date and time'));
    case 'json':
      return JSON.stringify(value);
    case 'json_array':
      if (!Array.isArray(value)) throw new ValueError(`expected an array, got ${describe(value)}`);
      return JSON.stringify(value);
    case 'json_multi_select':
      return JSON.stringify(stringArray(value));
    case 'set': {
      const items = stringArray(value);
      const bad = items.find((item) => item.includes(','));
      if (bad !== undefined)
        throw new ValueError(`option "${bad}" contains a comma, which a SET cannot hold`);
      return items.join(',');
    }
    case 'unsupported':
      throw new ValueError('this column type cannot be written');
  }
}

function stringArray(value: CanonicalValue): string[] {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw new ValueError(`expected a list of options (strings), got ${JSON.stringify(value)}`);
  }
  return value as string[];
}

/* ------------------------------------------------------------------------------------------------ */
/* Creating: canonical class (+ the counterpart's details) -> native column definition              */
/* ------------------------------------------------------------------------------------------------ */

export interface ServerInfo {
  flavor: ServerFlavor;
  version: [number, number, number];
}

export function parseServerVersion(text: string): ServerInfo {
  const flavor: ServerFlavor = /mariadb/i.test(text) ? 'mariadb' : 'mysql';
  const match = /(\d+)\.(\d+)\.(\d+)/.exec(text.replace(/^5\.5\.5-/, ''));
  const version: [number, number, number] = match
    ? [Number(match[1]), Number(match[2]), Number(match[3])]
    : [0, 0, 0];
  return { flavor, version };
}

export function atLeast(server: ServerInfo, major: number, minor: number, patch = 0): boolean {
  const [a, b, c] = server.version;
  return a !== major ? a > major : b !== minor ? b > minor : c >= patch;
}

/** MariaDB 10.7+ has a native UUID type. */
export function hasUuidType(server: ServerInfo): boolean {
  return server.flavor === 'mariadb' && atLeast(server, 10, 7);
}

/** `DEFAULT (uuid())`: MariaDB 10.2.1+, MySQL 8.0.13+. */
export function hasExpressionDefaults(server: ServerInfo): boolean {
  return server.flavor === 'mariadb' ? atLeast(server, 10, 2, 1) : atLeast(server, 8, 0, 13);
}

/** INVISIBLE columns (left out of `SELECT *` and of `INSERT` without a column list): MariaDB 10.3.3+, MySQL 8.0.23+. */
export function hasInvisibleColumns(server: ServerInfo): boolean {
  return server.flavor === 'mariadb' ? atLeast(server, 10, 3, 3) : atLeast(server, 8, 0, 23);
}

/** Default precision and scale of a decimal whose counterpart did not say (numeric without a modifier). */
export const DEFAULT_DECIMAL = Object.freeze({ precision: 38, scale: 10 });

function positiveInt(value: unknown): number | null {
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number > 0 ? number : null;
}

function options(details: Record<string, unknown> | null | undefined): string[] | null {
  const list = details?.options;
  if (!Array.isArray(list) || list.length === 0) return null;
  const names = list.map((item) =>
    typeof item === 'string'
      ? item
      : typeof item === 'object' && item !== null && 'name' in item
        ? String((item as { name: unknown }).name)
        : String(item),
  );
  return [...new Set(names)];
}

/**
 * The column type (and marker comment) for a field Lockstep creates, the closest native type to the
 * counterpart's class and details. Returns null for a class that cannot be created (`unsupported`).
 */
export function nativeColumnType(
  spec: Pick<FieldSpec, 'typeClass' | 'typeDetails'>,
  server: ServerInfo,
): { sql: string; comment: string | null } | null {
  const details = spec.typeDetails ?? null;
  switch (spec.typeClass) {
    case 'text': {
      const maxLength = positiveInt(details?.max_length);
      return {
        sql: maxLength !== null && maxLength <= 1024 ? `VARCHAR(${maxLength})` : 'TEXT',
        comment: null,
      };
    }
    case 'integer':
      return { sql: 'BIGINT', comment: null };
    case 'decimal': {
      const precision = Math.min(positiveInt(details?.precision) ?? DEFAULT_DECIMAL.precision, 65);
      const givenScale = typeof details?.scale === 'number' && details.scale >= 0 ? details.scale : null;
      const scale = Math.min(
        givenScale ?? (details?.precision !== undefined ? 0 : DEFAULT_DECIMAL.scale),
        30,
        precision,
      );
      return { sql: `DECIMAL(${precision},${scale})`, comment: null };
    }
    case 'float':
      return { sql: 'DOUBLE', comment: null };
    case 'boolean':
      return { sql: 'TINYINT(1)', comment: null };
    case 'date':
      return { sql: 'DATE', comment: null };
    case 'time':
      return { sql: 'TIME(6)', comment: null };
    case 'datetime':
      return { sql: 'DATETIME(6)', comment: null };
    case 'timestamp':
      // TIMESTAMP stops in 2038; a DATETIME(6) holding UTC, marked so it reads back as an instant, does not.
      return { sql: 'DATETIME(6)', comment: 'lockstep:timestamp' };
    case 'interval':
      return { sql: 'VARCHAR(64)', comment: 'lockstep:interval' };
    case 'uuid':
      return hasUuidType(server)
        ? { sql: 'UUID', comment: null }
        : { sql: 'CHAR(36) CHARACTER SET ascii', comment: 'lockstep:uuid' };
    case 'json':
      return { sql: 'JSON', comment: null };
    case 'select': {
      const list = options(details);
      return list
        ? { sql: `ENUM(${list.map(quoteString).join(',')})`, comment: null }
        : { sql: 'VARCHAR(255)', comment: null };
    }
    case 'multi_select': {
      const list = options(details);
      if (list && list.length <= 64 && list.every((item) => !item.includes(',')))
        return { sql: `SET(${list.map(quoteString).join(',')})`, comment: null };
      return { sql: 'JSON', comment: 'lockstep:multi_select' };
    }
    case 'array': {
      const element =
        typeof details?.element_class === 'string' && isTypeClass(details.element_class)
          ? details.element_class
          : 'json';
      return { sql: 'JSON', comment: `lockstep:array:${element}` };
    }
    case 'relation':
      // The target table on this side is not known when the field is created: the linked record's id as text.
      return { sql: 'VARCHAR(255)', comment: null };
    case 'unsupported':
      return null;
  }
}
