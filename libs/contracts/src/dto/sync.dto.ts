import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CREDENTIALS_SCHEMA, Credentials, INPUT_LIMITS, Nested, Text } from './input-rules';

// ---- requests ----

export class SideInputDto {
  @ApiProperty({
    description:
      'Connector type slug (from `GET /sync/connectors`): `postgres`, `mysql` (MySQL/MariaDB), `airtable`, ' +
      '`nocodb`.',
    example: 'postgres',
  })
  @Text()
  connector: string;

  @ApiPropertyOptional({
    ...CREDENTIALS_SCHEMA,
    description:
      "Credentials, keyed by the connector's credential field ids exactly as `GET /sync/connectors` " +
      'lists them (for example `connectionString` for `postgres` and `mysql`; `apiKey`, an Airtable ' +
      'personal access token, for `airtable`; `baseUrl` and `apiToken` for `nocodb`). Travels with `base`: both given builds the side and ' +
      'checks the credentials live; neither given defers the side to a person (for `airtable`, who ' +
      'pastes a token or signs in with Airtable in the console). Never returned.',
    example: { connectionString: 'postgres://sync_user:secret@db.example.com:5432/app' },
  })
  @Credentials()
  auth?: Record<string, string>;

  @ApiPropertyOptional({
    description:
      'Id of the base (PostgreSQL: schema; MySQL: database; Airtable: base, `app...`; NocoDB: base, ' +
      '`p...`) in the connected ' +
      'app; an exact display name is accepted when unambiguous.',
    example: 'public',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  base?: string;
}

export class CreateSyncDto {
  @ApiProperty({ example: 'CRM to warehouse' })
  @Text(INPUT_LIMITS.name)
  name: string;

  @ApiProperty({ type: SideInputDto })
  @Nested(() => SideInputDto)
  left: SideInputDto;

  @ApiProperty({ type: SideInputDto })
  @Nested(() => SideInputDto)
  right: SideInputDto;
}

export class SidePatchDto {
  @ApiPropertyOptional({
    description:
      'A new connector (draft only; needs `auth` and `base` for an api_key connector). Rebuilds the side.',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  connector?: string;

  @ApiPropertyOptional({
    ...CREDENTIALS_SCHEMA,
    description:
      'New credentials of the same shape: rotation, allowed in any state and checked live. A side a person ' +
      'connected by signing in (`auth_method: oauth`, such as Airtable connected with Sign in with Airtable) ' +
      'keeps that method: credentials for it give `invalid_auth`; a person signs in again in the console. ' +
      'Never returned.',
  })
  @Credentials()
  auth?: Record<string, string>;

  @ApiPropertyOptional({ description: 'A new base (draft only). Rebuilds the side.' })
  @Text(INPUT_LIMITS.text, { optional: true })
  base?: string;
}

export class UpdateSyncDto {
  @ApiPropertyOptional()
  @Text(INPUT_LIMITS.name, { optional: true })
  name?: string;

  @ApiPropertyOptional({ type: SidePatchDto })
  @Nested(() => SidePatchDto, { optional: true })
  left?: SidePatchDto;

  @ApiPropertyOptional({ type: SidePatchDto })
  @Nested(() => SidePatchDto, { optional: true })
  right?: SidePatchDto;
}

// ---- responses ----

export class PendingActionDto {
  @ApiProperty({ enum: ['user_authorization', 'user_confirmation', 'user_api_key'] }) type: string;
  @ApiProperty({ enum: ['end_user'] }) audience: string;
  @ApiProperty({ enum: ['open_in_browser'] }) action: string;
  @ApiProperty({ type: String, nullable: true, enum: ['left', 'right', 'source', 'destination'] }) side:
    string | null;
  @ApiPropertyOptional({ description: 'Present for `user_authorization`.' }) connector?: string;
  @ApiProperty({ format: 'uri', description: 'Link for a person; relay it, do not fetch it.' }) url: string;
  @ApiProperty({
    description:
      'Text to relay to the person. For `user_confirmation` it also says, per side, what Lockstep ' +
      'writes into the app: the tables and fields the mappings create, the `lockstep_id` column a ' +
      'mappings save adds, and the change capture a start installs.',
  })
  instruction: string;
}

export class BaseRefDto {
  @ApiProperty({ description: 'Remote id of the base.' }) id: string;
  @ApiProperty() name: string;
}

export class SideDto {
  @ApiProperty() connector: string;
  @ApiProperty({ description: 'Display name of the connector.' }) connector_name: string;
  @ApiProperty({ enum: ['api_key', 'oauth'], description: 'How the side was connected; a side keeps it.' })
  auth_method: string;
  @ApiProperty({ type: BaseRefDto }) base: BaseRefDto;
  @ApiProperty({
    enum: ['ok', 'error'],
    description: '`error` marks a broken credential (an issue explains the fix).',
  })
  auth_status: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Machine code of the credential failure, for example `invalid_credentials`.',
  })
  auth_error: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) connected_at: string | null;
  @ApiProperty({ format: 'uri' }) bases_url: string;
  @ApiProperty({ format: 'uri' }) tables_url: string;
}

export class SyncDto {
  @ApiProperty({ example: 'sync_0123456789abcdefghij' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: ['draft', 'active', 'paused'] }) status: string;
  @ApiProperty({
    description:
      'True after `activate` until the worker has picked the sync up again (status is then `active`).',
  })
  activating: boolean;
  @ApiProperty({ type: SideDto, nullable: true, description: 'null while the side is not connected.' })
  left: SideDto | null;
  @ApiProperty({ type: SideDto, nullable: true }) right: SideDto | null;
  @ApiProperty({ type: [PendingActionDto], description: 'Empty when nothing blocks.' })
  pending_actions: PendingActionDto[];
  @ApiProperty({ description: 'Open issues; nonzero signals problems.' }) open_issues: number;
  @ApiProperty({ enum: ['review_required', 'auto_approve'] }) delete_approval: string;
  @ApiPropertyOptional({ description: 'Present under `review_required`: deletes waiting for review now.' })
  pending_deletes?: number;
  @ApiProperty({
    enum: ['not_started', 'preparing', 'running', 'done'],
    description: 'Phase of the initial sync that starts when a person starts the sync.',
  })
  initial_sync: string;
  @ApiProperty({ description: 'Current mappings revision (the mappings `ETag`).' }) mappings_revision: number;
  @ApiProperty({ format: 'uri' }) url: string;
  @ApiProperty({ format: 'uri' }) status_url: string;
  @ApiProperty({ format: 'uri', description: 'Page where a person reviews and starts a draft.' })
  review_url: string;
  @ApiProperty({
    format: 'uri',
    description: "Left side's table listing (add `side=right` for the other side).",
  })
  tables_url: string;
  @ApiProperty({
    format: 'uri',
    description:
      "Where the fields are found: the left side's table listing (as `tables_url`), in which each " +
      'table carries `fields_url`, the link to its own field listing. Add `side=right` for the other ' +
      'side.',
  })
  fields_url: string;
  @ApiProperty({ format: 'uri' }) mappings_url: string;
  @ApiProperty({
    format: 'uri',
    description: '`POST` it to validate the stored mappings (or a candidate document).',
  })
  validate_url: string;
  @ApiProperty({ format: 'uri' }) operations_url: string;
  @ApiProperty({ format: 'uri' }) issues_url: string;
  @ApiProperty({ format: 'uri' }) pending_deletes_url: string;
  @ApiProperty({ type: String, format: 'date-time' }) created_at: string;
  @ApiProperty({ type: String, format: 'date-time' }) updated_at: string;
}

export class SyncListDto {
  @ApiProperty({ type: [SyncDto] }) data: SyncDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class DeletedSyncDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: [true] }) deleted: true;
}

