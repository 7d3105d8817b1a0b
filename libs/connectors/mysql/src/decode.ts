/**
 * Reading: driver values (mysql2 with dateStrings, bigNumberStrings, jsonStrings) -> their canonical form,
 * by the column's storage (types.ts).
 */
import type { CanonicalValue, JsonValue } from '@lockstep/domain';
import type { ClassifiedColumn, Storage } from './types';

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
  // Every connection runs with time_zone '+00:00', so TIMESTAMP text is UTC; marked DATETIME columns hold
  // UTC.
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
