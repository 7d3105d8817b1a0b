import { Body, Controller, Get, Headers, HttpCode, Param, Post, Put, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { MappingsDocumentDto, ValidateRequestDto, ValidationResultDto } from '@lockstep/contracts';
import { PUT_ERROR_CODES } from '@lockstep/domain';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope, RequiresSubscription } from '../common/auth/auth.decorators';
import { Idempotent } from '../common/idempotency/idempotency.interceptor';
import { ApiErrors } from '../common/openapi/api-errors';
import { MappingsService } from './mappings.service';

const SYNC_ID = { name: 'sync_id', description: 'Sync id (`sync_...`).' };
const etag = (revision: number) => `"${revision}"`;

@ApiTags('Mappings')
@ApiBearerAuth('api_key')
@Controller('v1/sync/syncs/:sync_id')
export class MappingsController {
  constructor(private readonly mappings: MappingsService) {}

  @Get('mappings')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getMappings',
    summary: 'Get the mappings document',
    description:
      'The document of spec 2.8 with references as remote ids; header `ETag` is the revision (send ' +
      'it back as `If-Match`). A field pair whose every direction was disabled by schema drift shows ' +
      '`direction: "invalid"`. `409 auth_required` until both sides are connected.',
  })
  @ApiParam(SYNC_ID)
  @ApiOkResponse({
    type: MappingsDocumentDto,
    headers: {
      ETag: { description: 'The mappings revision, for example `"3"`.', schema: { type: 'string' } },
    },
  })
  @ApiErrors({ 400: ['invalid_auth', 'connection_error'], 404: ['not_found'], 409: ['auth_required'] })
  async get(
    @Auth() auth: AuthContext,
    @Param('sync_id') syncId: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    const view = await this.mappings.get(auth, syncId);
    res.setHeader('ETag', etag(view.revision));
    return view.document;
  }

  @Put('mappings')
  @RequiredScope('readwrite')
  @RequiresSubscription()
  @Idempotent()
  @ApiOperation({
    operationId: 'updateMappings',
    summary: 'Replace the mappings document',
    description: [
      'Full replace: omitted pairs are unmapped, omitted settings revert to defaults (`direction` of ' +
        "a field pair defaults to the table pair's; `record_delete_behavior` to `sync`). Fetch, " +
        'modify, put.',
      'References: `remote_id`, prefixed id or exact unique name on that side (`table_ambiguous` ' +
        'when a name matches several tables). `{create: {name}}` creates the table or field in the ' +
        'app, typed from its counterpart; a retry adopts what an earlier attempt created. Tables whose ' +
        'fields were never fetched are fetched during the call. Every mapped table except a view is ' +
        'prepared: a `lockstep_id` service id column is added unless the table has one, whatever its ' +
        'primary key (a table keyed by one column keeps that key as the record id; any other is keyed ' +
        "by the new column); `table_setup_failed` when the app refuses. The sync's `user_confirmation` " +
        'instruction says, per side, what saving and starting write into the app.',
      'Everything is validated before anything is written: structural faults are `400 ' +
        'invalid_mappings`; unresolvable references and view faults are refused with their own code; ' +
        '`details.issues` lists every issue. Semantic errors that only block starting (type ' +
        'incompatibility, required fields, linked-record targets) are saved and reported by `POST ' +
        '/validate`.',
      'A change returns the sync to `draft` (a person reviews and starts it again); an identical ' +
        'document changes nothing. `409 sync_active` on an active sync (pause first); `412 ' +
        'revision_mismatch` when `If-Match` is not the current revision (the message and ' +
        '`details.current_revision` name the current one). `filter` and `advanced_settings` are ' +
        'read-only and kept as stored.',
    ].join('\n\n'),
  })
  @ApiParam(SYNC_ID)
  @ApiHeader({
    name: 'If-Match',
    required: false,
    description: 'The `ETag` of the document you edited; a stale revision is `412 revision_mismatch`.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Replays the first response for 24 hours.',
  })
  @ApiBody({ type: MappingsDocumentDto })
  @ApiOkResponse({
    type: MappingsDocumentDto,
    description: 'The resolved document (created objects under their real remote ids).',
    headers: { ETag: { description: 'The new revision.', schema: { type: 'string' } } },
  })
  @ApiErrors({
    400: [
      'invalid_mappings',
      ...PUT_ERROR_CODES,
      'create_failed',
      'table_setup_failed',
      'invalid_idempotency_key',
      'idempotency_key_reused',
      'invalid_auth',
      'connection_error',
    ],
    404: ['not_found'],
    409: ['auth_required', 'sync_active', 'idempotency_key_in_use'],
    412: ['revision_mismatch'],
  })
  async put(
    @Auth() auth: AuthContext,
    @Param('sync_id') syncId: string,
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    const view = await this.mappings.put(auth, syncId, body, ifMatch);
    res.setHeader('ETag', etag(view.revision));
    return view.document;
  }

  @Post('validate')
  @HttpCode(200)
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'validateMappings',
    summary: 'Validate mappings',
    description:
      'Side-effect free: checks a candidate document (body `{mappings: {...}}` or the bare document) ' +
      'or, with an empty body, the stored one. Creates are checked, never executed. Returns every ' +
      'spec 7.3 issue with its severity and JSON-pointer path, plus one addition to spec 7.3: ' +
      '`nothing_mapped` (error, path `/tables`) when the document maps no table pair, which is what ' +
      'refuses starting such a sync. `400 invalid_mappings` for a structurally malformed document.',
  })
  @ApiParam(SYNC_ID)
  @ApiBody({ type: ValidateRequestDto, required: false })
  @ApiOkResponse({ type: ValidationResultDto })
  @ApiErrors({
    400: ['invalid_mappings', 'invalid_auth', 'connection_error'],
    404: ['not_found'],
    409: ['auth_required'],
  })
  validate(
    @Auth() auth: AuthContext,
    @Param('sync_id') syncId: string,
    @Body() body: unknown,
  ): Promise<unknown> {
    return this.mappings.validate(auth, syncId, body);
  }
}