export class BaseListDto {
  @ApiProperty({
    type: [BaseRefDto],
    description: "Bases (schemas, databases) the side's credentials reach, fetched live.",
  })
  data: BaseRefDto[];
  @ApiProperty({ enum: [false] }) has_more: false;
  @ApiProperty({ type: String, nullable: true, enum: [null] }) next_cursor: null;
}

export class SideStatusDto {
  @ApiProperty({ type: String, nullable: true, description: 'null while the side is not connected.' })
  connector: string | null;
  @ApiProperty({
    enum: ['pending', 'ok', 'error'],
    description: '`pending`: a person has not connected it yet.',
  })
  auth_status: string;
  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['change_feed', 'incremental', 'full_scan', null],
    description: 'The change detection the engine uses for this side.',
  })
  change_detection: string | null;
  @ApiProperty({
    enum: ['idle', 'polling', 'waiting', 'paused', 'error'],
    description: 'What the engine is doing on this side.',
  })
  polling_state: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_polled_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_change_detected_at: string | null;
}

export class SideCountsDto {
  @ApiProperty() left: number;
  @ApiProperty() right: number;
}

export class MatchFieldDto {
  @ApiProperty({ description: 'The match field on the left side (its name).' }) left: string;
  @ApiProperty({ description: 'The match field on the right side (its name).' }) right: string;
}

