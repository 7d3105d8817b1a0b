/**
 * Cell values between Airtable's JSON (https://airtable.com/developers/web/api/field-model) and the canonical
 * form of `libs/domain/src/types/type-class.ts`. Airtable omits empty cells: an absent cell reads as null
 * (a checkbox's as false). A value Airtable could not hold is refused here with kind `invalid_data` naming the
 * field and the value's problem, before any request.
 */
import { ConnectorError } from '@lockstep/connectors-core';
import type { CanonicalValue, JsonValue } from '@lockstep/domain';
import type { AirtableField } from './sql';
import { classOf, COMPUTED_TYPES, linksMany, precisionOf, type TypeSpec } from './types';

export function decodeValue(spec: TypeSpec, raw: unknown): CanonicalValue {
  if (spec.type === 'checkbox') return raw === true;
  if (raw === undefined || raw === null) return null;
  if (spec.type === 'formula' || spec.type === 'rollup') {
    const result = spec.options?.result as TypeSpec | undefined;
    if (result?.type && !Array.isArray(raw)) return decodeValue(result, raw);
    return typeof raw === 'object' ? (raw as JsonValue) : String(raw);
  }
  switch (classOf(spec)) {
    case 'integer':
      return typeof raw === 'number' ? Math.round(raw) : Number(raw);
    case 'decimal':
      return typeof raw === 'number' ? raw.toFixed(precisionOf(spec)) : String(raw);
    case 'float':
      return Number(raw);
    case 'interval':
      return secondsToDuration(Number(raw));
    case 'timestamp':
      return canonicalInstant(String(raw));
    case 'relation': {
      const ids = Array.isArray(raw) ? raw.map(String) : [String(raw)];
      return linksMany(spec) ? ids : (ids[0] ?? null);
    }
    case 'json':
      return spec.type === 'multipleAttachments' ? attachmentsOut(raw) : (raw as JsonValue);
    default:
      return raw as CanonicalValue;
  }
}

/** `2024-02-29T13:45:30.000Z` -> `2024-02-29T13:45:30Z` (the fraction only when it is not zero). */
function canonicalInstant(text: string): string {
  const time = Date.parse(text);
  if (Number.isNaN(time)) return text;
  return new Date(time).toISOString().replace('.000Z', 'Z');
}

/** Attachments cross as `{ url, filename, size, type }`; Airtable's ids and thumbnails stay in Airtable. */
function attachmentsOut(raw: unknown): JsonValue {
  if (!Array.isArray(raw)) return null;
  return raw.map((item: Record<string, unknown>) => ({
    url: String(item.url ?? ''),
    filename: String(item.filename ?? ''),
    size: typeof item.size === 'number' ? item.size : null,
    type: typeof item.type === 'string' ? item.type : null,
  }));
}

function refuse(field: AirtableField, problem: string): never {
  throw new ConnectorError('invalid_data', `Field "${field.name}" (${field.type}): ${problem}`, {
    appCode: 'INVALID_VALUE_FOR_COLUMN',
  });
}

/** The JSON Airtable takes for a canonical value (null clears the cell). */
export function encodeValue(field: AirtableField, value: CanonicalValue): unknown {
  if (COMPUTED_TYPES.has(field.type)) refuse(field, 'Airtable computes this field; it cannot be written');
  if (value === null) return field.type === 'checkbox' ? false : null;
  switch (classOf(field)) {
    case 'text':
      if (typeof value !== 'string') refuse(field, `expected text, got ${describe(value)}`);
      return value;
    case 'integer':
      return integerIn(field, value);
    case 'decimal':
    case 'float':
      return numberIn(field, value);
    case 'interval':
      if (typeof value !== 'string') refuse(field, `expected an ISO 8601 duration, got ${describe(value)}`);
      return durationToSeconds(field, value);
    case 'boolean':
      if (typeof value !== 'boolean') refuse(field, `expected true or false, got ${describe(value)}`);
      return value;
    case 'date':
      if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value))
        refuse(field, `expected a date YYYY-MM-DD, got ${describe(value)}`);
      return value;
    case 'timestamp':
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value)))
        refuse(field, `expected an ISO 8601 instant, got ${describe(value)}`);
      // A wall-clock time without a zone (a `datetime` counterpart) is taken as UTC, never as local time.
      return new Date(/(Z|[+-]\d\d:?\d\d)$/.test(value) ? value : `${value}Z`).toISOString();
    case 'select':
      if (typeof value !== 'string') refuse(field, `expected one option, got ${describe(value)}`);
      return value;
    case 'multi_select':
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
        refuse(field, `expected a list of options, got ${describe(value)}`);
      return value;
    case 'relation':
      return linksIn(field, value);
    case 'json':
      return jsonIn(field, value);
    default:
      return refuse(field, 'this field type cannot be written');
  }
}

