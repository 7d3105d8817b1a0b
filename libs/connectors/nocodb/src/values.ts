/**
 * Cell values between NocoDB's data API v2 JSON and the canonical form of `libs/domain/src/types/type-class.ts`,
 * as NocoDB 0.301 answers them (checked in `types.spec.ts` against the real server): a DateTime reads
 * `2024-02-29 13:45:30+00:00`, a Duration reads seconds and is written `H:MM:SS`, a MultiSelect reads `a,b`,
 * a Decimal reads a number. A value NocoDB could not hold is refused here with kind `invalid_data` naming the
 * field and the value's problem, before any request. Links are written through the links API (`links.ts`).
 */
import { ConnectorError } from '@lockstep/connectors-core';
import type { CanonicalValue, JsonValue } from '@lockstep/domain';
import type { NocodbColumn } from './sql';
import { classOf, COMPUTED_TYPES, metaOf, scaleOf } from './types';

export function decodeValue(column: NocodbColumn, raw: unknown): CanonicalValue {
  if (column.uidt === 'Checkbox') return raw === true || raw === 1 || raw === '1' || raw === 'true';
  if (raw === undefined || raw === null) return null;
  switch (classOf(column)) {
    case 'integer':
      return typeof raw === 'number' ? raw : /^-?\d+$/.test(String(raw)) ? safeInteger(String(raw)) : null;
    case 'decimal':
      return decimalText(raw, scaleOf(column));
    case 'float':
      return Number(raw);
    case 'interval':
      return secondsToDuration(Number(raw));
    case 'timestamp':
      return canonicalInstant(String(raw));
    case 'date':
      return String(raw).slice(0, 10);
    case 'multi_select':
      return multiSelectOut(raw);
    case 'json':
      return column.uidt === 'Attachment' ? attachmentsOut(raw) : (raw as JsonValue);
    case 'text':
      return typeof raw === 'string' ? raw : JSON.stringify(raw);
    default:
      return raw as CanonicalValue;
  }
}

function safeInteger(text: string): number | string {
  const number = Number(text);
  return Number.isSafeInteger(number) ? number : text;
}

/** A decimal as exact text with at least `scale` digits after the point (NocoDB keeps more when written). */
function decimalText(raw: unknown, scale: number): string {
  const text = typeof raw === 'number' ? String(raw) : String(raw).trim();
  if (!/^-?\d+(\.\d+)?$/.test(text)) return typeof raw === 'number' ? raw.toFixed(scale) : text;
  const [whole, fraction = ''] = text.split('.');
  const digits = fraction.length >= scale ? fraction : fraction.padEnd(scale, '0');
  return digits ? `${whole}.${digits}` : whole!;
}

/** `2024-02-29 13:45:30+00:00` -> `2024-02-29T13:45:30Z` (the fraction only when it is not zero). */
function canonicalInstant(text: string): string {
  const time = Date.parse(text.includes('T') ? text : text.replace(' ', 'T'));
  if (Number.isNaN(time)) return text;
  return new Date(time).toISOString().replace('.000Z', 'Z');
}

function multiSelectOut(raw: unknown): string[] | null {
  const items = Array.isArray(raw) ? raw.map(String) : String(raw).split(',');
  const options = items.map((item) => item.trim()).filter((item) => item !== '');
  return options.length > 0 ? options : null;
}

/** Attachments cross as `{ url, filename, size, type }`; NocoDB's ids, thumbnails and signed URLs stay there. */
function attachmentsOut(raw: unknown): JsonValue {
  const list = typeof raw === 'string' ? safeJson(raw) : raw;
  if (!Array.isArray(list)) return null;
  return list.map((item: Record<string, unknown>) => ({
    url: String(item.url ?? item.signedUrl ?? item.path ?? ''),
    filename: String(item.title ?? ''),
    size: typeof item.size === 'number' ? item.size : null,
    type: typeof item.mimetype === 'string' ? item.mimetype : null,
  }));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function refuse(column: NocodbColumn, problem: string): never {
  throw new ConnectorError('invalid_data', `Field "${column.title}" (${column.uidt}): ${problem}`, {
    appCode: 'ERR_INVALID_VALUE_FOR_FIELD',
  });
}

function describe(value: CanonicalValue): string {
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 60)}...` : text;
}

/**
 * The JSON NocoDB takes for a canonical value (null clears the cell), in a create or an update: NocoDB 0.301
 * reads a Duration as `H:MM:SS` text in a create (a number there fails the request) but as seconds in an
 * update (where the text reads as nothing). Not for links (`links.ts`).
 */
export function encodeValue(column: NocodbColumn, value: CanonicalValue, mode: 'create' | 'update'): unknown {
  if (COMPUTED_TYPES.has(column.uidt)) refuse(column, 'NocoDB computes this field; it cannot be written');
  if (value === null) return column.uidt === 'Checkbox' ? false : null;
  switch (classOf(column)) {
    case 'text':
      if (typeof value !== 'string') refuse(column, `expected text, got ${describe(value)}`);
      return value;
    case 'integer':
      return integerIn(column, value);
    case 'decimal':
    case 'float':
      return numberIn(column, value);
    case 'interval':
      if (typeof value !== 'string') refuse(column, `expected an ISO 8601 duration, got ${describe(value)}`);
      if (mode === 'update') return durationToSeconds(column, value);
      return clockText(column, durationToSeconds(column, value), Number(metaOf(column).duration ?? 0));
    case 'boolean':
      if (typeof value !== 'boolean') refuse(column, `expected true or false, got ${describe(value)}`);
      return value;
    case 'date':
      if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value))
        refuse(column, `expected a date YYYY-MM-DD, got ${describe(value)}`);
      return value;
    case 'time':
      if (typeof value !== 'string' || !/^\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value))
        refuse(column, `expected a time HH:MM:SS, got ${describe(value)}`);
      return value;
    case 'timestamp':
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value)))
        refuse(column, `expected an ISO 8601 instant, got ${describe(value)}`);
      // A wall-clock time without a zone (a `datetime` counterpart) is taken as UTC, never as local time.
      return new Date(/(Z|[+-]\d\d:?\d\d)$/.test(value) ? value : `${value}Z`).toISOString();
    case 'select':
      if (typeof value !== 'string') refuse(column, `expected one option, got ${describe(value)}`);
      return value;
    case 'multi_select':
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item.includes(',')))
        refuse(column, `expected a list of options without commas, got ${describe(value)}`);
      return value.length > 0 ? value.join(',') : null;
    case 'json':
      return jsonIn(column, value);
    default:
      return refuse(column, 'this field type cannot be written');
  }
}

function integerIn(column: NocodbColumn, value: CanonicalValue): number {
  const number = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number))
    refuse(column, `expected an integer, got ${describe(value)}`);
  if (!Number.isSafeInteger(number))
    refuse(column, `${describe(value)} is beyond the integers NocoDB's JSON holds exactly (2^53)`);
  return number;
}

