import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional } from 'class-validator';
import { LIVE_EXPORT_CADENCES, LIVE_EXPORT_ISSUE_CODES } from '@lockstep/domain';
import { CREDENTIALS_SCHEMA, Credentials, INPUT_LIMITS, Nested, Omittable, Text } from './input-rules';
import { PendingActionDto } from './sync.dto';

const AUTH_DOC =
  "Credentials, keyed by the connector's credential field ids exactly as `GET " +
  '/live-export/connectors` lists them (for example `connectionString`). Only for `api_key` ' +
  'connectors (`oauth_auth_not_allowed` otherwise). Checked live before anything is stored ' +
  "(`connection_failed` with the app's reason). Omit it to leave the side unconnected (a " +
  '`user_authorization` pending action; complete it later with PATCH). Never returned.';

// ---- requests ----

export class SourceInputDto {
  @ApiProperty({
    description: 'Connector slug with the `source` role (`GET /live-export/connectors`).',
    example: 'postgres',
  })
  @Text()
  connector: string;

  @ApiPropertyOptional({
    ...CREDENTIALS_SCHEMA,
    description: AUTH_DOC,
    example: { connectionString: 'postgres://reader:secret@db.example.com:5432/app' },
  })
  @Credentials()
  auth?: Record<string, string>;

