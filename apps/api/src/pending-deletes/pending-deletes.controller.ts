import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { PendingDeleteListDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/openapi/api-errors';
import { PendingDeletesService } from './pending-deletes.service';

@ApiTags('Pending deletes')
@ApiBearerAuth('api_key')
@Controller('v1/sync/pending-deletes')
export class PendingDeletesController {
  constructor(private readonly pendingDeletes: PendingDeletesService) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listPendingDeletes',
    summary: 'List held deletes',
    description: [
      'Records that went missing on one side of a sync with `delete_approval: review_required`: the ' +
        'delete is held instead of being applied to the other side. Newest first.',
      'Each entry names the side where the record went missing (`missing_side`), the side an ' +
        'approval deletes it from (`delete_from_side`), the surviving copy (`record`, null once that ' +
        'side holds no copy either), the record status document (`record_url`) and the page where a ' +
        'person approves, ignores or restores it (`review_url`). No API operation decides a held ' +
        'delete.',
      '`state=ignored` lists the ones a person ignored (dormant, not raised again). `409 ' +
        'delete_approval_disabled` when the sync applies deletes without review.',
    ].join('\n\n'),
  })
  @ApiQuery({ name: 'sync', required: true, description: 'Sync id (`sync_...`).' })
  @ApiQuery({
    name: 'state',
    required: false,
    enum: ['awaiting_review', 'ignored'],
    description: 'Default `awaiting_review`.',
  })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-100 (default 20).' })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`next_cursor` of the previous page, unchanged.',
  })
  @ApiOkResponse({ type: PendingDeleteListDto })
  @ApiErrors({
    400: ['missing_sync', 'invalid_sync', 'invalid_state', 'invalid_limit', 'invalid_cursor'],
    404: ['not_found'],
    409: ['delete_approval_disabled'],
  })
  list(
    @Auth() auth: AuthContext,
    @Query('sync') sync: unknown,
    @Query('state') state: unknown,
    @Query('limit') limit: unknown,
    @Query('cursor') cursor: unknown,
  ): Promise<PendingDeleteListDto> {
    return this.pendingDeletes.list(auth, { sync, state, limit, cursor });
  }
}
