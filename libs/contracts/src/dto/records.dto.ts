import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PendingDeleteDto } from './pending-deletes.dto';

// ---- request ----

/** Body of `POST /sync/records/{record_id}/refetch` (optional). */
export class RefetchRequestDto {
  @ApiPropertyOptional({
    enum: ['left', 'right'],
    description: "Refetch only this side's copy. Without it every side holding a copy is refetched.",
  })
  side?: 'left' | 'right';
}

// ---- shared pieces ----

export class RecordTableRefDto {
  @ApiProperty({ example: 'table_0123456789abcdefghij' }) id: string;
  @ApiProperty() name: string;
}

export class RecordTablesDto {
  @ApiProperty({
    type: RecordTableRefDto,
    nullable: true,
    description: 'null when the table pair is no longer in the mappings.',
  })
  left: RecordTableRefDto | null;
  @ApiProperty({ type: RecordTableRefDto, nullable: true }) right: RecordTableRefDto | null;
}

export class QueuedOperationDto {
  @ApiProperty({ enum: ['push', 'refetch', 'verify_delete'] }) type: string;
  @ApiProperty({
    description:
      "1-based place in the record's queue (the record's operations run in this order, across both sides).",
    example: 1,
  })
  position: number;
}

export class RecordQueueEntryDto extends QueuedOperationDto {
  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['left', 'right'],
    description:
      '`push`: the side written; `refetch`: the side read; `verify_delete`: the side whose copy went ' +
      'missing. null: both sides (a push waiting for a linked record).',
  })
  side: string | null;
}

// ---- search ----

export class RecordHitCopyDto {
  @ApiProperty({ description: "The record's id in the connected app." }) remote_id: string;
  @ApiProperty({ description: 'The copy was deleted in the app.' }) is_deleted: boolean;
  @ApiProperty({ format: 'uri', description: 'Opens this copy.' }) browser_url: string;
}

export class RecordHitDto {
  @ApiProperty({ example: 'rec_0123456789abcdefghij' }) id: string;
  @ApiProperty() sync_id: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Display name (the first mapped text field, else the remote id).',
  })
  name: string | null;
  @ApiProperty({ description: 'Index of the table pair in the mappings document.' }) table_pair: number;
  @ApiProperty({ type: RecordTablesDto }) table: RecordTablesDto;
  @ApiProperty({
    type: RecordHitCopyDto,
    nullable: true,
    description: 'null when the left side has no copy.',
  })
  left: RecordHitCopyDto | null;
  @ApiProperty({ type: RecordHitCopyDto, nullable: true }) right: RecordHitCopyDto | null;
  @ApiProperty({
    enum: ['record_id', 'remote_id', 'name'],
    description: 'What matched: the `rec_` id, a remote id (exact), or the display name (case-insensitive).',
  })
  matched_by: string;
  @ApiProperty({ format: 'uri', description: 'The record status document.' }) url: string;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description:
      'Opens the record in a connected app (the side whose id matched, else the left copy, else the ' +
      'right one); null when no side holds a copy.',
  })
  browser_url: string | null;
}

export class RecordSearchDto {
  @ApiProperty({
    type: [RecordHitDto],
    description:
      'Best first: exact id matches, then names equal to or starting with the query, then names ' +
      'containing it.',
  })
  data: RecordHitDto[];
  @ApiProperty({
    description: 'More records matched than `limit`: narrow the query (search is capped, not paginated).',
  })
  has_more: boolean;
  @ApiProperty({ type: String, nullable: true, enum: [null], description: 'Always null.' }) next_cursor: null;
}

// ---- status document ----

export class RecordCopyDto {
  @ApiProperty() remote_id: string;
  @ApiProperty({ description: 'The copy was deleted in the app.' }) is_deleted: boolean;
  @ApiProperty({ description: 'A sync filter excludes it.' }) is_filtered: boolean;
  @ApiProperty({ description: 'Turned off by a sync-enabled field.' }) is_sync_disabled: boolean;
  @ApiProperty({
    type: [QueuedOperationDto],
    nullable: true,
    description:
      'Operations queued that concern this copy, in run order: `[]` nothing queued, null the queue ' +
      'could not be consulted. A push waiting for a linked record (side null) is listed on both ' +
      'sides with the same position.',
  })
  queued_operations: QueuedOperationDto[] | null;
  @ApiProperty({ format: 'uri' }) browser_url: string;
}

export class RecordOperationRecordDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description: "The record's id in the app of the operation's side.",
  })
  remote_id: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Display name at the time.' }) name:
    string | null;
  @ApiProperty({ type: String, nullable: true, enum: [null], description: 'Always null in lists.' })
  url: null;
}

