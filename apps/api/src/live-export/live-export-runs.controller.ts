import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiBody,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import { RunDto, RunListDto, ScheduleDto, SchedulePatchDto, TriggerDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { NotForSyncRestrictedKeys, RequiredScope } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/openapi/api-errors';
import { LiveExportRunsService } from './live-export-runs.service';
import { LIVE_EXPORT_ID } from './live-exports.controller';

const RUN_ID = { name: 'id', description: 'Run id (`run_...`).' };

@ApiTags('Live export')
@ApiBearerAuth('api_key')
@NotForSyncRestrictedKeys()
@Controller('v1/live-export/live-exports/:id')
export class LiveExportScheduleController {
  constructor(private readonly runs: LiveExportRunsService) {}

  @Get('schedule')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getLiveExportSchedule',
    summary: 'Get the schedule',
    description:
      'Fields: `cadence` (`manual`, `every_10_minutes`, `every_30_minutes`, `hourly`, `daily`), ' +
      '`enabled` (the on/off switch), `time_of_day` and `timezone` (daily only), `allowed_cadences` ' +
      "(the plan's), `next_run_at` (null when disabled or manual). Interval cadences run on UTC " +
      'clock boundaries (:00, :10 ...); daily runs at `time_of_day` in `timezone`, following ' +
      'daylight saving time. `409 not_provisioned` before the first save; `404 not_found` after it ' +
      'until the first PATCH creates the schedule.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: ScheduleDto })
  @ApiErrors({ 404: ['not_found'], 409: ['not_provisioned'] })
  schedule(@Auth() auth: AuthContext, @Param('id') id: string): Promise<ScheduleDto> {
    return this.runs.schedule(auth, id);
  }

  @Patch('schedule')
  @RequiredScope('readwrite')
  @ApiOperation({
    operationId: 'updateLiveExportSchedule',
    summary: 'Set the schedule',
    description:
      'Creates the schedule on first use (defaults: `manual`, `enabled: true`, timezone `UTC`), ' +
      'needs a saved export (`409 not_provisioned`). Missing fields keep their values; switching to ' +
      '`daily` needs `time_of_day`; `time_of_day`/`timezone` on another cadence are `400 ' +
      'invalid_request` (they are cleared when leaving daily). `403 plan_required` for a cadence ' +
      'outside `allowed_cadences`. A new or changed schedule first runs at its next slot (no ' +
      'catch-up of past slots); the worker never runs one slot twice.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiBody({ type: SchedulePatchDto })
  @ApiOkResponse({ type: ScheduleDto })
  @ApiErrors({
    400: ['invalid_request'],
    403: ['live_export_unavailable', 'plan_required'],
    404: ['not_found'],
    409: ['not_provisioned'],
  })
  patchSchedule(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Body() body: SchedulePatchDto,
  ): Promise<ScheduleDto> {
    return this.runs.patchSchedule(auth, id, body);
  }

  @Post('trigger')
  @HttpCode(202)
  @RequiredScope('operate')
  @ApiOperation({
    operationId: 'triggerLiveExport',
    summary: 'Run now',
    description:
      'Queues a run of the last saved plan regardless of the schedule: 202 with the run (`queued`); ' +
      'follow its `url`. At most one run is active per export (`409 run_in_progress`, `details.run` ' +
      'names it). `409 unsaved_changes` when the mappings changed since the last save, unless ' +
      '`{"force": true}` (which runs the saved plan). `409 not_provisioned` before the first save.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiBody({ type: TriggerDto, required: false })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiErrors({
    400: ['invalid_request'],
    403: ['live_export_unavailable'],
    404: ['not_found'],
    409: ['run_in_progress', 'unsaved_changes', 'not_provisioned'],
  })
  trigger(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: TriggerDto): Promise<RunDto> {
    return this.runs.trigger(auth, id, body?.force === true);
  }
}

@ApiTags('Live export')
@ApiBearerAuth('api_key')
@NotForSyncRestrictedKeys()
@Controller('v1/live-export/runs')
export class LiveExportRunsController {
  constructor(private readonly runs: LiveExportRunsService) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listRuns',
    summary: 'List runs',
    description:
      'The runs of one live export, newest first. Run states: `queued` -> `running` -> `succeeded` | ' +
      '`failed` | `canceled` (a queued run can be canceled directly). Each run has `trigger` ' +
      '(`manual` or `schedule`), the times (`queued_at`, `started_at`, `finished_at`), `rows_read` / ' +
      '`rows_written` / `rows_removed`, and `error: {code, message}` when it failed.',
  })
  @ApiQuery({ name: 'live_export', required: true, description: 'Live export id (`lex_...`).' })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-25 (default 10).' })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`next_cursor` of the previous page, unchanged.',
  })
  @ApiOkResponse({ type: RunListDto })
  @ApiErrors({
    400: ['missing_live_export', 'invalid_live_export', 'invalid_limit', 'invalid_cursor'],
    404: ['not_found'],
  })
  list(
    @Auth() auth: AuthContext,
    @Query('live_export') liveExport: unknown,
    @Query('limit') limit: unknown,
    @Query('cursor') cursor: unknown,
  ): Promise<RunListDto> {
    return this.runs.list(auth, { liveExport, limit, cursor });
  }

  @Get(':id')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getRun',
    summary: 'Get a run',
    description:
      'The run record (see the runs listing). Poll it until `state` is `succeeded`, `failed` or `canceled`.',
  })
  @ApiParam(RUN_ID)
  @ApiOkResponse({ type: RunDto })
  @ApiErrors({ 404: ['not_found'] })
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<RunDto> {
    return this.runs.get(auth, id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @RequiredScope('operate')
  @ApiOperation({
    operationId: 'cancelRun',
    summary: 'Cancel a run',
    description:
      'A queued run is `canceled` at once. A running run gets `cancel_requested_at` and stays ' +
      '`running` until the worker stops it (within a second), then `canceled`; the destination is ' +
      'left consistent (each batch is one transaction). `409 run_not_active` when the run already ' +
      'finished (or was already canceled).',
  })
  @ApiParam(RUN_ID)
  @ApiBody({ required: false, schema: { type: 'object' } })
  @ApiOkResponse({ type: RunDto })
  @ApiErrors({ 403: ['live_export_unavailable'], 404: ['not_found'], 409: ['run_not_active'] })
  cancel(@Auth() auth: AuthContext, @Param('id') id: string): Promise<RunDto> {
    return this.runs.cancel(auth, id);
  }
}
