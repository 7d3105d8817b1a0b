import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
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
import { RecordSearchDto, RecordStatusDto, RefetchRequestDto, RefetchResultDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/openapi/api-errors';
import { RecordsService } from './records.service';

const RECORD_ID = {
  name: 'record_id',
  description:
    "A `rec_` id, or the record's id in a connected app (then `sync` is required, and `table` when " +
    'the id exists in several tables). Without `sync`, an id starting `rec_` is a `rec_` id: one ' +
    'that names no record is `404 not_found`.',
};
const SYNC_FOR_RECORD = {
  name: 'sync',
  required: false,
  description:
    'Sync id (`sync_...`): required with a connected-app id; with a `rec_` id optional, and it must ' +
    "be the record's sync.",
};
const TABLE_FOR_RECORD = {
  name: 'table',
  required: false,
  description:
    "With a connected-app id: the table holding it (a `table_...` id of either side, or a table's " +
    'remote id), when the id exists in several tables.',
};

@ApiTags('Records')
@ApiBearerAuth('api_key')
@Controller('v1/sync/records')
export class RecordsController {
  constructor(private readonly records: RecordsService) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'searchRecords',
    summary: 'Search records',
    description: [
      'Finds records of a sync by a remote record id (either side), a `rec_` id or display text. ' +
        'Best first: exact id matches (the `rec_` id, then remote ids equal to the query, left then ' +
        'right), then display names equal to or starting with the query, then names containing it ' +
        '(case-insensitive).',
      'Capped, not paginated: at most `limit` hits, `next_cursor` is always null, and `has_more: ' +
        'true` means more records matched; narrow the query (or add `table`). On a very large sync the ' +
        'substring pass may be cut short, which also answers `has_more: true`.',
      'Each hit links its status document (`url`) and opens the record in a connected app (`browser_url`).',
    ].join('\n\n'),
  })
  @ApiQuery({ name: 'sync', required: true, description: 'Sync id (`sync_...`).' })
  @ApiQuery({
    name: 'query',
    required: true,
    description: 'A remote record id of either side, a `rec_` id, or display text.',
  })
  @ApiQuery({
    name: 'table',
    required: false,
    description: "Only records of this table: a `table_...` id of either side, or a table's remote id.",
  })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-25 (default 10).' })
  @ApiOkResponse({ type: RecordSearchDto })
  @ApiErrors({
    400: [
      'missing_sync',
      'invalid_sync',
      'missing_query',
      'invalid_table',
      'invalid_limit',
      'invalid_request',
    ],
    404: ['not_found'],
  })
  search(
    @Auth() auth: AuthContext,
    @Query('sync') sync: unknown,
    @Query('query') query: unknown,
    @Query('table') table: unknown,
    @Query('limit') limit: unknown,
  ): Promise<RecordSearchDto> {
    return this.records.search(auth, { sync, query, table, limit });
  }

  @Get(':record_id')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getRecordStatus',
    summary: 'Record status',
    description: [
      'The record status document: per side the copy (`remote_id`, `is_deleted`, `is_filtered`, ' +
        '`is_sync_disabled`, the operations queued for it, `browser_url`) or null when that side has ' +
        "no copy; the record's queue in run order; its open issues; its held delete (`pending_delete`) " +
        'and their history (`pending_delete_events`); the most recent operations of both sides with ' +
        '`operations_url` for the rest.',
      "Queue positions count over the record's whole queue, 1 runs next; a side lists the entries " +
        'that concern it with their positions, an entry for both sides (a push waiting for a linked ' +
        'record) on both.',
      '`400 ambiguous_record` when a connected-app id names records in several tables ' +
        '(`details.candidates`); add `table` or use the `rec_` id.',
    ].join('\n\n'),
  })
  @ApiParam(RECORD_ID)
  @ApiQuery(SYNC_FOR_RECORD)
  @ApiQuery(TABLE_FOR_RECORD)
  @ApiOkResponse({ type: RecordStatusDto })
  @ApiErrors({
    400: ['missing_sync', 'invalid_sync', 'invalid_table', 'ambiguous_record'],
    404: ['not_found'],
  })
  get(
    @Auth() auth: AuthContext,
    @Param('record_id') recordId: string,
    @Query('sync') sync: unknown,
    @Query('table') table: unknown,
  ): Promise<RecordStatusDto> {
    return this.records.status(auth, recordId, { sync, table });
  }

  @Post(':record_id/refetch')
  @HttpCode(202)
  @RequiredScope('operate')
  @ApiOperation({
    operationId: 'refetchRecord',
    summary: 'Refetch a record',
    description: [
      "Queues a read of the record's copy on `side`, or without a body on every side holding a copy; " +
        'the worker reads it from the app and syncs what changed. The refetch runs after the ' +
        'operations already queued for the record (see `queued_operations` in the status document). ' +
        'Repeating the request while the refetch still waits at the end of the queue adds nothing.',
      'Same id and query rules as the status document. `400 no_copy_to_refetch` when the side (or ' +
        'every side) has no copy. On a paused sync the refetch waits until the sync runs again.',
    ].join('\n\n'),
  })
  @ApiParam(RECORD_ID)
  @ApiQuery(SYNC_FOR_RECORD)
  @ApiQuery(TABLE_FOR_RECORD)
  @ApiBody({ type: RefetchRequestDto, required: false })
  @ApiAcceptedResponse({ type: RefetchResultDto })
  @ApiErrors({
    400: [
      'missing_sync',
      'invalid_sync',
      'invalid_table',
      'invalid_side',
      'invalid_request',
      'ambiguous_record',
      'no_copy_to_refetch',
    ],
    404: ['not_found'],
  })
  refetch(
    @Auth() auth: AuthContext,
    @Param('record_id') recordId: string,
    @Query('sync') sync: unknown,
    @Query('table') table: unknown,
    @Body() body: unknown,
  ): Promise<RefetchResultDto> {
    return this.records.refetch(auth, recordId, { sync, table }, body);
  }
}
