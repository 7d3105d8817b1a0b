import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiBody,
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import {
  BaseListDto,
  CreateSyncDto,
  DeletedSyncDto,
  SyncDto,
  SyncListDto,
  SyncStatusDto,
  UpdateSyncDto,
} from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import {
  NotForSyncRestrictedKeys,
  RequiredScope,
  RequiresSubscription,
} from '../common/auth/auth.decorators';
import { Idempotent } from '../common/idempotency/idempotency.interceptor';
import { ApiErrors } from '../common/openapi/api-errors';
import { SyncLifecycleService } from './sync-lifecycle.service';
import { SyncsService } from './syncs.service';

const SYNC_ID = { name: 'id', description: 'Sync id (`sync_...`).' };

@ApiTags('Syncs')
@ApiBearerAuth('api_key')
@Controller('v1/sync/syncs')
export class SyncsController {
  constructor(
    private readonly syncs: SyncsService,
    private readonly lifecycle: SyncLifecycleService,
  ) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listSyncs',
    summary: 'List syncs',
    description: 'Newest first. A one-sync key sees only its sync.',
  })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-100 (default 20).' })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`next_cursor` of the previous page, unchanged.',
  })
  @ApiOkResponse({ type: SyncListDto })
  @ApiErrors({ 400: ['invalid_limit', 'invalid_cursor'] })
  list(
    @Auth() auth: AuthContext,
    @Query('limit') limit?: string,
    @Query('cursor') cursor?: string,
  ): Promise<SyncListDto> {
    return this.syncs.list(auth, limit, cursor);
  }

  @Post()
  @RequiredScope('readwrite')
  @NotForSyncRestrictedKeys()
  @RequiresSubscription()
  @Idempotent()
  @ApiOperation({
    operationId: 'createSync',
    summary: 'Create a sync',
    description: [
      'Creates a draft sync (spec 4.2 rules 1-4). Per API-key side, `auth` and `base` travel ' +
        'together: both given builds the side now (credentials checked live, base resolved by id or ' +
        'unique exact name); neither given defers it to a person (the side is null and a ' +
        '`user_authorization` pending action is returned). A browser-sign-in (oauth) side takes only ' +
        '`connector`.',
      'When only one side is built it occupies the `left` slot; the side a person connects later ' +
        'becomes `right`.',
      'A 201 means everything was validated; on any error nothing is kept. The sync carries a ' +
        '`user_confirmation` pending action: a person reviews and starts it in the app.',
      'Credentials are encrypted at rest and never returned.',
    ].join('\n\n'),
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Replays the first response for 24 hours (header `Idempotent-Replayed: true`).',
  })
  @ApiCreatedResponse({ type: SyncDto })
  @ApiErrors({
    400: [
      'invalid_request',
      'unknown_connector',
      'connector_pair_not_allowed',
      'missing_auth',
      'missing_base',
      'auth_not_supported',
      'base_not_supported',
      'invalid_auth',
      'connection_error',
      'base_not_found',
      'base_ambiguous',
      'base_conflict',
      'invalid_idempotency_key',
      'idempotency_key_reused',
    ],
    409: ['idempotency_key_in_use'],
  })
  create(@Auth() auth: AuthContext, @Body() body: CreateSyncDto): Promise<SyncDto> {
    return this.syncs.create(auth, body);
  }

  @Get(':id')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getSync',
    summary: 'Get a sync',
    description: 'The sync with both sides, pending actions, open-issue count and next-step links.',
  })
  @ApiParam(SYNC_ID)
  @ApiOkResponse({ type: SyncDto })
  @ApiErrors({ 404: ['not_found'] })
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SyncDto> {
    return this.syncs.get(auth, id);
  }

  @Patch(':id')
  @RequiredScope('readwrite')
  @RequiresSubscription()
  @ApiOperation({
    operationId: 'updateSync',
    summary: 'Update a sync',
    description: [
      '`name` any time. A side with only `auth` rotates its credential (same shape, checked live, ' +
        'any state; a side connected by browser sign-in gives `invalid_auth`, an oauth connector ' +
        '`oauth_connector_not_supported`).',
      '`connector` and/or `base` rebuild the side and need a draft (`409 sync_not_draft`); a new ' +
        'api_key connector needs `auth` and `base` (`missing_auth`, `missing_base`). A deferred ' +
        'api_key side is connected with `connector`, `auth` and `base` together. A rebuilt side starts ' +
        'with an empty schema cache and the mappings are emptied (they referred to the old app or ' +
        'base).',
      'A still-unconnected side that needs a browser sign-in answers `409 requires_action`.',
    ].join('\n\n'),
  })
  @ApiParam(SYNC_ID)
  @ApiOkResponse({ type: SyncDto })
  @ApiErrors({
    400: [
      'invalid_request',
      'unknown_connector',
      'connector_pair_not_allowed',
      'missing_auth',
      'missing_base',
      'base_not_supported',
      'oauth_connector_not_supported',
      'invalid_auth',
      'connection_error',
      'base_not_found',
      'base_ambiguous',
      'base_conflict',
    ],
    404: ['not_found'],
    409: ['sync_not_draft', 'requires_action'],
  })
  update(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: UpdateSyncDto): Promise<SyncDto> {
    return this.syncs.update(auth, id, body);
  }

  @Delete(':id')
  @RequiredScope('readwrite')
  @RequiresSubscription()
  @ApiOperation({
    operationId: 'deleteSync',
    summary: 'Delete a sync',
    description:
      'Stops the sync and deletes it with its credentials. The worker then removes what table setup ' +
      'installed in both apps from every table no other sync reads: the change-capture triggers, the ' +
      '`lockstep_id` column it added, and the change log once no table of that database is read. The ' +
      "rows and the apps' own columns stay (so do tables the sync created, with their `lockstep_id` " +
      'key).',
  })
  @ApiParam(SYNC_ID)
  @ApiOkResponse({ type: DeletedSyncDto })
  @ApiErrors({ 404: ['not_found'] })
  remove(@Auth() auth: AuthContext, @Param('id') id: string): Promise<DeletedSyncDto> {
    return this.syncs.remove(auth, id);
  }

  @Post(':id/pause')
  @HttpCode(200)
  @RequiredScope('operate')
  @ApiOperation({
    operationId: 'pauseSync',
    summary: 'Pause a sync',
    description:
      'Turns the sync off; pausing a sync that is already off succeeds. `409 initial_sync_running` ' +
      'while the initial sync runs.',
  })
  @ApiParam(SYNC_ID)
  @ApiBody({ required: false, schema: { type: 'object' } })
  @ApiOkResponse({ type: SyncDto })
  @ApiErrors({ 404: ['not_found'], 409: ['initial_sync_running'] })
  pause(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SyncDto> {
    return this.lifecycle.pause(auth, id);
  }

  @Post(':id/activate')
  @HttpCode(202)
  @RequiredScope('operate')
  @ApiOperation({
    operationId: 'activateSync',
    summary: 'Activate a paused sync',
    description:
      'Turns a paused sync back on: 202 with the sync, `status: active` and `activating: true` until ' +
      'the worker has picked it up. Never starts a draft (`409 confirmation_required`); `409 ' +
      "auth_required` with a side unconnected; `409 initial_sync_preparing` while an active sync's " +
      'initial sync is being prepared and `409 initial_sync_running` while it runs. A sync paused ' +
      'while its initial sync was being prepared is resumed: 202, and the worker prepares it again.',
  })
  @ApiParam(SYNC_ID)
  @ApiBody({ required: false, schema: { type: 'object' } })
  @ApiAcceptedResponse({ type: SyncDto })
  @ApiErrors({
    404: ['not_found'],
    409: ['confirmation_required', 'auth_required', 'initial_sync_preparing', 'initial_sync_running'],
  })
  activate(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SyncDto> {
    return this.lifecycle.activate(auth, id);
  }

  @Get(':id/status')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getSyncStatus',
    summary: 'Sync status snapshot',
    description:
      'A live snapshot: per side the change detection in use, polling state, last poll and last ' +
      'change detected; record operations queued by type (`pending_pushes`); the initial sync phase ' +
      'with its start, end and per-table-pair progress; open issues and pending deletes.',
  })
  @ApiParam(SYNC_ID)
  @ApiOkResponse({ type: SyncStatusDto })
  @ApiErrors({ 404: ['not_found'] })
  status(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SyncStatusDto> {
    return this.syncs.status(auth, id);
  }

  @Get(':id/sides/:side/bases')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listSideBases',
    summary: "List a side's bases",
    description:
      "The bases (PostgreSQL schemas, MySQL databases, Airtable and NocoDB bases) the side's credentials reach, " +
      'fetched live. ' +
      '`409 requires_action` when the side is not connected yet.',
  })
  @ApiParam(SYNC_ID)
  @ApiParam({ name: 'side', enum: ['left', 'right'] })
  @ApiOkResponse({ type: BaseListDto })
  @ApiErrors({
    400: ['invalid_side', 'invalid_auth', 'connection_error'],
    404: ['not_found'],
    409: ['requires_action'],
  })
  bases(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Param('side') side: string,
  ): Promise<BaseListDto> {
    return this.syncs.bases(auth, id, side);
  }
}