  @ApiPropertyOptional({
    description:
      'The base the source tables are read from (PostgreSQL: schema; MySQL: database; Airtable, NocoDB: base), ' +
      'by id or ' +
      'unique exact name. Travels with `auth` (`missing_base` / `missing_auth`); `base_not_found` / ' +
      '`base_ambiguous` list the reachable bases in `details.bases`. The source has no `location` ' +
      '(`invalid_location`).',
    example: 'public',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  base?: string;

  @ApiPropertyOptional({
    description: 'Not accepted: only the destination has a location (`400 invalid_location`).',
  })
  @IsOptional()
  location?: unknown;
}

export class DestinationInputDto {
  @ApiProperty({
    description: 'Connector slug with the `destination` role (`GET /live-export/connectors`).',
    example: 'mysql',
  })
  @Text()
  connector: string;

  @ApiPropertyOptional({
    ...CREDENTIALS_SCHEMA,
    description: AUTH_DOC,
    example: { connectionString: 'mysql://writer:secret@warehouse.example.com:3306/' },
  })
  @Credentials()
  auth?: Record<string, string>;

  @ApiPropertyOptional({
    description:
      "Where the exported tables are created: one of the destination's locations (`GET " +
      '.../destination/locations`; PostgreSQL: schema, MySQL: database), by id or exact name. Needs ' +
      'the destination connected (in this request or before); `invalid_location` otherwise. May be ' +
      'set later with PATCH.',
    example: 'warehouse',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  location?: string;
}

export class CreateLiveExportDto {
  @ApiProperty({ example: 'CRM to warehouse' })
  @Text(INPUT_LIMITS.name)
  name: string;

  @ApiProperty({ type: SourceInputDto })
  @Nested(() => SourceInputDto)
  source: SourceInputDto;

  @ApiProperty({ type: DestinationInputDto })
  @Nested(() => DestinationInputDto)
  destination: DestinationInputDto;
}

export class SourcePatchDto {
  @ApiPropertyOptional({
    ...CREDENTIALS_SCHEMA,
    description:
      'Completes a source created without `auth` (with `base`). `409 side_already_connected` when it ' +
      'is connected.',
  })
  @Credentials()
  auth?: Record<string, string>;

  @ApiPropertyOptional({ description: 'The source base, together with `auth` when completing the side.' })
  @Text(INPUT_LIMITS.text, { optional: true })
  base?: string;

  @ApiPropertyOptional({ description: 'Not accepted: `400 invalid_location`.' })
  @IsOptional()
  location?: unknown;
}

export class DestinationPatchDto {
  @ApiPropertyOptional({
    ...CREDENTIALS_SCHEMA,
    description:
      'Completes a destination created without `auth`. `409 side_already_connected` when it is connected.',
  })
  @Credentials()
  auth?: Record<string, string>;

  @ApiPropertyOptional({
    description:
      "Sets or changes the location (checked live against the destination's locations: " +
      '`invalid_location`). A change after a save counts as an unsaved change: runs keep writing the ' +
      'saved location until the next save.',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  location?: string;
}

export class UpdateLiveExportDto {
  @ApiPropertyOptional()
  @Text(INPUT_LIMITS.name, { optional: true })
  name?: string;

  @ApiPropertyOptional({ type: SourcePatchDto })
  @Nested(() => SourcePatchDto, { optional: true })
  source?: SourcePatchDto;

  @ApiPropertyOptional({ type: DestinationPatchDto })
  @Nested(() => DestinationPatchDto, { optional: true })
  destination?: DestinationPatchDto;
}

export class SchedulePatchDto {
  @ApiPropertyOptional({
    enum: LIVE_EXPORT_CADENCES,
    description:
      'Must be one of `allowed_cadences` (`403 plan_required` otherwise). `manual` runs only on trigger.',
  })
  @Omittable()
  @IsIn([...LIVE_EXPORT_CADENCES])
  cadence?: string;

  @ApiPropertyOptional({
    description:
      'The on/off switch: `false` keeps the schedule but runs nothing on it (trigger still works).',
  })
  @Omittable()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    description:
      'Daily only: the run time `HH:MM` (24 h) in `timezone`. Required when the cadence becomes `daily`.',
    example: '06:30',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  time_of_day?: string;

  @ApiPropertyOptional({
    description:
      'Daily only: an IANA time zone (default `UTC`). The run follows daylight saving time: a time ' +
      'skipped by a spring-forward change runs at the first valid instant after it, a repeated time ' +
      'runs once.',
    example: 'Europe/Berlin',
  })
  @Text(INPUT_LIMITS.text, { optional: true })
  timezone?: string;
}

export class TriggerDto {
  @ApiPropertyOptional({
    description:
      'Run the last saved plan even when the mappings have unsaved edits (otherwise `409 unsaved_changes`).',
  })
  @Omittable()
  @IsBoolean()
  force?: boolean;
}

// ---- responses ----

export class LiveExportConnectorRolesDto {
  @ApiProperty({ description: 'Can be a live export source.' }) source: boolean;
  @ApiProperty({ description: 'Can be a live export destination.' }) destination: boolean;
}

export class LiveExportAuthFieldDto {
  @ApiProperty({ description: "Key to send under a side's `auth`, exactly as given." }) id: string;
  @ApiProperty() label: string;
  @ApiProperty() optional: boolean;
  @ApiProperty() placeholder: string;
  @ApiProperty({ type: [String], nullable: true }) options: string[] | null;
}

export class LiveExportConnectorAuthDto {
  @ApiProperty({
    enum: ['oauth', 'api_key'],
    description:
      '`api_key` connectors take `auth` inline; `oauth` connectors are connected by a person ' +
      '(browser sign-in).',
  })
  method: string;
  @ApiProperty({ type: [LiveExportAuthFieldDto], nullable: true }) fields: LiveExportAuthFieldDto[] | null;
}

export class LiveExportConnectorDto {
  @ApiProperty({ description: 'Connector slug.' }) type: string;
  @ApiProperty() name: string;
  @ApiProperty({
    type: [String],
    enum: ['source', 'destination'],
    description: 'The roles the connector can take.',
  })
  roles: string[];
  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['schema', 'database', 'base'],
    description:
      'What a destination `location` is for this connector (PostgreSQL: schema; MySQL/MariaDB: ' +
      'database; Airtable: base, `app...`; NocoDB: base, `p...`); null when it cannot be a destination.',
  })
  location_kind: string | null;
  @ApiProperty({ type: LiveExportConnectorAuthDto }) auth: LiveExportConnectorAuthDto;
  @ApiProperty({
    description: '`false` when live export is unavailable to the account or the connector is above its plan.',
  })
  available: boolean;
  @ApiProperty({ description: 'The plan that unlocks the connector.' }) required_plan: string;
}

export class LiveExportConnectorListDto {
  @ApiProperty({ type: [LiveExportConnectorDto] }) data: LiveExportConnectorDto[];
  @ApiProperty({ description: 'Always false: the list is complete.' }) has_more: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Always null.' }) next_cursor: string | null;
  @ApiProperty({ description: 'Live export is available to the account (plan and subscription).' })
  live_export_available: boolean;
  @ApiProperty({
    type: [String],
    enum: LIVE_EXPORT_CADENCES,
    description: 'The schedule cadences the plan permits.',
  })
  allowed_cadences: string[];
}

export class LiveExportSourceDto {
  @ApiProperty() connector: string;
  @ApiProperty({ enum: ['api_key', 'oauth'] }) auth_method: string;
  @ApiProperty({ description: 'Credentials are stored.' }) connected: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) connected_at: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The schema (PostgreSQL), database (MySQL) or base (Airtable) the tables are read from.',
  })
  base: string | null;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description: 'Source tables listing; null until connected.',
  })
  tables_url: string | null;
}