export class InitialSyncPreviewDto {
  @ApiProperty({ description: 'Records on the left side when the sync started.' }) left_records: number;
  @ApiProperty({ description: 'Records on the right side when the sync started.' }) right_records: number;
  @ApiProperty({
    description: 'Record pairs with the same match field value on both sides: linked, not created.',
  })
  matched: number;
  @ApiProperty({
    description: 'Right records without a match: to be created on the left (where the direction allows).',
  })
  to_create_left: number;
  @ApiProperty({
    description: 'Left records without a match: to be created on the right (where the direction allows).',
  })
  to_create_right: number;
  @ApiProperty({
    description:
      'Records skipped because their match value is not unique on their side (a `sync_preview` issue ' +
      'says so).',
  })
  skipped: number;
  @ApiProperty({ description: 'Match values found more than once on a side.' }) duplicate_keys: number;
}

export class InitialSyncPairProgressDto {
  @ApiProperty({ description: "The table pair's index in the mappings document." }) table_pair: number;
  @ApiProperty({ description: 'The left table (its name).' }) left_table: string;
  @ApiProperty({ description: 'The right table (its name).' }) right_table: string;
  @ApiProperty({
    enum: ['link', 'left', 'right', 'done'],
    description:
      '`link`: matched records are being linked; `left` / `right`: that side is being read page by ' +
      'page; `done`.',
  })
  stage: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'Opaque position of the current pass (the last page committed); null at the start of a pass.',
  })
  cursor: string | null;
  @ApiProperty({
    type: MatchFieldDto,
    nullable: true,
    description: 'The match field chosen at start; null when nothing is matched.',
  })
  match_field: MatchFieldDto | null;
  @ApiProperty({ type: InitialSyncPreviewDto, description: 'Computed while preparing.' })
  preview: InitialSyncPreviewDto;
  @ApiProperty({ type: SideCountsDto, description: 'Records read so far from each side.' })
  processed: SideCountsDto;
  @ApiProperty({ type: SideCountsDto, description: 'Records created so far on each side.' })
  created: SideCountsDto;
  @ApiProperty({
    type: SideCountsDto,
    description: "Matched records updated so far on each side (the preferred side's values won).",
  })
  updated: SideCountsDto;
  @ApiProperty({ description: 'Records a side refused (each has a record issue with its remediation).' })
  failed: number;
  @ApiPropertyOptional({ description: 'The worker process working on the pair.' }) runner?: string;
  @ApiPropertyOptional({
    description:
      'Present (true) when another worker had begun the pair before (after a crash, a pause or a ' +
      'restart): it looks every link up and skips no pass.',
  })
  resumed?: boolean;
  @ApiPropertyOptional({
    enum: ['left', 'right'],
    description:
      'The side whose pass began while the pair had no record links at all, so its pages look no links up.',
  })
  unlinked?: string;
}

export class InitialSyncProgressDto {
  @ApiPropertyOptional({
    format: 'uuid',
    description: "This initial sync's run (a new one each time it is prepared).",
  })
  run?: string;
  @ApiPropertyOptional({
    enum: [1, 2],
    description:
      'How the run derives the service ids of the copies it creates: 2 puts copies of records with ' +
      'plain integer ids in the order of those ids; absent (1) for runs prepared by an older release.',
  })
  id_scheme?: number;
  @ApiProperty({
    type: [InitialSyncPairProgressDto],
    description: 'One entry per table pair, in mappings order.',
  })
  pairs: InitialSyncPairProgressDto[];
}

export class InitialSyncStatusDto {
  @ApiProperty({ enum: ['not_started', 'preparing', 'running', 'done'] }) phase: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) started_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finished_at: string | null;
  @ApiProperty({
    type: InitialSyncProgressDto,
    nullable: true,
    description:
      'Per table pair preview and counts, written by the worker as it prepares and runs (and kept ' +
      'once done); null before the worker has prepared the sync.',
  })
  progress: InitialSyncProgressDto | null;
}

export class PendingPushesDto {
  @ApiProperty() push: number;
  @ApiProperty() refetch: number;
  @ApiProperty() verify_delete: number;
}

export class SyncStatusDto {
  @ApiProperty() sync_id: string;
  @ApiProperty({ enum: ['draft', 'active', 'paused'] }) status: string;
  @ApiProperty() activating: boolean;
  @ApiProperty({ type: String, format: 'date-time', description: 'When this snapshot was taken.' })
  captured_at: string;
  @ApiProperty({ type: InitialSyncStatusDto }) initial_sync: InitialSyncStatusDto;
  @ApiProperty({ type: SideStatusDto }) left: SideStatusDto;
  @ApiProperty({ type: SideStatusDto }) right: SideStatusDto;
  @ApiProperty({ type: PendingPushesDto, description: 'Record operations queued, by type.' })
  pending_pushes: PendingPushesDto;
  @ApiProperty() open_issues: number;
  @ApiProperty({ type: Number, nullable: true, description: 'null under `auto_approve`.' }) pending_deletes:
    number | null;
}
