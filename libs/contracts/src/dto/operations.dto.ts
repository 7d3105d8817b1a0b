import { ApiProperty } from '@nestjs/swagger';

/** Every `action` the engine writes to the change log. */
export const OPERATION_ACTIONS = ['created', 'updated', 'deleted'] as const;

export class OperationTableDto {
  @ApiProperty({
    description: "The table on the operation's side (`table_...`).",
    example: 'table_0123456789abcdefghij',
  })
  id: string;
  @ApiProperty({ description: "The table's name at the time of the operation." }) name: string;
}

export class OperationRecordDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      "The record's id in the connected app on the operation's side (null when that side has no copy yet).",
  })
  remote_id: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Display text of the record at the time (its first mapped text value).',
  })
  name: string | null;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description:
      "Opens the record's copy on the operation's side in a browser. Always null in the list form; " +
      'set in the single-operation form.',
  })
  url: string | null;
}

/** A field value: any JSON value, null included. */
const ANY_JSON = [
  { type: 'string' },
  { type: 'number' },
  { type: 'boolean' },
  { type: 'array', items: {} },
  { type: 'object', additionalProperties: true },
  { type: 'null' },
];

export class FieldChangeDto {
  @ApiProperty({ description: "Field name on the operation's side." }) field: string;
  @ApiProperty({
    description: "The value before (null for a create), in the side's own representation.",
    oneOf: ANY_JSON,
  })
  before: unknown;
  @ApiProperty({ description: 'The value after.', oneOf: ANY_JSON }) after: unknown;
}

const ACTION_DESCRIPTION =
  'What happened to the record on `side`: `created` (a new copy), `updated` (field values changed; ' +
  'see `field_changes`), `deleted` (the copy is gone: a `poll` delete was detected and confirmed by ' +
  'a read by id, `details.decision` says what the delete rules did with the other copy; a `push` ' +
  'delete was carried out by Lockstep, `details.approved: true` when a person approved a held ' +
  'delete). New values may be added; treat unknown ones as informational.';

/** A record-level change-log entry (spec 2.10), list form: no `field_changes`, `record.url` null. */
export class OperationListItemDto {
  @ApiProperty({ example: 'op_0123456789abcdefghij' }) id: string;
  @ApiProperty({ type: String, format: 'date-time' }) occurred_at: string;
  @ApiProperty() sync_id: string;
  @ApiProperty({ enum: OPERATION_ACTIONS, description: ACTION_DESCRIPTION }) action: string;
  @ApiProperty({
    enum: ['push', 'poll'],
    description:
      '`push`: Lockstep wrote the change to this side; `poll`: Lockstep detected the change on this side.',
  })
  trigger: 'push' | 'poll';
  @ApiProperty({
    type: String,
    enum: ['left', 'right'],
    nullable: true,
    description: 'The side the operation happened on (extra field).',
  })
  side: 'left' | 'right' | null;
  @ApiProperty({ type: OperationTableDto, nullable: true }) table: OperationTableDto | null;
  @ApiProperty({ type: OperationRecordDto }) record: OperationRecordDto;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'The synced record pair (`rec_...`), the same on both sides (extra field); pass it as `record` ' +
      "to list both sides' operations of the record.",
  })
  record_id: string | null;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description: "The record's status document (`GET /sync/records/{record_id}`), extra field.",
  })
  record_url: string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      'Extra context (extra field), for example `conflicts` (`[{field, winner, reason}]`) on a push ' +
      'that settled concurrent edits, `decision` on a detected delete, `approved` on a delete a ' +
      'person approved.',
  })
  details: Record<string, unknown> | null;
}

/** The single-operation form: with `field_changes` and `record.url`. */
export class OperationDto extends OperationListItemDto {
  @ApiProperty({
    type: [FieldChangeDto],
    description:
      "Per field: the value before and after, as the operation's side shows it. A create lists the " +
      'values written or detected (before null); a delete lists none.',
  })
  field_changes: FieldChangeDto[];
}

export class OperationListDto {
  @ApiProperty({ type: [OperationListItemDto] }) data: OperationListItemDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Opaque; pass back unchanged as `cursor` with the same `sync` and filters.',
  })
  next_cursor: string | null;
}
