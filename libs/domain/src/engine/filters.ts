/**
 * Table-pair filters and the sync-enabled field (spec 2.8 `filter`, `advanced_settings` kind
 * `row_level_sync`). Both are edited only in the app and stored read-only on the table pair. A record that
 * fails them syncs in neither direction and shows `is_filtered` / `is_sync_disabled`; the update that makes
 * it fail is still synced; changing a filter never deletes anything (the engine enforces the last two).
 *
 * Condition shape: `{ side: 'left'|'right', field: <field ref>, operator, value? }`; a group is
 * `{ match: 'all'|'any', conditions: [...] }` and may nest. Operators: equals, not_equals, contains,
 * not_contains, is_empty, is_not_empty, greater_than, greater_or_equal, less_than, less_or_equal, in,
 * not_in, is_true, is_false. Comparisons of numbers are numeric, also when one or both are decimal text
 * ("9.5" < "10": decimal and big integer values travel as text); of other strings, ordinal (ISO dates and
 * timestamps compare correctly as strings).
 */
import type { CanonicalValue } from '../types/type-class';
import { canonicalEqual } from './merge';
import type { SideName } from '../mappings/schema';

export const FILTER_OPERATORS = [
  'equals',
  'not_equals',
  'contains',
  'not_contains',
  'is_empty',
  'is_not_empty',
  'greater_than',
  'greater_or_equal',
  'less_than',
  'less_or_equal',
  'in',
  'not_in',
  'is_true',
  'is_false',
] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export interface FilterCondition {
  side: SideName;
  field: string;
  operator: FilterOperator;
  value?: CanonicalValue;
}

export interface FilterGroup {
  match: 'all' | 'any';
  conditions: (FilterCondition | FilterGroup)[];
}

/** Looks up a field's value for the record (the engine resolves the field reference and the side). */
export type FieldLookup = (side: SideName, field: string) => CanonicalValue;

export type FilterParse = { ok: true; filter: FilterGroup | null } | { ok: false; reason: string };

function isGroup(value: unknown): value is { match: unknown; conditions: unknown } {
  return typeof value === 'object' && value !== null && 'conditions' in value;
}

/**
 * Validates a stored filter (null or absent: no filter). A malformed filter is reported, never guessed at.
 */
export function parseFilter(input: unknown): FilterParse {
  if (input === null || input === undefined) return { ok: true, filter: null };
  const visit = (node: unknown, path: string): FilterGroup | FilterCondition | string => {
    if (isGroup(node)) {
      const match = node.match ?? 'all';
      if (match !== 'all' && match !== 'any') return `${path}.match must be all or any`;
      if (!Array.isArray(node.conditions)) return `${path}.conditions must be an array`;
      const conditions: (FilterGroup | FilterCondition)[] = [];
      for (const [index, child] of node.conditions.entries()) {
        const parsed = visit(child, `${path}.conditions[${index}]`);
        if (typeof parsed === 'string') return parsed;
        conditions.push(parsed);
      }
      return { match, conditions };
    }
    if (typeof node !== 'object' || node === null) return `${path} must be a condition or a group`;
    const condition = node as Record<string, unknown>;
    if (condition['side'] !== 'left' && condition['side'] !== 'right')
      return `${path}.side must be left or right`;
    if (typeof condition['field'] !== 'string' || condition['field'] === '')
      return `${path}.field must name a field`;
    if (!(FILTER_OPERATORS as readonly unknown[]).includes(condition['operator']))
      return `${path}.operator is not one of ${FILTER_OPERATORS.join(', ')}`;
    return {
      side: condition['side'],
      field: condition['field'],
      operator: condition['operator'] as FilterOperator,
      value: (condition['value'] ?? null) as CanonicalValue,
    };
  };
  const parsed = visit(input, 'filter');
  if (typeof parsed === 'string') return { ok: false, reason: parsed };
  return { ok: true, filter: isGroupNode(parsed) ? parsed : { match: 'all', conditions: [parsed] } };
}

function isGroupNode(node: FilterGroup | FilterCondition): node is FilterGroup {
  return 'conditions' in node;
}

