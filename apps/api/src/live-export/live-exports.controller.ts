import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import {
  CreateLiveExportDto,
  DeletedLiveExportDto,
  LiveExportDto,
  LiveExportListDto,
  LocationListDto,
  SourceFieldListDto,
  SourceTableListDto,
  UpdateLiveExportDto,
} from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { NotForSyncRestrictedKeys, RequiredScope } from '../common/auth/auth.decorators';
import { Idempotent } from '../common/idempotency/idempotency.interceptor';
import { ApiErrors } from '../common/openapi/api-errors';
import { LiveExportSchemaService } from './live-export-schema.service';
import { LiveExportsService } from './live-exports.service';

export const LIVE_EXPORT_ID = { name: 'id', description: 'Live export id (`lex_...`).' };

@ApiTags('Live export')
@ApiBearerAuth('api_key')
@NotForSyncRestrictedKeys()
@Controller('v1/live-export/live-exports')
export class LiveExportsController {
  constructor(
    private readonly exports: LiveExportsService,
    private readonly schema: LiveExportSchemaService,
  ) {}

  @Post()
  @RequiredScope('readwrite')
  @Idempotent()
  @ApiOperation({
    operationId: 'createLiveExport',
    summary: 'Create a live export',
    description: [
      'Body: `{name, source: {connector, auth?, base?}, destination: {connector, auth?, ' +
        'location?}}`. The source is read from its `base` (PostgreSQL schema, MySQL database, Airtable or NocoDB ' +
        'base); the ' +
        'destination writes into its `location` (same kinds). Only the destination has a location ' +
        '(`invalid_location` on the source).',
      'Per api_key side, `auth` is checked live before anything is stored (`connection_failed` with ' +
        "the app's reason; nothing is kept). `source.auth` travels with `source.base` (`missing_base` " +
        '/ `missing_auth`; `base_not_found` / `base_ambiguous` list the reachable bases). ' +
        '`destination.location` needs `destination.auth` and must be one of its locations ' +
        '(`invalid_location` with `details.locations`); it may also be set later by PATCH. A side ' +
        'without `auth` is created unconnected with a `user_authorization` pending action; an oauth ' +
        'connector always is (`oauth_auth_not_allowed` if `auth` is sent).',
      'The export starts as a draft (`status: draft`): next map tables (`mappings_url`) and save ' +
        '(`save_url`). `connector_not_supported` for a connector that cannot take that role or is ' +
        'above the plan; `403 live_export_unavailable` when the plan has no live export.',
    ].join('\n\n'),
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Replays the first response for 24 hours (header `Idempotent-Replayed: true`).',
  })
  @ApiCreatedResponse({ type: LiveExportDto })
  @ApiErrors({
    400: [
      'invalid_request',
      'connector_not_supported',
      'oauth_auth_not_allowed',
      'connection_failed',
      'invalid_location',
      'missing_auth',
      'missing_base',
      'base_not_supported',
      'base_not_found',
      'base_ambiguous',
      'invalid_idempotency_key',
      'idempotency_key_reused',
    ],
    403: ['live_export_unavailable'],
    409: ['idempotency_key_in_use'],
  })
  create(@Auth() auth: AuthContext, @Body() body: CreateLiveExportDto): Promise<LiveExportDto> {
    return this.exports.create(auth, body);
  }

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listLiveExports',
    summary: 'List live exports',
    description: 'Newest first. Empty when live export is unavailable to the account.',
  })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-25 (default 10).' })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`next_cursor` of the previous page, unchanged.',
  })
  @ApiOkResponse({ type: LiveExportListDto })
  @ApiErrors({ 400: ['invalid_limit', 'invalid_cursor'] })
  list(
    @Auth() auth: AuthContext,
    @Query('limit') limit?: unknown,
    @Query('cursor') cursor?: unknown,
  ): Promise<LiveExportListDto> {
    return this.exports.list(auth, limit, cursor);
  }

  @Get(':id')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getLiveExport',
    summary: 'Get a live export',
    description:
      'Both sides (never credentials), pending actions, the mappings and save versions ' +
      "(`unsaved_changes`), and the next-step links. 404 also for another account's export, and for " +
      'every export while live export is unavailable.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: LiveExportDto })
  @ApiErrors({ 404: ['not_found'] })
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<LiveExportDto> {
    return this.exports.get(auth, id);
  }

  @Patch(':id')
  @RequiredScope('readwrite')
  @ApiOperation({
    operationId: 'updateLiveExport',
    summary: 'Update a live export',
    description: [
      'Body: `{name?, source?: {auth, base}, destination?: {auth?, location?}}`. `name` renames. ' +
        '`auth` completes a side created without it (checked live: `connection_failed`); a connected ' +
        'side answers `409 side_already_connected` (credentials are not rotated over the API). ' +
        '`destination.location` sets or changes where tables are created (checked live: ' +
        '`invalid_location`).',
      'A location change after a save counts as an unsaved change (`mappings_version` goes up): runs ' +
        'keep writing the saved location until the next save, which creates the tables in the new one.',
    ].join('\n\n'),
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: LiveExportDto })
  @ApiErrors({
    400: [
      'invalid_request',
      'oauth_auth_not_allowed',
      'connection_failed',
      'invalid_location',
      'missing_auth',
      'missing_base',
      'base_not_found',
      'base_ambiguous',
    ],
    403: ['live_export_unavailable'],
    404: ['not_found'],
    409: ['side_already_connected'],
  })
  update(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Body() body: UpdateLiveExportDto,
  ): Promise<LiveExportDto> {
    return this.exports.update(auth, id, body);
  }

  @Delete(':id')
  @RequiredScope('readwrite')
  @ApiOperation({
    operationId: 'deleteLiveExport',
    summary: 'Delete a live export',
    description:
      'Deletes the export, its schedule and its run history; an active run is canceled (a running ' +
      'copy stops within a second). Tables already created in the destination stay, with their rows. ' +
      'The change capture the export installed in the source database (triggers `lockstep_export_*` ' +
      '/ `lockstep_x*`) is removed by the worker shortly after.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: DeletedLiveExportDto })
  @ApiErrors({ 403: ['live_export_unavailable'], 404: ['not_found'] })
  remove(@Auth() auth: AuthContext, @Param('id') id: string): Promise<DeletedLiveExportDto> {
    return this.exports.remove(auth, id);
  }

  @Get(':id/source/tables')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listSourceTables',
    summary: 'List source tables',
    description:
      'The tables of the source base, read live. Use `remote_id` (or the exact unique `name`) as a ' +
      "mapping's `source_table`. `409 auth_required` while the source is not connected.",
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: SourceTableListDto })
  @ApiErrors({ 400: ['connection_failed'], 404: ['not_found'], 409: ['auth_required'] })
  tables(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SourceTableListDto> {
    return this.schema.tables(auth, id);
  }

  @Get(':id/source/tables/:table/fields')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listSourceFields',
    summary: "List a source table's exportable fields",
    description:
      'Read live. Link fields, unreadable fields and fields of unsupported types are never offered. ' +
      '`default_destination_field` is the column name a mapping gets without `destination_field`. ' +
      '404 when the source has no such table.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiParam({ name: 'table', description: 'Source table remote id (or exact unique name).' })
  @ApiOkResponse({ type: SourceFieldListDto })
  @ApiErrors({ 400: ['connection_failed'], 404: ['not_found'], 409: ['auth_required'] })
  fields(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Param('table') table: string,
  ): Promise<SourceFieldListDto> {
    return this.schema.fields(auth, id, table);
  }

  @Get(':id/destination/locations')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listDestinationLocations',
    summary: 'List destination locations',
    description:
      "Where the export can create its tables: the destination's schemas (PostgreSQL), databases " +
      '(MySQL/MariaDB) or bases (Airtable, NocoDB), read live. Pass an `id` as `destination.location`. `409 auth_required` while ' +
      'the destination is not connected.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: LocationListDto })
  @ApiErrors({ 400: ['connection_failed'], 404: ['not_found'], 409: ['auth_required'] })
  locations(@Auth() auth: AuthContext, @Param('id') id: string): Promise<LocationListDto> {
    return this.schema.locations(auth, id);
  }
}
