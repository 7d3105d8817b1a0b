import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { OperationDto, OperationListDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/openapi/api-errors';
import { OperationsService } from './operations.service';

@ApiTags('Monitoring')
@ApiBearerAuth('api_key')
@Controller('v1/sync/operations')
export class OperationsController {
  constructor(private readonly operations: OperationsService) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listOperations',
    summary: 'List operations',
    description: [
      'The record-level change log of one sync, newest first (`occurred_at` descending, ties in the ' +
        'order the engine wrote them). Each record change shows on both sides: a `poll` operation on ' +
        'the side where Lockstep detected it and a `push` operation on the side it wrote it to.',
      'The list form omits `field_changes` and returns `record.url` as null; `GET ' +
        '/sync/operations/{id}` has both. 20 operations per page unless `limit` says otherwise.',
      'A one-sync key sees only its sync (`404 not_found` for others).',
    ].join('\n\n'),
  })
  @ApiQuery({ name: 'sync', required: true, description: 'The sync (`sync_...`).' })
  @ApiQuery({
    name: 'table',
    required: false,
    description:
      'Only operations on this table: a `table_...` id of either side (as in `table.id`), or a ' +
      "table's remote id (an exact unique name also works). A bare reference found on both sides is " +
      '`400 table_ambiguous`; not a table of this sync is `400 invalid_table`.',
  })
  @ApiQuery({
    name: 'record',
    required: false,
    description: "Only operations of this record (`rec_...`, as in `record_id`), both sides' copies.",
  })
  @ApiQuery({
    name: 'since',
    required: false,
    description:
      'Only operations at or after this ISO 8601 time, for example `2026-01-31T12:00:00Z` (a time ' +
      'without a zone is UTC).',
  })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-100 (default 20).' })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`next_cursor` of the previous page, unchanged (with the same `sync` and filters).',
  })
  @ApiOkResponse({ type: OperationListDto })
  @ApiErrors({
    400: [
      'missing_sync',
      'invalid_sync',
      'invalid_table',
      'table_ambiguous',
      'invalid_request',
      'invalid_since',
      'invalid_limit',
      'invalid_cursor',
    ],
    404: ['not_found'],
  })
  list(
    @Auth() auth: AuthContext,
    @Query('sync') sync?: unknown,
    @Query('table') table?: unknown,
    @Query('record') record?: unknown,
    @Query('since') since?: unknown,
    @Query('limit') limit?: unknown,
    @Query('cursor') cursor?: unknown,
  ): Promise<OperationListDto> {
    return this.operations.list(auth, { sync, table, record, since, limit, cursor });
  }

  @Get(':id')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getOperation',
    summary: 'Get an operation',
    description:
      'One operation with its `field_changes` (before and after per field) and `record.url` (opens ' +
      "the record's copy on the operation's side). `404 not_found` for unknown ids, another " +
      "account's operations and, for a one-sync key, other syncs' operations.",
  })
  @ApiParam({ name: 'id', description: 'Operation id (`op_...`).' })
  @ApiOkResponse({ type: OperationDto })
  @ApiErrors({ 404: ['not_found'] })
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<OperationDto> {
    return this.operations.get(auth, id);
  }
}
