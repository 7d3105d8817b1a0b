import { VALIDATION_CODES, ValidationCode, ValidationIssue } from './issues';

/** Errors a PUT saves with the document: they only block starting the sync. */
const SAVED_WITH_THE_DOCUMENT: readonly ValidationCode[] = [
  'incompatible_field_types',
  'required_field_unmapped',
  'foreign_key_target_unmapped',
  'foreign_key_target_mismatch',
  'create_name_collision',
  'nothing_mapped',
];

/** Issue codes that refuse a PUT (400): the document cannot be saved as it is. */
export const PUT_BLOCKING_CODES: readonly ValidationCode[] = VALIDATION_CODES.filter(
  (code) => !SAVED_WITH_THE_DOCUMENT.includes(code),
);

/**
 * Codes a refused PUT answers with as its own error code (spec 4.4); any other refusal is `invalid_mappings`.
 */
export const PUT_ERROR_CODES = [
  'unknown_table',
  'unknown_field',
  'table_ambiguous',
  'view_required',
  'view_not_found',
  'view_not_supported',
] as const;

export type PutErrorCode = (typeof PUT_ERROR_CODES)[number] | 'invalid_mappings';

/**
 * The issues that refuse a PUT: structural ones and errors about references, views and creates. Every other
 * error (types, required fields, foreign keys) is saved with the document and only blocks starting the
 * sync; warnings never block.
 */
export function putBlockingIssues(issues: ValidationIssue[]): ValidationIssue[] {
  return issues.filter((issue) => issue.severity === 'error' && PUT_BLOCKING_CODES.includes(issue.code));
}

/**
 * The error code of a refused PUT: the first blocking issue's code when it is one the API answers with
 * directly, otherwise `invalid_mappings`; null when nothing blocks the PUT. `details.issues` carries them
 * all.
 */
export function putErrorCode(issues: ValidationIssue[]): PutErrorCode | null {
  const first = putBlockingIssues(issues)[0];
  if (!first) return null;
  return (PUT_ERROR_CODES as readonly string[]).includes(first.code)
    ? (first.code as PutErrorCode)
    : 'invalid_mappings';
}

/** True when the issues allow starting the sync (no errors; warnings never block). */
export function allowsStart(issues: ValidationIssue[]): boolean {
  return issues.every((issue) => issue.severity !== 'error');
}