function describe(value: CanonicalValue): string {
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 60)}...` : text;
}

function integerIn(field: AirtableField, value: CanonicalValue): number {
  const number = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number))
    refuse(field, `expected an integer, got ${describe(value)}`);
  if (!Number.isSafeInteger(number))
    refuse(field, `${describe(value)} is beyond the integers Airtable holds exactly (2^53)`);
  return number;
}

function numberIn(field: AirtableField, value: CanonicalValue): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number))
    refuse(field, `expected a number, got ${describe(value)}`);
  return number;
}

function linksIn(field: AirtableField, value: CanonicalValue): string[] {
  const ids = Array.isArray(value) ? value : [value];
  if (ids.some((id) => typeof id !== 'string' || !/^rec[A-Za-z0-9]+$/.test(id)))
    refuse(field, `expected record ids (rec...), got ${describe(value)}`);
  return ids as string[];
}

function jsonIn(field: AirtableField, value: CanonicalValue): unknown {
  switch (field.type) {
    case 'multipleAttachments':
      if (!Array.isArray(value)) refuse(field, `expected a list of attachments, got ${describe(value)}`);
      return value.map((item) => {
        const { url, filename } = (item ?? {}) as { url?: unknown; filename?: unknown };
        if (typeof url !== 'string' || url === '') refuse(field, 'an attachment needs a url');
        return typeof filename === 'string' && filename !== '' ? { url, filename } : { url };
      });
    case 'singleCollaborator':
      return collaboratorIn(field, value);
    case 'multipleCollaborators':
      if (!Array.isArray(value)) refuse(field, `expected a list of collaborators, got ${describe(value)}`);
      return value.map((item) => collaboratorIn(field, item));
    case 'barcode':
      if (
        typeof value !== 'object' ||
        value === null ||
        Array.isArray(value) ||
        typeof value.text !== 'string'
      )
        return refuse(field, `expected a barcode { text }, got ${describe(value)}`);
      return { text: value.text };
    default:
      return refuse(field, 'this field type cannot be written');
  }
}

/** A collaborator is written by its user id or email (https://airtable.com/developers/web/api/field-model). */
function collaboratorIn(field: AirtableField, value: JsonValue): { id: string } | { email: string } {
  const { id, email } = (value ?? {}) as { id?: unknown; email?: unknown };
  if (typeof id === 'string') return { id };
  if (typeof email === 'string') return { email };
  return refuse(field, `expected a collaborator { id } or { email }, got ${describe(value)}`);
}

const DURATION =
  /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** An ISO 8601 duration in days, hours, minutes and seconds -> seconds (Airtable's duration unit). */
export function durationToSeconds(field: AirtableField, text: string): number {
  const match = DURATION.exec(text);
  if (!match || text === 'P' || text.endsWith('T'))
    refuse(field, `expected a duration in days, hours, minutes and seconds (P1DT2H), got ${text}`);
  const [, days, hours, minutes, seconds] = match.map((part) => Number(part ?? 0));
  return days! * 86_400 + hours! * 3600 + minutes! * 60 + seconds!;
}

/** Seconds -> `P1DT2H30M5.5S` (days for whole 24 hours; `PT0S` for zero). */
export function secondsToDuration(total: number): string {
  if (!Number.isFinite(total)) return 'PT0S';
  const sign = total < 0 ? '-' : '';
  let rest = Math.abs(total);
  const days = Math.floor(rest / 86_400);
  rest -= days * 86_400;
  const hours = Math.floor(rest / 3600);
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  const seconds = Math.round((rest - minutes * 60) * 1000) / 1000;
  const time = `${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${seconds ? `${seconds}S` : ''}`;
  const day = days ? `${days}D` : '';
  if (!day && !time) return 'PT0S';
  return `${sign}P${day}${time ? `T${time}` : ''}`;
}