export class LiveExportDestinationDto {
  @ApiProperty() connector: string;
  @ApiProperty({ enum: ['api_key', 'oauth'] }) auth_method: string;
  @ApiProperty() connected: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) connected_at: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Where the exported tables are created; null until chosen.',
  })
  location: string | null;
  @ApiProperty({ type: String, nullable: true, enum: ['schema', 'database'] }) location_kind: string | null;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description: 'Destination locations listing; null until connected.',
  })
  locations_url: string | null;
}

export class LiveExportDto {
  @ApiProperty({ description: 'Live export id (`lex_...`).' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({
    enum: ['draft', 'saved'],
    description:
      '`draft` until the first save; `saved` once a save provisioned the destination (runs and ' +
      "schedules need it). There is no pause: the schedule's `enabled` switch is the only on/off.",
  })
  status: string;
  @ApiProperty({ type: LiveExportSourceDto }) source: LiveExportSourceDto;
  @ApiProperty({ type: LiveExportDestinationDto }) destination: LiveExportDestinationDto;
  @ApiProperty({
    type: [PendingActionDto],
    description:
      'A `user_authorization` per unconnected side (an oauth side can only be connected by a person; ' +
      'an api_key side also by PATCH with `auth`).',
  })
  pending_actions: PendingActionDto[];
  @ApiProperty({ description: 'The mappings document version (its `ETag`).' }) mappings_version: number;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The mappings version of the last save; null before the first save.',
  })
  saved_version: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) saved_at: string | null;
  @ApiProperty({
    description:
      '`mappings_version != saved_version`: the mappings (or the location) changed since the last ' +
      'save; a trigger then needs `force`.',
  })
  unsaved_changes: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
  @ApiProperty({ format: 'uri' }) url: string;
  @ApiProperty({ format: 'uri' }) mappings_url: string;
  @ApiProperty({ format: 'uri', description: '`POST` it to validate the mappings.' }) validate_url: string;
  @ApiProperty({
    format: 'uri',
    description: '`POST` it to save (a `GET` shows the last save; `404` before the first).',
  })
  save_url: string;
  @ApiProperty({
    format: 'uri',
    description:
      'The schedule: `PATCH` creates or changes it once the export is saved; a `GET` is `409 ' +
      'not_provisioned` before the first save, then `404` until a schedule exists.',
  })
  schedule_url: string;
  @ApiProperty({ format: 'uri', description: '`POST` it to run the export now.' }) trigger_url: string;
  @ApiProperty({ format: 'uri' }) runs_url: string;
}

export class LiveExportListDto {
  @ApiProperty({ type: [LiveExportDto] }) data: LiveExportDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class DeletedLiveExportDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: [true] }) deleted: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'The run that was active and is now canceled (queued) or asked to stop (running); null when ' +
      'none was active.',
  })
  canceled_run: string | null;
  @ApiProperty({
    description: 'What happens to the destination: the tables already created there stay with their rows.',
  })
  note: string;
}

