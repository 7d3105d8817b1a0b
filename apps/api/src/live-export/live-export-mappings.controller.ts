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
import { ExportMappingsDocumentDto, ExportValidationResultDto, SaveDto } from '@lockstep/contracts';
import { LIVE_EXPORT_MAPPING_FAULTS } from '@lockstep/domain';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { NotForSyncRestrictedKeys, RequiredScope } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/openapi/api-errors';
import { LiveExportMappingsService } from './live-export-mappings.service';
import { LIVE_EXPORT_ID } from './live-exports.controller';

const etag = (version: number) => `"${version}"`;
const ETAG_HEADER = {
  ETag: {
    description: 'The mappings version, for example `"3"`; send it back as `If-Match`.',
    schema: { type: 'string' },
  },
};

const RULES = [
  'Document: `{tables: [{source_table, destination_table?, fields: [{source_field, ' +
    'destination_field?, primary?}]}]}`. `source_table` / `source_field` are remote ids from the ' +
    'source listings (an exact unique name is accepted and stored as the remote id). ' +
    '`destination_table` / `destination_field` name the table and column the export creates in the ' +
    'destination location (letters, digits, underscores, at most 63; default: the source name made ' +
    'into such a name). `primary` marks at most one field per table (informative; destination rows are ' +
    'keyed by the hidden `lockstep_source_id`). The export never writes into existing columns.',
  'Rules: `unknown_source_table`, `unknown_source_field` (link fields and fields of unsupported ' +
    'types are never exportable), `duplicate_source_table`, `duplicate_destination_table` (two entries ' +
    'write the same destination table), `duplicate_field_name` (two columns with the same name, ' +
    'case-insensitive, or a hidden column name `lockstep_source_id` / `lockstep_row_hash`), ' +
    '`multiple_primary_fields`, `empty_table_mapping`, `existing_field_not_supported` (the destination ' +
    'table already has a column of that name that the export did not create), ' +
    '`applied_table_not_editable` (a table the last save created in the current location may only gain ' +
    'fields: renaming it, or dropping, renaming or re-pointing one of its saved columns is refused; ' +
    'leaving the whole table out is allowed and the table stays in the destination; another source ' +
    'table cannot take over its name). Validation only: `auth_required` (a side is not connected) and ' +
    '`internal` (validation itself failed; retry).',
].join('\n\n');

@ApiTags('Live export')
@ApiBearerAuth('api_key')
@NotForSyncRestrictedKeys()
@Controller('v1/live-export/live-exports/:id')
export class LiveExportMappingsController {
  constructor(private readonly mappings: LiveExportMappingsService) {}