function numberIn(column: NocodbColumn, value: CanonicalValue): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number))
    refuse(column, `expected a number, got ${describe(value)}`);
  return number;
}

function jsonIn(column: NocodbColumn, value: CanonicalValue): unknown {
  if (column.uidt === 'Attachment') {
    if (!Array.isArray(value)) refuse(column, `expected a list of attachments, got ${describe(value)}`);
    return value.map((item) => {
      const { url, filename, size, type } = (item ?? {}) as Record<string, unknown>;
      if (typeof url !== 'string' || url === '') refuse(column, 'an attachment needs a url');
      return {
        url,
        ...(typeof filename === 'string' && filename !== '' ? { title: filename } : {}),
        ...(typeof size === 'number' ? { size } : {}),
        ...(typeof type === 'string' ? { mimetype: type } : {}),
      };
    });
  }
  if (column.uidt === 'User') {
    const users = Array.isArray(value) ? value : [value];
    return users.map((user) => {
      const { id, email } = (user ?? {}) as { id?: unknown; email?: unknown };
      if (typeof id === 'string') return { id };
      if (typeof email === 'string') return { email };
      return refuse(column, `expected users { id } or { email }, got ${describe(value)}`);
    });
  }
  return value;
}

const DURATION =
  /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** An ISO 8601 duration in days, hours, minutes and seconds -> whole seconds. */
export function durationToSeconds(column: NocodbColumn, text: string): number {
  const match = DURATION.exec(text);
  if (!match || text === 'P' || text.endsWith('T'))
    refuse(column, `expected a duration in days, hours, minutes and seconds (P1DT2H), got ${text}`);
  const [, days, hours, minutes, seconds] = match.map((part) => Number(part ?? 0));
  const total = days! * 86_400 + hours! * 3600 + minutes! * 60 + seconds!;
  if (!Number.isInteger(total)) refuse(column, `NocoDB keeps whole seconds, got ${text}`);
  return total;
}

/**
 * Seconds -> the text NocoDB's API takes for a Duration in the field's format (a bare number would be
 * minutes): `H:MM` for format 0 (h:mm, which keeps no seconds: a value with seconds is refused rather than
 * cut), `H:MM:SS` for the others.
 */
function clockText(column: NocodbColumn, seconds: number, format: number): string {
  if (seconds < 0) refuse(column, 'NocoDB keeps no negative durations');
  const h = Math.floor(seconds / 3600);
  const m = String(Math.floor((seconds % 3600) / 60)).padStart(2, '0');
  const s = seconds % 60;
  if (format === 0) {
    if (s !== 0) refuse(column, "the field's format (h:mm) keeps whole minutes");
    return `${h}:${m}`;
  }
  return `${h}:${m}:${String(s).padStart(2, '0')}`;
}

/** Seconds -> `P1DT2H30M5S` (days for whole 24 hours; `PT0S` for zero). */
export function secondsToDuration(total: number): string {
  if (!Number.isFinite(total)) return 'PT0S';
  let rest = Math.round(Math.abs(total) * 1000) / 1000;
  const days = Math.floor(rest / 86_400);
  rest -= days * 86_400;
  const hours = Math.floor(rest / 3600);
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  const seconds = Math.round((rest - minutes * 60) * 1000) / 1000;
  const time = `${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${seconds ? `${seconds}S` : ''}`;
  const day = days ? `${days}D` : '';
  if (!day && !time) return 'PT0S';
  return `${total < 0 ? '-' : ''}P${day}${time ? `T${time}` : ''}`;
}
