import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';

const REF_DESCRIPTION =
  'A `remote_id`, a prefixed id or an exact name unique on that side; or `{create: {name}}` to have ' +
  'the service create it on that side, typed from the mapped counterpart (at most one side of a ' +
  'pair). A read returns remote ids.';
const REF_SCHEMA = {
  oneOf: [
    { type: 'string' },
    {
      type: 'object',
      required: ['create'],
      properties: {
        create: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      },
    },
  ],
  description: REF_DESCRIPTION,
};

export class SideSettingsDto {
  @ApiPropertyOptional({
    enum: ['sync', 'do_nothing'],
    default: 'sync',
    description:
      "What a delete on the other side does to this table's records: `sync` deletes (subject to " +
      'delete approval), `do_nothing` protects them.',
  })
  record_delete_behavior?: string;

  @ApiPropertyOptional({
    description:
      "A view value from the table's `views.options` (only for tables whose `views` is not null; " +
      'required when `views.required`). `left_view`/`right_view` at the table pair level are ' +
      'accepted as aliases on input.',
  })
  view?: string;
}

export class FieldPairDto {
  @ApiProperty(REF_SCHEMA) left_field: unknown;
  @ApiProperty(REF_SCHEMA) right_field: unknown;
  @ApiPropertyOptional({
    enum: ['left_to_right', 'right_to_left', 'two_way', 'invalid'],
    description:
      "Defaults to the table pair's direction and must be allowed by it. A read shows `invalid` when " +
      'schema drift disabled every way the pair had; a PUT must send a real direction.',
  })
  direction?: string;
}

export class TablePairDto {
  @ApiProperty(REF_SCHEMA) left_table: unknown;
  @ApiProperty(REF_SCHEMA) right_table: unknown;
  @ApiProperty({ enum: ['left_to_right', 'right_to_left', 'two_way'] }) direction: string;
  @ApiPropertyOptional({ type: SideSettingsDto }) left?: SideSettingsDto;
  @ApiPropertyOptional({ type: SideSettingsDto }) right?: SideSettingsDto;
  @ApiProperty({ type: [FieldPairDto] }) fields: FieldPairDto[];
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'Read-only (`{match: all|any, conditions, summary}`), edited only in the app; ignored on PUT, ' +
      'the stored value is kept.',
  })
  filter?: Record<string, unknown>;
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description:
      'Read-only list of settings off their default (`kind`, `side`, `value`, `description`); ' +
      'ignored on PUT.',
  })
  advanced_settings?: Record<string, unknown>[];
}

export class MappingsDocumentDto {
  @ApiProperty({ type: [TablePairDto] }) tables: TablePairDto[];
}

export class ValidateRequestDto {
  @ApiPropertyOptional({
    type: MappingsDocumentDto,
    description:
      'The candidate document. Omit it (or send no body) to validate the stored one. A bare document ' +
      '(`{tables: [...]}`) is accepted too.',
  })
  mappings?: MappingsDocumentDto;
}

export class ValidationIssueDto {
  @ApiProperty({ enum: ['error', 'warning'] }) severity: string;
  @ApiProperty({
    description:
      'Spec 7.3 code, `nothing_mapped` (an addition to spec 7.3: the document maps no table pair, an ' +
      'error), or `invalid_mappings` for a structural fault.',
  })
  code: string;
  @ApiProperty({
    description: 'JSON pointer into the document, for example `/tables/0/fields/1/right_field`.',
  })
  path: string;
  @ApiProperty({ type: String, nullable: true, enum: ['left', 'right', null] }) side: string | null;
  @ApiProperty() message: string;
}

export class ValidationResultDto {
  @ApiProperty({
    type: [ValidationIssueDto],
    description:
      'Empty means valid. Errors block starting the sync, not saving a draft; warnings never block.',
  })
  issues: ValidationIssueDto[];
}

export const MAPPINGS_DOCUMENT_REF = getSchemaPath(MappingsDocumentDto);