  @Get('mappings')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getLiveExportMappings',
    summary: 'Get the live export mappings document',
    description:
      `The edited document, resolved (remote ids, every name filled in). Header \`ETag\` is its version ` +
      `(\`mappings_version\`).\n\n${RULES}`,
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: ExportMappingsDocumentDto, headers: ETAG_HEADER })
  @ApiErrors({ 404: ['not_found'] })
  async get(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    const view = await this.mappings.get(auth, id);
    res.setHeader('ETag', etag(view.version));
    return view.document;
  }

  @Put('mappings')
  @RequiredScope('readwrite')
  @ApiOperation({
    operationId: 'updateLiveExportMappings',
    summary: 'Replace the live export mappings document',
    description: [
      'Full replace, compare-and-set: `If-Match` is required (`400 invalid_request` without it; `412 ' +
        'revision_mismatch` when stale). `Idempotency-Key` is not accepted here (`400 ' +
        'invalid_request`): a retried PUT with a now stale `If-Match` answers 412, so retries are ' +
        'already safe.',
      'The document is checked against the source (and, once the destination has a location, against ' +
        "the destination's existing tables) before it is stored: a structural fault is `400 " +
        "invalid_mappings`; any rule below refuses the PUT with that rule's code and every issue in " +
        '`details.issues`. `409 auth_required` while the source is not connected. An identical ' +
        'document changes nothing (same ETag). A stored change is an unsaved change until `POST ' +
        '.../save`.',
      RULES,
    ].join('\n\n'),
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiHeader({ name: 'If-Match', required: true, description: 'The `ETag` of the document you edited.' })
  @ApiBody({ type: ExportMappingsDocumentDto })
  @ApiOkResponse({ type: ExportMappingsDocumentDto, headers: ETAG_HEADER })
  @ApiErrors({
    400: ['invalid_request', 'invalid_mappings', ...LIVE_EXPORT_MAPPING_FAULTS, 'connection_failed'],
    403: ['live_export_unavailable'],
    404: ['not_found'],
    409: ['auth_required'],
    412: ['revision_mismatch'],
  })
  async put(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    const view = await this.mappings.put(auth, id, body, ifMatch, idempotencyKey);
    res.setHeader('ETag', etag(view.version));
    return view.document;
  }

  @Post('mappings/validate')
  @HttpCode(200)
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'validateLiveExportMappings',
    summary: 'Validate live export mappings',
    description:
      `Side-effect free (a read key may call it). Body: empty (the stored document), \`{mappings: ` +
      `{...}}\` or a bare document. Returns \`{valid, issues: [{code, message, path}]}\`; \`path\` is ` +
      `like \`tables[0]\` or \`tables[0].fields[1]\`, or null. A structurally malformed candidate is ` +
      `\`400 invalid_mappings\`. Source and destination problems are issues, never errors: ` +
      `\`auth_required\` per unconnected side, \`internal\` when validation could not finish (for ` +
      `example the source is unreachable).\n\n${RULES}`,
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiBody({ type: ExportMappingsDocumentDto, required: false })
  @ApiOkResponse({ type: ExportValidationResultDto })
  @ApiErrors({ 400: ['invalid_mappings'], 404: ['not_found'] })
  validate(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<ExportValidationResultDto> {
    return this.mappings.validate(auth, id, body);
  }

  @Post('save')
  @HttpCode(200)
  @RequiredScope('readwrite')
  @ApiOperation({
    operationId: 'saveLiveExport',
    summary: 'Save: provision the destination',
    description: [
      "Validates the stored mappings against both apps as they are now (refused with the rule's code " +
        'and `details.issues`; `400 empty_mappings` when nothing is mapped; `409 auth_required` when a ' +
        'side is not connected; `400 invalid_location` when no location is chosen), then creates in ' +
        'the destination location every mapped table and column, typed from the source, plus the ' +
        'hidden `lockstep_source_id` (unique) and `lockstep_row_hash` columns. Idempotent: existing ' +
        'tables of the export gain missing columns; nothing is dropped or retyped.',
      'Then records the plan runs execute (`saved_version` = the saved `mappings_version`, ' +
        '`saved_at`). The response lists each table with `created` and `added_columns`. `409 ' +
        'live_export_invalid_structure` when a destination table cannot be written by the export ' +
        '(changed outside the service); `422 unprocessable` when the destination refuses a name or ' +
        'type.',
    ].join('\n\n'),
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: SaveDto })
  @ApiErrors({
    400: [
      'empty_mappings',
      'invalid_location',
      ...LIVE_EXPORT_MAPPING_FAULTS,
      'connector_not_supported',
      'connection_failed',
    ],
    403: ['live_export_unavailable'],
    404: ['not_found'],
    409: ['auth_required', 'live_export_invalid_structure'],
    422: ['unprocessable'],
  })
  save(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SaveDto> {
    return this.mappings.save(auth, id);
  }

  @Get('save')
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'getLiveExportSave',
    summary: 'Get the last save',
    description:
      'What the last save provisioned (the plan runs execute): version, time, location and tables. ' +
      '`unsaved_changes` tells whether the mappings changed since. `404 not_found` when the export ' +
      'was never saved.',
  })
  @ApiParam(LIVE_EXPORT_ID)
  @ApiOkResponse({ type: SaveDto })
  @ApiErrors({ 404: ['not_found'] })
  lastSave(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SaveDto> {
    return this.mappings.lastSave(auth, id);
  }
}
