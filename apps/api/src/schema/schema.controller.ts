import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { FieldListDto, SchemaLoadingDto, TableListDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope } from '../common/auth/auth.decorators';
import { ERROR_RESPONSE_REF } from '../common/openapi/api-errors';
import { isSchemaLoading } from './schema.mapper';
import { SchemaService } from './schema.service';

/** Seconds a client waits before repeating a GET that answered `202 {loading: true}`. */
export const SCHEMA_RETRY_AFTER_SECONDS = 2;

const SYNC_ID = { name: 'sync_id', description: 'Sync id (`sync_...`).' };
const REFRESH = {
  name: 'refresh',
  required: false,
  enum: ['true', 'false'],
  description:
    '`true` reads the list from the app again instead of the cache; needs the sync off (`409 ' +
    'sync_active` while it is active). Default `false`.',
};
const error = (status: number, codes: string[]) => ({
  status,
  description: `Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
  content: { 'application/json': { schema: { $ref: ERROR_RESPONSE_REF } } },
});
const LOADING = {
  status: 202,
  description:
    'Another request is reading this schema from the app right now. Body `{loading: true}`; repeat ' +
    'the same GET after `Retry-After` seconds.',
  type: SchemaLoadingDto,
  headers: {
    'Retry-After': {
      description: 'Seconds to wait before repeating the request.',
      schema: { type: 'integer' },
    },
  },
};

/**
 * Schema discovery (spec 4.3): the tables and fields of a sync's sides. The 202 answer is decided by the
 * service (`{loading: true}`); the controller only turns it into the status and the `Retry-After` header.
 */
@ApiTags('Schema')
@ApiBearerAuth('api_key')
@Controller('v1/sync/syncs/:sync_id/tables')
export class SchemaController {
  constructor(private readonly schema: SchemaService) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listTables',
    summary: 'List the tables of a side',
    description: [
      "The tables of one side's app (spec 2.7). The first request reads them from the app (this may " +
        'take a few seconds) and caches them; later requests answer from the cache (same `fetched_at`) ' +
        'until `refresh=true`.',
      'A table keeps its `table_` id across refreshes while the app keeps its remote id. Tables the ' +
        'app no longer has are not listed (mappings that still reference them report ' +
        '`orphaned_table`); a table that comes back gets its old id again.',
      'Each table carries `fields_url`, the link to its fields.',
    ].join('\n\n'),
  })
  @ApiParam(SYNC_ID)
  @ApiQuery({
    name: 'side',
    required: true,
    enum: ['left', 'right'],
    description: "Which side's tables (`400 invalid_side` when missing or anything else).",
  })
  @ApiQuery(REFRESH)
  @ApiOkResponse({ type: TableListDto })
  @ApiResponse(LOADING)
  @ApiResponse(error(400, ['invalid_side', 'invalid_request', 'invalid_auth', 'connection_error']))
  @ApiResponse(error(404, ['not_found']))
  @ApiResponse(error(409, ['auth_required', 'sync_active']))
  async listTables(
    @Auth() auth: AuthContext,
    @Param('sync_id') syncId: string,
    @Query('side') side: unknown,
    @Query('refresh') refresh: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<TableListDto | SchemaLoadingDto> {
    return loadingAware(res, await this.schema.listTables(auth, syncId, { side, refresh }));
  }

  @Get(':table_id/fields')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listFields',
    summary: 'List the fields of a table',
    description: [
      'The fields of one table (spec 2.7), read from the app on the first request for that table and ' +
        'cached until `refresh=true`. A field keeps its `field_` id across refreshes while the app ' +
        'keeps its remote id; fields the app no longer has are not listed.',
      '`table_id` is the prefixed id (`table_...`, resolved on its own side) or a bare string: a ' +
        'remote id, else an exact table name unique on the searched sides. Without `side` both sides ' +
        'are searched and a remote id wins over a name; a remote id (or name) found on both sides is ' +
        '`400 table_ambiguous`: use the prefixed id or pass `side`. A side whose table list was never ' +
        'fetched is fetched first.',
    ].join('\n\n'),
  })
  @ApiParam(SYNC_ID)
  @ApiParam({
    name: 'table_id',
    description: "Prefixed table id (`table_...`) or the table's remote id (or unique exact name).",
  })
  @ApiQuery({
    name: 'side',
    required: false,
    enum: ['left', 'right'],
    description: 'Restricts resolution of `table_id` to one side.',
  })
  @ApiQuery(REFRESH)
  @ApiOkResponse({ type: FieldListDto })
  @ApiResponse(LOADING)
  @ApiResponse(
    error(400, ['invalid_side', 'invalid_request', 'table_ambiguous', 'invalid_auth', 'connection_error']),
  )
  @ApiResponse(error(404, ['not_found']))
  @ApiResponse(error(409, ['auth_required', 'sync_active']))
  async listFields(
    @Auth() auth: AuthContext,
    @Param('sync_id') syncId: string,
    @Param('table_id') tableId: string,
    @Query('side') side: unknown,
    @Query('refresh') refresh: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<FieldListDto | SchemaLoadingDto> {
    return loadingAware(res, await this.schema.listFields(auth, syncId, tableId, { side, refresh }));
  }
}

/** `{loading: true}` is answered with 202 and `Retry-After`. */
function loadingAware<T extends object>(res: Response, body: T): T {
  if (isSchemaLoading(body)) res.status(202).setHeader('Retry-After', String(SCHEMA_RETRY_AFTER_SECONDS));
  return body;
}
