import { ERROR_CATALOG, ERROR_CODES, ErrorCode, isErrorCode } from './errors';

/** Status and type of every code, exactly as the tables of spec 7.2 (and 7.3, rendered as 400) give them. */
const EXPECTED: [string, number, string][] = [
  ['missing_api_key', 401, 'authentication_error'],
  ['invalid_api_key', 401, 'authentication_error'],
  ['insufficient_scope', 403, 'permission_error'],
  ['sync_restricted_key', 403, 'permission_error'],
  ['public_api_not_enabled', 403, 'permission_error'],
  ['subscription_required', 403, 'permission_error'],
  ['rate_limit_exceeded', 429, 'rate_limit_error'],
  ['invalid_request', 400, 'invalid_request_error'],
  ['invalid_limit', 400, 'invalid_request_error'],
  ['invalid_cursor', 400, 'invalid_request_error'],
  ['missing_sync', 400, 'invalid_request_error'],
  ['not_found', 404, 'invalid_request_error'],
  ['idempotency_key_reused', 400, 'invalid_request_error'],
  ['idempotency_key_in_use', 409, 'invalid_request_error'],
  ['forbidden', 403, 'permission_error'],
  ['conflict', 409, 'invalid_request_error'],
  ['unprocessable', 422, 'invalid_request_error'],
  ['sync_not_draft', 409, 'invalid_request_error'],
  ['revision_mismatch', 412, 'invalid_request_error'],
  ['auth_required', 409, 'requires_action'],
  ['confirmation_required', 409, 'requires_action'],
  ['requires_action', 409, 'requires_action'],
  ['delete_approval_disabled', 409, 'invalid_request_error'],
  ['internal_error', 500, 'api_error'],
  ['live_export_unavailable', 403, 'permission_error'],
  ['side_already_connected', 409, 'invalid_request_error'],
  ['live_export_invalid_structure', 409, 'invalid_request_error'],
  ['not_provisioned', 409, 'invalid_request_error'],
  ['run_not_active', 409, 'invalid_request_error'],
  ['plan_required', 403, 'permission_error'],
  ['incompatible_field_types', 400, 'invalid_request_error'],
  ['create_name_collision', 400, 'invalid_request_error'],
];

describe('error catalog', () => {
  it.each(EXPECTED)('%s is %i %s', (code, status, type) => {
    expect(isErrorCode(code)).toBe(true);
    expect(ERROR_CATALOG[code as ErrorCode]).toMatchObject({ status, type });
  });

  it('has a description for every code and no code twice', () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(ERROR_CATALOG[code].description.length).toBeGreaterThan(10);
  });

  it('holds every code named by the spec', () => {
    // Every `code` in the tables of spec sections 7.2 and 7.3.
    const spec =
      `missing_api_key invalid_api_key insufficient_scope sync_restricted_key public_api_not_enabled subscription_required
      rate_limit_exceeded invalid_request invalid_limit invalid_cursor missing_sync invalid_sync invalid_table invalid_side invalid_since
      invalid_type missing_query invalid_state not_found invalid_idempotency_key idempotency_key_reused idempotency_key_in_use forbidden
      conflict unprocessable unknown_connector connector_pair_not_allowed missing_auth missing_base auth_not_supported base_not_supported
      oauth_connector_not_supported invalid_auth connection_error base_not_found base_ambiguous base_conflict sync_not_draft
      initial_sync_running initial_sync_preparing sync_active invalid_mappings revision_mismatch create_failed table_setup_failed
      table_ambiguous unknown_table unknown_field view_required view_not_found view_not_supported auth_required confirmation_required
      requires_action ambiguous_record no_copy_to_refetch delete_approval_disabled internal_error live_export_unavailable
      connector_not_supported oauth_auth_not_allowed connection_failed side_already_connected invalid_location
      live_export_invalid_structure missing_live_export invalid_live_export unknown_source_table unknown_source_field
      duplicate_source_table duplicate_field_name multiple_primary_fields empty_table_mapping existing_field_not_supported
      applied_table_not_editable empty_mappings not_provisioned unsaved_changes run_in_progress run_not_active plan_required
      incompatible_field_types required_field_unmapped foreign_key_target_unmapped foreign_key_target_mismatch orphaned_table
      orphaned_field create_unsupported create_name_collision internal`.split(/\s+/);
    expect(spec.filter((code) => !isErrorCode(code))).toEqual([]);
  });
});
