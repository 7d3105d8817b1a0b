import { ValidationCode, ValidationIssue, VALIDATION_CODES } from './issues';
import { allowsStart, putBlockingIssues, putErrorCode } from './put';

const issue = (code: ValidationCode, severity: 'error' | 'warning' = 'error'): ValidationIssue => ({
  severity,
  code,
  path: '/tables/0',
  side: null,
  message: code,
});

const BLOCKS_PUT: Record<ValidationCode, boolean> = {
  invalid_mappings: true,
  unknown_table: true,
  unknown_field: true,
  table_ambiguous: true,
  orphaned_table: true,
  orphaned_field: true,
  view_required: true,
  view_not_found: true,
  view_not_supported: true,
  create_unsupported: true,
  incompatible_field_types: false,
  required_field_unmapped: false,
  foreign_key_target_unmapped: false,
  foreign_key_target_mismatch: false,
  create_name_collision: false,
  // An empty document may be saved (a draft being emptied); it only cannot start.
  nothing_mapped: false,
};

describe('putBlockingIssues', () => {
  it.each(VALIDATION_CODES.map((code) => [code, BLOCKS_PUT[code]] as const))(
    'an error %s blocks a PUT: %s',
    (code, blocks) => {
      expect(putBlockingIssues([issue(code)])).toHaveLength(blocks ? 1 : 0);
      expect(allowsStart([issue(code)])).toBe(false);
    },
  );

  it.each(VALIDATION_CODES)('a warning %s never blocks', (code) => {
    expect(putBlockingIssues([issue(code, 'warning')])).toEqual([]);
    expect(allowsStart([issue(code, 'warning')])).toBe(true);
  });
});

describe('putErrorCode', () => {
  it.each<[string, ValidationIssue[], string | null]>([
    ['nothing blocks', [issue('incompatible_field_types'), issue('create_name_collision', 'warning')], null],
    ['no issues', [], null],
    ['unknown_table', [issue('unknown_table'), issue('unknown_field')], 'unknown_table'],
    ['unknown_field', [issue('unknown_field')], 'unknown_field'],
    ['table_ambiguous', [issue('table_ambiguous')], 'table_ambiguous'],
    ['view_required', [issue('view_required')], 'view_required'],
    ['view_not_found', [issue('view_not_found')], 'view_not_found'],
    ['view_not_supported', [issue('view_not_supported')], 'view_not_supported'],
    [
      'orphaned_table answers invalid_mappings',
      [issue('orphaned_table'), issue('unknown_table')],
      'invalid_mappings',
    ],
    ['orphaned_field answers invalid_mappings', [issue('orphaned_field')], 'invalid_mappings'],
    ['create_unsupported answers invalid_mappings', [issue('create_unsupported')], 'invalid_mappings'],
    ['structural answers invalid_mappings', [issue('invalid_mappings')], 'invalid_mappings'],
    [
      'non-blocking errors before a blocking one are skipped',
      [issue('required_field_unmapped'), issue('view_required')],
      'view_required',
    ],
  ])('%s', (_name, issues, code) => {
    expect(putErrorCode(issues)).toBe(code);
  });
});
