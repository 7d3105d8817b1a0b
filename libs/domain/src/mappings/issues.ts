import { SideName } from './schema';

/**
 * Spec 7.3 validation issue codes that apply to a sync's mappings (plus `invalid_mappings` for structure).
 */
export const VALIDATION_CODES = [
  'invalid_mappings',
  'incompatible_field_types',
  'required_field_unmapped',
  'foreign_key_target_unmapped',
  'foreign_key_target_mismatch',
  'unknown_table',
  'unknown_field',
  'table_ambiguous',
  'orphaned_table',
  'orphaned_field',
  'view_required',
  'view_not_found',
  'view_not_supported',
  'create_unsupported',
  'create_name_collision',
  /** Not in spec 7.3 (documented in the OpenAPI description): the document maps no table pair. */
  'nothing_mapped',
] as const;

export type ValidationCode = (typeof VALIDATION_CODES)[number];

export type ValidationSeverity = 'error' | 'warning';

/** Spec 2.9: one entry of a validation result. `path` is a JSON pointer (RFC 6901) into the document. */
export interface ValidationIssue {
  severity: ValidationSeverity;
  code: ValidationCode;
  path: string;
  side: SideName | null;
  message: string;
}

/** A JSON pointer from path segments: `pointer('tables', 0, 'left_table')` = `/tables/0/left_table`. */
export function pointer(...segments: (string | number)[]): string {
  return segments.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** Keys of a table pair and a field pair in the order the document lists them; others sort after, by name. */
const KEY_ORDER = [
  'left_table',
  'right_table',
  'direction',
  'left',
  'left_view',
  'right',
  'right_view',
  'fields',
  'left_field',
  'right_field',
];

function compareSegments(x: string, y: string): number {
  if (/^\d+$/.test(x) && /^\d+$/.test(y)) return Number(x) - Number(y);
  const rank = (key: string) => (KEY_ORDER.includes(key) ? KEY_ORDER.indexOf(key) : KEY_ORDER.length);
  return rank(x) - rank(y) || (x < y ? -1 : x > y ? 1 : 0);
}

function comparePointers(a: string, b: string): number {
  const left = a.split('/');
  const right = b.split('/');
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    const order = compareSegments(left[index] as string, right[index] as string);
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

/**
 * Issues sorted by path, in document order: array indexes compared as numbers, the keys of a pair in the
 * order the document lists them (`left_table`, `right_table`, `direction`, `left`, `right`, `fields`), a
 * parent before its children; issues on one path keep the order they were found in (left before right).
 */
export function sortIssues(issues: ValidationIssue[]): ValidationIssue[] {
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) => comparePointers(a.issue.path, b.issue.path) || a.index - b.index)
    .map(({ issue }) => issue);
}
