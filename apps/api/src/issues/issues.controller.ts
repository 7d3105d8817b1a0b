import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
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
import { ISSUE_TYPES, IssueDto, IssueListDto, IssueRetryDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/openapi/api-errors';
import { IssuesService } from './issues.service';

const ISSUE_ID = { name: 'id', description: 'Issue id (`iss_...`).' };

@ApiTags('Monitoring')
@ApiBearerAuth('api_key')
@Controller('v1/sync/issues')
export class IssuesController {
  constructor(private readonly issues: IssuesService) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listIssues',
    summary: 'List open issues',
    description: [
      'The unresolved issues of one sync, newest first by `last_seen_at` (an issue the engine runs ' +
        'into again moves to the top; ties by id). Each carries its `remediation`. Resolved issues are ' +
        'not listed: the engine clears an issue once its cause is gone, and a retry clears it at once. ' +
        'An issue is one failure (of one record and side, or of one side): when the engine runs into a ' +
        'failure it has seen before, that issue opens again with its id instead of a new one.',
      '20 issues per page unless `limit` says otherwise. A one-sync key sees only its sync (`404 ' +
        'not_found` for others).',
    ].join('\n\n'),
  })
  @ApiQuery({ name: 'sync', required: true, description: 'The sync (`sync_...`).' })
  @ApiQuery({ name: 'type', required: false, enum: ISSUE_TYPES, description: 'Only issues of this area.' })
  @ApiQuery({ name: 'limit', required: false, description: 'Integer 1-100 (default 20).' })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`next_cursor` of the previous page, unchanged (with the same `sync` and `type`).',
  })
  @ApiOkResponse({ type: IssueListDto })
  @ApiErrors({
    400: ['missing_sync', 'invalid_sync', 'invalid_type', 'invalid_limit', 'invalid_cursor'],
    404: ['not_found'],
  })
  list(
    @Auth() auth: AuthContext,
    @Query('sync') sync?: unknown,
    @Query('type') type?: unknown,
    @Query('limit') limit?: unknown,
    @Query('cursor') cursor?: unknown,
  ): Promise<IssueListDto> {
    return this.issues.list(auth, { sync, type, limit, cursor });
  }

  @Get(':id')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getIssue',
    summary: 'Get an issue',
    description:
      'One issue with its remediation (resolved issues too). `404 not_found` for unknown ids, ' +
      "another account's issues and, for a one-sync key, other syncs' issues.",
  })
  @ApiParam(ISSUE_ID)
  @ApiOkResponse({ type: IssueDto })
  @ApiErrors({ 404: ['not_found'] })
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<IssueDto> {
    return this.issues.get(auth, id);
  }

  @Post(':id/retry')
  @HttpCode(202)
  @RequiredScope('operate')
  @ApiOperation({
    operationId: 'retryIssue',
    summary: 'Retry an issue',
    description: [
      'Clears the issue (it leaves the open list) and gives the engine the work again; 202 with the ' +
        'confirmation.',
      "- `record`: a `push` of the record joins the record's queue (after what is already queued " +
        'there; the status document at `record_url` shows it under `queued_operations`). The worker ' +
        'runs it within about a second: it reads both copies and writes what the other side misses, ' +
        'like after a change.',
      '- `connection`: the sync tries the side again at once instead of at the end of its backoff; ' +
        'for rejected credentials (`authentication_error`) the stored credentials are tried again.',
      '- `sync_preview`, `webhook`, `other`: cleared.',
      'When the cause persists the engine runs into it again and the same issue opens again (same ' +
        'id, `resolved_at` back to null, `occurrence_count` and `last_seen_at` moved on), so polling ' +
        'the retried id tells whether the retry fixed it. Safe to repeat: a retry of an issue already ' +
        'cleared (by an earlier retry, or by the engine) answers 202 with `already_resolved: true` and ' +
        'queues nothing.',
    ].join('\n\n'),
  })
  @ApiParam(ISSUE_ID)
  @ApiBody({ required: false, schema: { type: 'object' } })
  @ApiAcceptedResponse({ type: IssueRetryDto })
  @ApiErrors({ 404: ['not_found'] })
  retry(@Auth() auth: AuthContext, @Param('id') id: string): Promise<IssueRetryDto> {
    return this.issues.retry(auth, id);
  }
}