export class SourceTableDto {
  @ApiProperty({
    description: "The table's id in the source (for databases: the table name). Use it as `source_table`.",
  })
  remote_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'uri' }) fields_url: string;
}

export class SourceTableListDto {
  @ApiProperty({ type: [SourceTableDto] }) data: SourceTableDto[];
  @ApiProperty({ description: 'Always false: the list is complete.' }) has_more: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Always null.' }) next_cursor: string | null;
}

export class SourceFieldDto {
  @ApiProperty({
    description: "The field's id in the source (for databases: the column name). Use it as `source_field`.",
  })
  remote_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: "The source's own type name." }) type: string;
  @ApiProperty({
    description: 'Canonical type class; the destination column is created with the closest native type.',
  })
  type_class: string;
  @ApiProperty({ description: 'The source marks it as (part of) the primary key.' }) primary: boolean;
  @ApiProperty({ description: 'The source requires a value.' }) required: boolean;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true }) type_details: Record<
    string,
    unknown
  > | null;
  @ApiProperty({ description: 'The column name a mapping gets when it omits `destination_field`.' })
  default_destination_field: string;
}

export class SourceFieldListDto {
  @ApiProperty({
    type: [SourceFieldDto],
    description:
      'Exportable fields only: link fields, unreadable fields and fields of unsupported types are ' +
      'never offered.',
  })
  data: SourceFieldDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
  @ApiProperty({ description: "The source table's remote id." }) table: string;
}

export class LocationDto {
  @ApiProperty({ description: 'Use it as the destination `location`.' }) id: string;
  @ApiProperty() name: string;
}

export class LocationListDto {
  @ApiProperty({ type: [LocationDto] }) data: LocationDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
  @ApiProperty({ type: String, nullable: true, enum: ['schema', 'database'] }) location_kind: string | null;
}

export class ExportFieldMappingDto {
  @ApiProperty({
    description: 'Source field remote id (an exact unique name is accepted and stored as the remote id).',
  })
  source_field: string;
  @ApiPropertyOptional({
    description:
      'Column to create in the destination table: letters, digits, underscores, at most 63, not a ' +
      "hidden column. Default: the source field's name made into such a name.",
  })
  destination_field?: string;
  @ApiPropertyOptional({
    description:
      "Marks the table's primary field (at most one per table; informative: destination rows are " +
      'keyed by the hidden `lockstep_source_id`). Default false.',
  })
  primary?: boolean;
}

export class ExportTableMappingDto {
  @ApiProperty({ description: 'Source table remote id (or exact unique name).' }) source_table: string;
  @ApiPropertyOptional({
    description:
      "Table to create in the destination location. Default: the source table's name made into a valid name.",
  })
  destination_table?: string;
  @ApiProperty({ type: [ExportFieldMappingDto] }) fields: ExportFieldMappingDto[];
}

export class ExportMappingsDocumentDto {
  @ApiProperty({ type: [ExportTableMappingDto] }) tables: ExportTableMappingDto[];
}

export class ExportValidationIssueDto {
  @ApiProperty({
    enum: [...LIVE_EXPORT_ISSUE_CODES],
  })
  code: string;
  @ApiProperty() message: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description: '`tables[0]`, `tables[0].fields[1]`, or null for the whole export.',
  })
  path: string | null;
}

export class ExportValidationResultDto {
  @ApiProperty({ description: 'True when `issues` is empty.' }) valid: boolean;
  @ApiProperty({ type: [ExportValidationIssueDto] }) issues: ExportValidationIssueDto[];
}

export class SavedColumnDto {
  @ApiProperty({ description: 'Source field remote id.' }) source_field: string;
  @ApiProperty({ description: 'Destination column.' }) column: string;
  @ApiProperty() type_class: string;
  @ApiProperty() primary: boolean;
}