export class RecordOperationDto {
  @ApiProperty({ example: 'op_0123456789abcdefghij' }) id: string;
  @ApiProperty() sync_id: string;
  @ApiProperty({ type: String, format: 'date-time' }) occurred_at: string;
  @ApiProperty({ example: 'updated' }) action: string;
  @ApiProperty({ enum: ['push', 'poll'] }) trigger: string;
  @ApiProperty({ type: String, nullable: true, enum: ['left', 'right'] }) side: string | null;
  @ApiProperty({ type: RecordTableRefDto, nullable: true, description: 'Name at the time.' })
  table: RecordTableRefDto | null;
  @ApiProperty({ type: RecordOperationRecordDto, description: 'As in the operations list: `url` is null.' })
  record: RecordOperationRecordDto;
  @ApiProperty({ format: 'uri', description: 'The operation with its `field_changes`.' }) url: string;
}

export class RecordIssueDto {
  @ApiProperty({ example: 'iss_0123456789abcdefghij' }) id: string;
  @ApiProperty({ enum: ['connection', 'record', 'webhook', 'sync_preview', 'other'] }) type: string;
  @ApiProperty() code: string;
  @ApiProperty({ type: String, nullable: true, enum: ['left', 'right'] }) side: string | null;
  @ApiProperty() connector: string;
  @ApiProperty() message: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: '`explanation`, `suggested_action`, `links`.',
  })
  remediation: Record<string, unknown>;
  @ApiProperty({ type: RecordTableRefDto, nullable: true }) table: RecordTableRefDto | null;
  @ApiProperty({ type: String, format: 'date-time' }) first_seen_at: string;
  @ApiProperty({ type: String, format: 'date-time' }) last_seen_at: string;
  @ApiProperty() occurrence_count: number;
  @ApiProperty({ format: 'uri', description: 'The issue (with `remediation`); retry it there.' }) url: string;
}

export class PendingDeleteEventDto {
  @ApiProperty({ enum: ['detected', 'approved', 'ignored'] }) kind: string;
  @ApiProperty({ type: String, format: 'date-time' }) at: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "Who: `engine` for a detection, otherwise the person's channel (`console`, `cli`).",
  })
  actor: string | null;
  @ApiProperty({ example: 'pdel_0123456789abcdefghij', description: 'The held delete the entry belongs to.' })
  pending_delete_id: string;
}

export class RecordStatusDto {
  @ApiProperty({ example: 'rec_0123456789abcdefghij' }) id: string;
  @ApiProperty() sync_id: string;
  @ApiProperty({ type: String, nullable: true }) name: string | null;
  @ApiProperty({ description: 'Index of the table pair in the mappings document.' }) table_pair: number;
  @ApiProperty({ type: RecordTablesDto }) table: RecordTablesDto;
  @ApiProperty({ type: RecordCopyDto, nullable: true, description: 'null when the left side has no copy.' })
  left: RecordCopyDto | null;
  @ApiProperty({ type: RecordCopyDto, nullable: true, description: 'null when the right side has no copy.' })
  right: RecordCopyDto | null;
  @ApiProperty({
    type: [RecordQueueEntryDto],
    nullable: true,
    description:
      "The record's whole queue in run order (`[]` nothing queued), with the side each entry concerns.",
  })
  queued_operations: RecordQueueEntryDto[] | null;
  @ApiProperty({
    type: [RecordIssueDto],
    description: 'Open issues of this record (usually what blocks it).',
  })
  issues: RecordIssueDto[];
  @ApiProperty({
    type: PendingDeleteDto,
    nullable: true,
    description: 'The open held delete (awaiting review, or ignored and dormant), or null.',
  })
  pending_delete: PendingDeleteDto | null;
  @ApiProperty({
    type: [PendingDeleteEventDto],
    description:
      "History of the record's held deletes, newest first (kinds `detected`, `approved`, `ignored`).",
  })
  pending_delete_events: PendingDeleteEventDto[];
  @ApiProperty({
    type: [RecordOperationDto],
    description: 'Most recent operations of both sides, newest first.',
  })
  operations: RecordOperationDto[];
  @ApiProperty() operations_has_more: boolean;
  @ApiProperty({ format: 'uri', description: 'All operations of this record.' }) operations_url: string;
  @ApiProperty({ format: 'uri', description: 'This document.' }) url: string;
}

export class RefetchResultDto {
  @ApiProperty({ example: 'rec_0123456789abcdefghij' }) record_id: string;
  @ApiProperty({
    type: [String],
    enum: ['left', 'right'],
    description: 'The sides whose copies will be read again, after what is already queued for the record.',
  })
  sides: string[];
  @ApiProperty({
    format: 'uri',
    description: 'The record status document (the refetch shows in `queued_operations` until it ran).',
  })
  url: string;
}
