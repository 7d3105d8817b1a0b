/**
 * Every error code of spec section 7.2 (sync and live export) and every validation issue code of 7.3, with
 * the HTTP status and error `type` it is rendered with. `ERROR_CATALOG` is typed `Record<ErrorCode, ...>`,
 * so the compiler refuses a code without its status and type.
 */
export enum ErrorCode {
  // Authentication and permission (7.2)
  MissingApiKey = 'missing_api_key',
  InvalidApiKey = 'invalid_api_key',
  InsufficientScope = 'insufficient_scope',
  SyncRestrictedKey = 'sync_restricted_key',
  PublicApiNotEnabled = 'public_api_not_enabled',
  SubscriptionRequired = 'subscription_required',
  RateLimitExceeded = 'rate_limit_exceeded',
  // Request validation
  InvalidRequest = 'invalid_request',
  InvalidLimit = 'invalid_limit',
  InvalidCursor = 'invalid_cursor',
  MissingSync = 'missing_sync',
  InvalidSync = 'invalid_sync',
  InvalidTable = 'invalid_table',
  InvalidSide = 'invalid_side',
  InvalidSince = 'invalid_since',
  InvalidType = 'invalid_type',
  MissingQuery = 'missing_query',
  InvalidState = 'invalid_state',
  NotFound = 'not_found',
  InvalidIdempotencyKey = 'invalid_idempotency_key',
  IdempotencyKeyReused = 'idempotency_key_reused',
  IdempotencyKeyInUse = 'idempotency_key_in_use',
  Forbidden = 'forbidden',
  Conflict = 'conflict',
  Unprocessable = 'unprocessable',
  // Syncs and sides
  UnknownConnector = 'unknown_connector',
  ConnectorPairNotAllowed = 'connector_pair_not_allowed',
  MissingAuth = 'missing_auth',
  MissingBase = 'missing_base',
  AuthNotSupported = 'auth_not_supported',
  BaseNotSupported = 'base_not_supported',
  OauthConnectorNotSupported = 'oauth_connector_not_supported',
  InvalidAuth = 'invalid_auth',
  ConnectionError = 'connection_error',
  BaseNotFound = 'base_not_found',
  BaseAmbiguous = 'base_ambiguous',
  BaseConflict = 'base_conflict',
  SyncNotDraft = 'sync_not_draft',
  InitialSyncRunning = 'initial_sync_running',
  InitialSyncPreparing = 'initial_sync_preparing',
  SyncActive = 'sync_active',
  // Mappings
  InvalidMappings = 'invalid_mappings',
  RevisionMismatch = 'revision_mismatch',
  CreateFailed = 'create_failed',
  TableSetupFailed = 'table_setup_failed',
  TableAmbiguous = 'table_ambiguous',
  UnknownTable = 'unknown_table',
  UnknownField = 'unknown_field',
  ViewRequired = 'view_required',
  ViewNotFound = 'view_not_found',
  ViewNotSupported = 'view_not_supported',
  // Requires action
  AuthRequired = 'auth_required',
  ConfirmationRequired = 'confirmation_required',
  RequiresAction = 'requires_action',
  // Records and deletes
  AmbiguousRecord = 'ambiguous_record',
  NoCopyToRefetch = 'no_copy_to_refetch',
  DeleteApprovalDisabled = 'delete_approval_disabled',
  InternalError = 'internal_error',
  // Live export (7.2)
  LiveExportUnavailable = 'live_export_unavailable',
  ConnectorNotSupported = 'connector_not_supported',
  OauthAuthNotAllowed = 'oauth_auth_not_allowed',
  ConnectionFailed = 'connection_failed',
  SideAlreadyConnected = 'side_already_connected',
  InvalidLocation = 'invalid_location',
  LiveExportInvalidStructure = 'live_export_invalid_structure',
  MissingLiveExport = 'missing_live_export',
  InvalidLiveExport = 'invalid_live_export',
  UnknownSourceTable = 'unknown_source_table',
  UnknownSourceField = 'unknown_source_field',
  DuplicateSourceTable = 'duplicate_source_table',
  DuplicateFieldName = 'duplicate_field_name',
  MultiplePrimaryFields = 'multiple_primary_fields',
  EmptyTableMapping = 'empty_table_mapping',
  ExistingFieldNotSupported = 'existing_field_not_supported',
  AppliedTableNotEditable = 'applied_table_not_editable',
  EmptyMappings = 'empty_mappings',
  NotProvisioned = 'not_provisioned',
  UnsavedChanges = 'unsaved_changes',
  RunInProgress = 'run_in_progress',
  RunNotActive = 'run_not_active',
  PlanRequired = 'plan_required',
  /**
   * Live export mappings: two entries write the same destination table (not in spec 7.2; documented in
   * OpenAPI).
   */
  DuplicateDestinationTable = 'duplicate_destination_table',
  // Validation issue codes of 7.3 (returned inside validation results and `details.issues`)
  IncompatibleFieldTypes = 'incompatible_field_types',
  RequiredFieldUnmapped = 'required_field_unmapped',
  ForeignKeyTargetUnmapped = 'foreign_key_target_unmapped',
  ForeignKeyTargetMismatch = 'foreign_key_target_mismatch',
  OrphanedTable = 'orphaned_table',
  OrphanedField = 'orphaned_field',
  CreateUnsupported = 'create_unsupported',
  CreateNameCollision = 'create_name_collision',
  /** Validation issue: the mappings hold no table pair (an addition to spec 7.3; documented in OpenAPI). */
  NothingMapped = 'nothing_mapped',
  Internal = 'internal',
}

