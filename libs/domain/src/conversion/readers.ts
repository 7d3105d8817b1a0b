/**
 * Readers the conversion table uses: a field's `type_details` (limits, options, element type) and source
 * values of the expected shape (a value of the wrong shape fails instead of converting garbage).
 */
import { isTypeClass, type JsonValue } from '../types/type-class';
import type { FieldTypeInfo, Present } from './conversion';
import { DecimalLimits, Outcome, parseDecimal, parseDateTime, show, toUtc } from './values';

// ---------------------------------------------------------------------------------------------------------
// type_details readers

export function detailNumber(info: FieldTypeInfo, key: string): number | null {
  const value = info.typeDetails?.[key];
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
}

export function detailOptions(info: FieldTypeInfo): string[] | null {
  const value = info.typeDetails?.['options'];
  return Array.isArray(value) && value.every((option) => typeof option === 'string')
    ? (value as string[])
    : null;
}

export function allowsMultiple(info: FieldTypeInfo): boolean {
  return info.typeDetails?.['allows_multiple_values'] === true;
}

/** The element type of an array field; an unknown element class is read as JSON (any value). */
export function elementOf(info: FieldTypeInfo): FieldTypeInfo {
  const element = info.typeDetails?.['element_class'];
  return { typeClass: isTypeClass(element) ? element : 'json', typeDetails: null };
}

export function decimalLimits(info: FieldTypeInfo): DecimalLimits {
  return { precision: detailNumber(info, 'precision'), scale: detailNumber(info, 'scale') };
}

export const TEXT: FieldTypeInfo = { typeClass: 'text', typeDetails: null };
export const JSON_ELEMENTS: FieldTypeInfo = { typeClass: 'array', typeDetails: { element_class: 'json' } };

// ---------------------------------------------------------------------------------------------------------
// Readers of source values (defensive: a value of the wrong shape fails instead of converting garbage)

export function readString(value: Present, what: string): Outcome<string> {
  return typeof value === 'string'
    ? { ok: true, value }
    : { ok: false, reason: `${show(value)} is not ${what}` };
}

export function readFloat(value: Present): Outcome<number> {
  if (typeof value !== 'number') return { ok: false, reason: `${show(value)} is not a number` };
  if (!Number.isFinite(value)) return { ok: false, reason: `${show(value)} is not a finite number` };
  return { ok: true, value: value === 0 ? 0 : value };
}

export function readBoolean(value: Present): Outcome<boolean> {
  return typeof value === 'boolean'
    ? { ok: true, value }
    : { ok: false, reason: `${show(value)} is not a boolean` };
}

export function readStringList(value: Present, what: string): Outcome<string[]> {
  if (!Array.isArray(value)) return { ok: false, reason: `${show(value)} is not a list of ${what}` };
  const items: string[] = [];
  for (const item of value) {
    if (item === null) continue;
    if (typeof item !== 'string') return { ok: false, reason: `${show(item)} is not ${what}` };
    items.push(item);
  }
  return { ok: true, value: items };
}

export function readDecimal(value: Present) {
  const text = readString(value, 'a decimal');
  return text.ok ? parseDecimal(text.value) : text;
}

/** A date and time as its UTC wall clock (a canonical datetime has no zone and stays as it is). */
export function readWallClock(value: Present) {
  const text = readString(value, 'a date and time');
  if (!text.ok) return text;
  const parts = parseDateTime(text.value);
  return parts.ok ? { ok: true as const, value: toUtc(parts.value) } : parts;
}

export function readList(value: Present): Outcome<JsonValue[]> {
  return Array.isArray(value) ? { ok: true, value } : { ok: false, reason: `${show(value)} is not an array` };
}

export function readRelation(value: Present): Outcome<string[]> {
  if (typeof value === 'string') return { ok: true, value: [value] };
  return readStringList(value, 'a linked record id');
}