function isEmpty(value: CanonicalValue): boolean {
  return value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

const NUMERIC_TEXT = /^-?\d+(\.\d+)?$/;

/** Exact order of two decimal texts (decimal and big integer values travel as text): "9.5" < "10". */
function compareNumericText(a: string, b: string): number {
  const scale = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  const scaled = (text: string): bigint => {
    const [whole, fraction = ''] = text.replace('-', '').split('.');
    const magnitude = BigInt(whole + fraction.padEnd(scale, '0'));
    return text.startsWith('-') ? -magnitude : magnitude;
  };
  const x = scaled(a);
  const y = scaled(b);
  return x === y ? 0 : x < y ? -1 : 1;
}

function compare(a: CanonicalValue, b: CanonicalValue): number | null {
  if (a === null || b === null) return null;
  if (typeof a === 'string' && typeof b === 'string' && NUMERIC_TEXT.test(a) && NUMERIC_TEXT.test(b))
    return compareNumericText(a, b);
  const numberA =
    typeof a === 'number'
      ? a
      : typeof a === 'string' && NUMERIC_TEXT.test(a) && typeof b === 'number'
        ? Number(a)
        : null;
  const numberB =
    typeof b === 'number'
      ? b
      : typeof b === 'string' && NUMERIC_TEXT.test(b) && typeof a === 'number'
        ? Number(b)
        : null;
  if (numberA !== null && numberB !== null) return numberA === numberB ? 0 : numberA < numberB ? -1 : 1;
  if (typeof a === 'string' && typeof b === 'string') return a === b ? 0 : a < b ? -1 : 1;
  return null;
}

function looseEqual(a: CanonicalValue, b: CanonicalValue): boolean {
  if (canonicalEqual(a, b)) return true;
  const order = compare(a, b);
  return order === 0;
}

function contains(haystack: CanonicalValue, needle: CanonicalValue): boolean {
  if (Array.isArray(haystack)) return haystack.some((item) => looseEqual(item as CanonicalValue, needle));
  if (typeof haystack === 'string' && needle !== null)
    return haystack.toLowerCase().includes(String(needle).toLowerCase());
  return false;
}

function holds(condition: FilterCondition, value: CanonicalValue): boolean {
  const expected = condition.value ?? null;
  switch (condition.operator) {
    case 'equals':
      return looseEqual(value, expected);
    case 'not_equals':
      return !looseEqual(value, expected);
    case 'contains':
      return contains(value, expected);
    case 'not_contains':
      return !contains(value, expected);
    case 'is_empty':
      return isEmpty(value);
    case 'is_not_empty':
      return !isEmpty(value);
    case 'greater_than':
      return (compare(value, expected) ?? 0) > 0 && compare(value, expected) !== null;
    case 'greater_or_equal':
      return compare(value, expected) !== null && compare(value, expected)! >= 0;
    case 'less_than':
      return compare(value, expected) !== null && compare(value, expected)! < 0;
    case 'less_or_equal':
      return compare(value, expected) !== null && compare(value, expected)! <= 0;
    case 'in':
      return Array.isArray(expected) && expected.some((item) => looseEqual(value, item as CanonicalValue));
    case 'not_in':
      return !(Array.isArray(expected) && expected.some((item) => looseEqual(value, item as CanonicalValue)));
    case 'is_true':
      return value === true || value === 1 || value === '1' || value === 'true';
    case 'is_false':
      return !(value === true || value === 1 || value === '1' || value === 'true');
  }
}

/** True when the record passes the filter (no filter: always). */
export function passesFilter(filter: FilterGroup | null, lookup: FieldLookup): boolean {
  if (!filter) return true;
  const evaluate = (node: FilterGroup | FilterCondition): boolean => {
    if (isGroupNode(node)) {
      if (node.conditions.length === 0) return true;
      return node.match === 'all' ? node.conditions.every(evaluate) : node.conditions.some(evaluate);
    }
    return holds(node, lookup(node.side, node.field));
  };
  return evaluate(filter);
}

/**
 * The sync-enabled field (`advanced_settings` kind `row_level_sync`): the record syncs only while it is true.
 */
export interface SyncEnabledField {
  side: SideName;
  field: string;
}

export function findSyncEnabledField(advancedSettings: unknown): SyncEnabledField | null {
  if (!Array.isArray(advancedSettings)) return null;
  for (const entry of advancedSettings) {
    if (typeof entry !== 'object' || entry === null) continue;
    const setting = entry as Record<string, unknown>;
    if (setting['kind'] !== 'row_level_sync') continue;
    const side = setting['side'];
    const field = setting['field'] ?? setting['value'];
    if ((side === 'left' || side === 'right') && typeof field === 'string' && field !== '')
      return { side, field };
  }
  return null;
}

export function syncEnabled(setting: SyncEnabledField | null, lookup: FieldLookup): boolean {
  if (!setting) return true;
  const value = lookup(setting.side, setting.field);
  return value === true || value === 1 || value === '1' || value === 'true';
}

/**
 * Whether an update is synced under a filter: a record that passes now syncs; one that passed before this
 * change and fails now still syncs this change (then stops); one that failed before and fails now does not.
 */
export function filterGate(
  passedBefore: boolean | null,
  passesNow: boolean,
): { sync: boolean; filtered: boolean } {
  if (passesNow) return { sync: true, filtered: false };
  return { sync: passedBefore === true, filtered: true };
}
