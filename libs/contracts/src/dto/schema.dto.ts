import { ApiExtraModels, ApiProperty, getSchemaPath } from '@nestjs/swagger';

export class ViewOptionDto {
  @ApiProperty({ description: 'Value to send as `view` in the mappings document.' }) value: string;
  @ApiProperty() name: string;
}

export class TableViewsDto {
  @ApiProperty({ description: 'The table can only be synced through one of its views.' }) required: boolean;
  @ApiProperty({ type: [ViewOptionDto] }) options: ViewOptionDto[];
}

@ApiExtraModels(TableViewsDto)
export class TableDto {
  @ApiProperty({
    description: '`table_<id>`, stable while the app keeps the table under the same remote id.',
    example: 'table_0a1b2c3d4e5f6g7h8i9j',
  })
  id: string;
  @ApiProperty({ description: "The table's id in the connected app (for databases: the table name)." })
  remote_id: string;
  @ApiProperty() name: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: "When this table's fields were last read from the app; null until they are first requested.",
  })
  fields_fetched_at: string | null;
  @ApiProperty({
    oneOf: [{ $ref: getSchemaPath(TableViewsDto) }, { type: 'null' }],
    description: 'Null when the connector has no views (then omit `view` in mappings).',
  })
  views: TableViewsDto | null;
  @ApiProperty({
    description:
      'The table cannot be written (for example a database view): it can only be the source of a ' +
      'one-way mapping.',
  })
  read_only: boolean;
  @ApiProperty({ format: 'uri', description: "This table's field listing." }) fields_url: string;
}

export class TableListDto {
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'When the table list was read from the app (cache fill); `refresh=true` reads it again.',
  })
  fetched_at: string;
  @ApiProperty({ enum: ['left', 'right'] }) side: 'left' | 'right';
  @ApiProperty({
    type: [TableDto],
    description:
      'The tables the app had at `fetched_at`. A table the app no longer lists is left out; mappings ' +
      'that still reference it report `orphaned_table` on validation.',
  })
  data: TableDto[];
  @ApiProperty({ description: 'Always false: the list is complete.' }) has_more: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Always null.' }) next_cursor: string | null;
}

export class FieldDto {
  @ApiProperty({
    description: '`field_<id>`, stable while the app keeps the field under the same remote id.',
    example: 'field_0a1b2c3d4e5f6g7h8i9j',
  })
  id: string;
  @ApiProperty({ description: "The field's id in the connected app (for databases: the column name)." })
  remote_id: string;
  @ApiProperty() name: string;
  @ApiProperty({
    description:
      "The connector's own type name (for example `character varying(40)`, `int(11)`, `enum`); there " +
      'is no global type enum.',
  })
  type: string;
  @ApiProperty({ description: 'Values can be read.' }) read: boolean;
  @ApiProperty({ description: 'Values can be written (false for generated, identity and view columns).' })
  write: boolean;
  @ApiProperty({ description: 'A new record needs a value (writable, NOT NULL, no default).' })
  required: boolean;
  @ApiProperty({ description: "Part of the table's primary key." }) primary: boolean;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      'What the connector adds about the type, passed through: for example `display_name` (string), ' +
      '`allows_multiple_values` (boolean), `options`, `max_length`, `precision`/`scale`, ' +
      '`target_table`. Null when there is nothing to add.',
  })
  type_details: Record<string, unknown> | null;
}

export class FieldTableDto {
  @ApiProperty({ description: '`table_<id>`' }) id: string;
  @ApiProperty() remote_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: ['left', 'right'] }) side: 'left' | 'right';
}

export class FieldListDto {
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'When the fields were read from the app (cache fill); `refresh=true` reads them again.',
  })
  fetched_at: string;
  @ApiProperty({ type: FieldTableDto, description: 'The table the reference resolved to.' })
  table: FieldTableDto;
  @ApiProperty({
    type: [FieldDto],
    description: "The table's fields in the app's order. Fields the app no longer has are left out.",
  })
  data: FieldDto[];
  @ApiProperty({ description: 'Always false: the list is complete.' }) has_more: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Always null.' }) next_cursor: string | null;
}

export class SchemaLoadingDto {
  @ApiProperty({
    enum: [true],
    description:
      'Another request is reading this schema from the app; retry the same GET after `Retry-After` seconds.',
  })
  loading: true;
}