export class SavedTableDto {
  @ApiProperty({ description: 'Source table remote id.' }) source_table: string;
  @ApiProperty() destination_table: string;
  @ApiProperty({
    type: [SavedColumnDto],
    description:
      'Mapped columns; every table also has the hidden `lockstep_source_id` (unique) and ' +
      '`lockstep_row_hash`.',
  })
  columns: SavedColumnDto[];
  @ApiPropertyOptional({ description: 'POST only: the save created the table now.' }) created?: boolean;
  @ApiPropertyOptional({
    type: [String],
    description: 'POST only: columns the save added to a table that existed.',
  })
  added_columns?: string[];
}

export class SaveDto {
  @ApiProperty() live_export: string;
  @ApiProperty({ description: 'The mappings version that was saved.' }) saved_version: number;
  @ApiProperty({ format: 'date-time' }) saved_at: string;
  @ApiProperty({ description: 'True when the mappings changed since this save.' }) unsaved_changes: boolean;
  @ApiProperty({ description: 'The destination connector.' }) destination_connector: string;
  @ApiProperty({ description: 'The location the tables were created in.' }) location: string;
  @ApiProperty({ type: [SavedTableDto] }) tables: SavedTableDto[];
  @ApiProperty({ format: 'uri' }) live_export_url: string;
  @ApiProperty({ format: 'uri' }) schedule_url: string;
  @ApiProperty({ format: 'uri' }) trigger_url: string;
}

export class ScheduleDto {
  @ApiProperty() live_export: string;
  @ApiProperty({ enum: LIVE_EXPORT_CADENCES }) cadence: string;
  @ApiProperty({ description: 'The on/off switch.' }) enabled: boolean;
  @ApiProperty({ type: String, nullable: true, description: '`HH:MM`, daily only.' }) time_of_day:
    string | null;
  @ApiProperty({ type: String, nullable: true, description: 'IANA zone, daily only.' }) timezone:
    string | null;
  @ApiProperty({ type: [String], enum: LIVE_EXPORT_CADENCES, description: 'The cadences the plan permits.' })
  allowed_cadences: string[];
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'The next scheduled slot; null when disabled or `manual`.',
  })
  next_run_at: string | null;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
  @ApiProperty({ format: 'uri' }) live_export_url: string;
  @ApiProperty({ format: 'uri' }) runs_url: string;
}

export class RunErrorDto {
  @ApiProperty({
    description: 'For example `live_export_invalid_structure`, `connection_failed`, `internal_error`.',
  })
  code: string;
  @ApiProperty() message: string;
}

export class RunDto {
  @ApiProperty({ description: 'Run id (`run_...`).' }) id: string;
  @ApiProperty() live_export: string;
  @ApiProperty({ enum: ['queued', 'running', 'succeeded', 'failed', 'canceled'] }) state: string;
  @ApiProperty({ enum: ['manual', 'schedule'] }) trigger: string;
  @ApiProperty({ description: 'Triggered with `force: true`.' }) forced: boolean;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'The schedule slot a scheduled run is for.',
  })
  slot_at: string | null;
  @ApiProperty({ format: 'date-time', description: 'When the run was queued.' }) queued_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) started_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finished_at: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Set by cancel on a running run; the worker stops within a second.',
  })
  cancel_requested_at: string | null;
  @ApiProperty({
    description:
      "Source rows read. A run that reads the source's change capture reads only the rows changed " +
      'since the last run.',
  })
  rows_read: number;
  @ApiProperty({ description: 'Destination rows inserted or updated.' }) rows_written: number;
  @ApiProperty({ description: 'Destination rows removed because they left the source.' })
  rows_removed: number;
  @ApiProperty({ type: RunErrorDto, nullable: true, description: 'Why a failed run failed.' })
  error: RunErrorDto | null;
  @ApiProperty({ format: 'uri' }) url: string;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description: '`POST` it to cancel the run; null once the run finished.',
  })
  cancel_url: string | null;
  @ApiProperty({ format: 'uri' }) live_export_url: string;
}

export class RunListDto {
  @ApiProperty({ type: [RunDto] }) data: RunDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
