/**
 * Writing: canonical values -> driver parameters, by the column's storage (types.ts). The database itself
 * checks ranges, lengths and options (the session runs in strict mode, db.ts).
 */
import type { CanonicalValue } from '@lockstep/domain';
import type { ClassifiedColumn } from './types';

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

/** The canonical form of a time in UTC (what connectors read): the general path gives the same text. */
const CANONICAL_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z$/;

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

/**
 * `YYYY-MM-DD HH:MM:SS[.ffffff]` for MySQL. An explicit zone (Z or an offset) is converted to UTC; a value
 * without a zone is taken as it is (UTC for timestamp columns, wall clock for datetime columns).
 */
export function toMysqlDateTime(value: string): string {
  if (CANONICAL_UTC.test(value)) return `${value.slice(0, 10)} ${value.slice(11, -1)}`;
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