export type ErrorType =
  | 'authentication_error'
  | 'permission_error'
  | 'invalid_request_error'
  | 'requires_action'
  | 'rate_limit_error'
  | 'api_error';

export interface ErrorCatalogEntry {
  status: number;
  type: ErrorType;
  /** One sentence for the error page at `doc_url`. */
  description: string;
}

const bad = (description: string): ErrorCatalogEntry => ({
  status: 400,
  type: 'invalid_request_error',
  description,
});
const perm = (description: string): ErrorCatalogEntry => ({
  status: 403,
  type: 'permission_error',
  description,
});
const conflict = (description: string): ErrorCatalogEntry => ({
  status: 409,
  type: 'invalid_request_error',
  description,
});
const action = (description: string): ErrorCatalogEntry => ({
  status: 409,
  type: 'requires_action',
  description,
});
/** Validation issue codes (7.3): when a PUT is refused they travel in `details.issues` of a 400. */
const issue = (description: string): ErrorCatalogEntry => bad(description);

export const ERROR_CATALOG: Record<ErrorCode, ErrorCatalogEntry> = {
  [ErrorCode.MissingApiKey]: {
    status: 401,
    type: 'authentication_error',
    description: 'The request carries no `Authorization: Bearer <API_KEY>` header.',
  },
  [ErrorCode.InvalidApiKey]: {
    status: 401,
    type: 'authentication_error',
    description: 'The API key is unrecognized, malformed or revoked.',
  },
  [ErrorCode.InsufficientScope]: perm(
    'The API key scope is below what the endpoint needs; the message names both scopes.',
  ),
  [ErrorCode.SyncRestrictedKey]: perm(
    'A key limited to one sync was used on an endpoint that is not about one existing sync.',
  ),
  [ErrorCode.PublicApiNotEnabled]: perm('The key is valid but the account is not yet admitted to the API.'),
  [ErrorCode.SubscriptionRequired]: perm(
    'The account has no subscription permitting creating or changing syncs.',
  ),
  [ErrorCode.RateLimitExceeded]: {
    status: 429,
    type: 'rate_limit_error',
    description: 'Over the per-key request budget; wait `Retry-After` seconds.',
  },
  [ErrorCode.InvalidRequest]: bad('The body or parameters failed validation.'),
  [ErrorCode.InvalidLimit]: bad('`limit` is out of range.'),
  [ErrorCode.InvalidCursor]: bad('The cursor was not issued by this endpoint.'),
  [ErrorCode.MissingSync]: bad('The `sync` query parameter is required here.'),
  [ErrorCode.InvalidSync]: bad('The `sync` value is not a sync id.'),
  [ErrorCode.InvalidTable]: bad('The `table` value is not a table id.'),
  [ErrorCode.InvalidSide]: bad('The side is not `left` or `right`.'),
  [ErrorCode.InvalidSince]: bad('`since` is not an ISO 8601 time.'),
  [ErrorCode.InvalidType]: bad('`type` is not one of the issue types.'),
  [ErrorCode.MissingQuery]: bad('`query` is required on record search.'),
  [ErrorCode.InvalidState]: bad('`state` is not `awaiting_review` or `ignored`.'),
  [ErrorCode.NotFound]: {
    status: 404,
    type: 'invalid_request_error',
    description:
      'No such resource, or it belongs to another account. For a path no endpoint serves, the ' +
      'message names the endpoint meant (a missing `/sync/` or `/live-export/` prefix or `/v1`, or ' +
      'the method the path takes).',
  },
  [ErrorCode.InvalidIdempotencyKey]: bad('The `Idempotency-Key` header is malformed or too long.'),
  [ErrorCode.IdempotencyKeyReused]: bad(
    'The `Idempotency-Key` was used before with a different request body.',
  ),
  [ErrorCode.IdempotencyKeyInUse]: conflict('A request with the same `Idempotency-Key` is still running.'),
  [ErrorCode.Forbidden]: perm('The request is not allowed.'),
  [ErrorCode.Conflict]: conflict('The resource state does not allow this request.'),
  [ErrorCode.Unprocessable]: {
    status: 422,
    type: 'invalid_request_error',
    description: 'The request is well formed but cannot be processed.',
  },
  [ErrorCode.UnknownConnector]: bad('No such connector, or it is not available to the account.'),
  [ErrorCode.ConnectorPairNotAllowed]: bad('This connector cannot sync to itself.'),
  [ErrorCode.MissingAuth]: bad(
    'An api-key side sent `base` without `auth` (or a PATCH changed `connector` without full `auth` ' +
      'and `base`).',
  ),
  [ErrorCode.MissingBase]: bad('A side sent `auth` without `base`.'),
  [ErrorCode.AuthNotSupported]: bad('A browser-sign-in side cannot take `auth`.'),
  [ErrorCode.BaseNotSupported]: bad('A browser-sign-in side cannot take `base`.'),
  [ErrorCode.OauthConnectorNotSupported]: bad(
    'Credentials for a browser-sign-in app cannot be set or rotated over the API.',
  ),
  [ErrorCode.InvalidAuth]: bad('The app rejected the credentials; the message carries its reason.'),
  [ErrorCode.ConnectionError]: bad('The app could not be reached with those credentials.'),
  [ErrorCode.BaseNotFound]: bad('The base did not resolve; `details.bases` lists the reachable bases.'),
  [ErrorCode.BaseAmbiguous]: bad(
    'The base name matched several bases; `details.bases` lists the candidates.',
  ),
  [ErrorCode.BaseConflict]: bad('Both sides point to the same base with the same credentials.'),
  [ErrorCode.SyncNotDraft]: conflict('A connector or base change needs the sync to be a draft.'),
  [ErrorCode.InitialSyncRunning]: conflict(
    'The initial sync is running; only a person can stop it in the app.',
  ),
  [ErrorCode.InitialSyncPreparing]: conflict('The initial sync is being prepared; retry after preparation.'),
  [ErrorCode.SyncActive]: conflict('Mappings edits and forced schema refreshes need the sync paused first.'),
  [ErrorCode.InvalidMappings]: bad(
    'The mappings document is malformed or the write was rejected; see `details.issues`.',
  ),
  [ErrorCode.RevisionMismatch]: {
    status: 412,
    type: 'invalid_request_error',
    description:
      'The `If-Match` revision is not the current one (older, or never issued); fetch the mappings ' +
      'again and send their `ETag`.',
  },
  [ErrorCode.CreateFailed]: bad('The connector refused a `create` placeholder.'),
  [ErrorCode.TableSetupFailed]: bad(
    'A mapped table could not be prepared for sync (for example a service id column or triggers).',
  ),
  [ErrorCode.TableAmbiguous]: bad('A bare remote id matched tables on both sides; use the prefixed id.'),
  [ErrorCode.UnknownTable]: issue('A table reference does not resolve on that side.'),
  [ErrorCode.UnknownField]: issue('A field reference does not resolve on that side.'),
  [ErrorCode.ViewRequired]: issue('A table synced through views needs `view`.'),
  [ErrorCode.ViewNotFound]: issue('The `view` value is not offered by the table.'),
  [ErrorCode.ViewNotSupported]: issue('`view` was given for a table without views.'),
  [ErrorCode.AuthRequired]: action('A side has no connection; a person must connect it.'),
  [ErrorCode.ConfirmationRequired]: action('The sync is a draft; a person must review and start it.'),
  [ErrorCode.RequiresAction]: action('A person has to act first; see `required_action`.'),
  [ErrorCode.AmbiguousRecord]: bad('The connected-app record id matches several tables; add `table`.'),
  [ErrorCode.NoCopyToRefetch]: bad('The requested side (or either side) has no copy of the record.'),
  [ErrorCode.DeleteApprovalDisabled]: conflict(
    'The sync auto-approves deletes, so there is no pending-delete queue.',
  ),
  [ErrorCode.InternalError]: {
    status: 500,
    type: 'api_error',
    description: 'An unexpected server error; retry, quoting the request id.',
  },
  [ErrorCode.LiveExportUnavailable]: perm(
    'Live export is not available to the account (plan or not enabled).',
  ),
  [ErrorCode.ConnectorNotSupported]: bad(
    'The connector is not available for that role (source or destination).',
  ),
  [ErrorCode.OauthAuthNotAllowed]: bad('`auth` was sent for a browser-sign-in connector.'),
  [ErrorCode.ConnectionFailed]: bad('The app rejected the inline credentials; nothing was kept.'),
  [ErrorCode.SideAlreadyConnected]: conflict('`auth` was sent for an already connected side.'),
  [ErrorCode.InvalidLocation]: bad(
    'The location is not offered by the destination, or was sent for the source.',
  ),
  [ErrorCode.LiveExportInvalidStructure]: conflict(
    'The export was changed outside the service and cannot be operated over the API.',
  ),
  [ErrorCode.MissingLiveExport]: bad('The runs listing needs `live_export`.'),
  [ErrorCode.InvalidLiveExport]: bad('The `live_export` value is not a live export id.'),
  [ErrorCode.UnknownSourceTable]: bad('A `source_table` is not a source table.'),
  [ErrorCode.UnknownSourceField]: bad('A `source_field` is not an exportable field.'),
  [ErrorCode.DuplicateSourceTable]: bad('The same source table is mapped twice.'),
  [ErrorCode.DuplicateFieldName]: bad('Two fields would create the same destination column name.'),
  [ErrorCode.MultiplePrimaryFields]: bad('More than one field of a table is marked `primary: true`.'),
  [ErrorCode.EmptyTableMapping]: bad('A table maps no fields.'),
  [ErrorCode.ExistingFieldNotSupported]: bad(
    'A new table maps onto an existing destination column instead of a create.',
  ),
  [ErrorCode.AppliedTableNotEditable]: bad(
    'The document changes fields of a table already created in the destination.',
  ),
  [ErrorCode.EmptyMappings]: bad('A save needs at least one mapped table.'),
  [ErrorCode.NotProvisioned]: conflict('The live export has not been saved yet.'),
  [ErrorCode.UnsavedChanges]: conflict(
    'The mappings have unsaved edits; save them or trigger with `force: true`.',
  ),
  [ErrorCode.RunInProgress]: conflict('A run is already active for this live export.'),
  [ErrorCode.RunNotActive]: conflict('The run already finished.'),
  [ErrorCode.PlanRequired]: perm('The cadence is above the plan; pick one of `allowed_cadences`.'),
  [ErrorCode.DuplicateDestinationTable]: bad(
    'Two tables of a live export mappings document would write the same destination table.',
  ),
  [ErrorCode.IncompatibleFieldTypes]: issue(
    "The two fields cannot carry each other's values in the mapped direction.",
  ),
  [ErrorCode.RequiredFieldUnmapped]: issue('The destination requires a field that is not mapped.'),
  [ErrorCode.ForeignKeyTargetUnmapped]: issue('A linked-record field points at a table not in the mappings.'),
  [ErrorCode.ForeignKeyTargetMismatch]: issue(
    "The two sides' link fields point at tables not mapped to each other.",
  ),
  [ErrorCode.OrphanedTable]: issue(
    'The reference resolves to a table the app no longer has; refresh the schema.',
  ),
  [ErrorCode.OrphanedField]: issue(
    'The reference resolves to a field the app no longer has; refresh the schema.',
  ),
  [ErrorCode.CreateUnsupported]: issue('The connector cannot create tables or fields.'),
  [ErrorCode.CreateNameCollision]: issue('The same name exists and the create will adopt it.'),
  [ErrorCode.NothingMapped]: issue(
    'The mappings hold no table pair, so the sync cannot start; map at least one table pair.',
  ),
  [ErrorCode.Internal]: {
    status: 500,
    type: 'api_error',
    description: 'Live export validation failed unexpectedly; retry.',
  },
};

export const ERROR_CODES: readonly ErrorCode[] = Object.values(ErrorCode);

export function isErrorCode(value: string): value is ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(value);
}

/** A pending action (spec 2.5), also returned as `required_action` in a 409 `requires_action` or a 401. */
export interface PendingAction {
  type: 'user_authorization' | 'user_confirmation' | 'user_api_key';
  audience: 'end_user';
  action: 'open_in_browser';
  side: 'left' | 'right' | 'source' | 'destination' | null;
  connector?: string;
  url: string;
  instruction: string;
}

/**
 * The one error a service throws. The API's exception filter renders it with the spec's error shape,
 * taking status and type from `ERROR_CATALOG`.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly requiredAction?: PendingAction,
    /** Extra response headers (for example `Retry-After`). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** The error body of spec 7.1. */
export interface ErrorBody {
  error: {
    type: ErrorType;
    code: ErrorCode;
    message: string;
    doc_url: string;
    request_id?: string;
    details?: Record<string, unknown>;
    required_action?: PendingAction;
  };
}
