import { ApiProperty } from '@nestjs/swagger';

export const ISSUE_TYPES = ['connection', 'record', 'webhook', 'sync_preview', 'other'] as const;
export const ISSUE_CODES = [
  'authentication_error',
  'connection_error',
  'record_error',
  'webhook_error',
  'validation_error',
  'sync_error',
] as const;

export class RemediationLinkDto {
  @ApiProperty() name: string;
  @ApiProperty({ format: 'uri' }) url: string;
}

export class RemediationDto {
  @ApiProperty({
    description: 'What went wrong and what it means for the data, in sentences safe to relay to a person.',
  })
  explanation: string;
  @ApiProperty({ description: 'What a person should do about it.' }) suggested_action: string;
  @ApiProperty({
    type: [RemediationLinkDto],
    description: "Pages that help (reconnect a side, the record's status); may be empty.",
  })
  links: RemediationLinkDto[];
}

export class IssueTableDto {
  @ApiProperty({ description: "The table (`table_...`) on the issue's side." }) id: string;
  @ApiProperty({ description: 'Its name when the issue was raised.' }) name: string;
}

export class IssueRecordDto {
  @ApiProperty({ description: 'The synced record pair (`rec_...`).', example: 'rec_0123456789abcdefghij' })
  id: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      "The record's id in the connected app on `side` (for a rejected write: the copy the value came from).",
  })
  remote_id: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Display text of the record.' }) name:
    string | null;
  @ApiProperty({ enum: ['left', 'right'], description: 'The side `remote_id` and `url` refer to.' }) side:
    'left' | 'right';
  @ApiProperty({
    format: 'uri',
    description: "Opens the record's copy on `side` in a browser (the console's record page).",
  })
  url: string;
  @ApiProperty({
    format: 'uri',
    description:
      "The record's status document (`GET /sync/records/{id}`): both copies, queued operations, open " +
      'issues, recent operations.',
  })
  status_url: string;
}

/** An issue (spec 2.11). */
export class IssueDto {
  @ApiProperty({ example: 'iss_0123456789abcdefghij' }) id: string;
  @ApiProperty({
    enum: ISSUE_TYPES,
    description:
      'The area: `connection` (an app rejected the credentials or could not be reached), `record` ' +
      '(one record could not be written or converted), `webhook`, `sync_preview` (the initial sync ' +
      'could not match some records), `other`.',
  })
  type: string;
  @ApiProperty({ enum: ISSUE_CODES, description: 'Coarse category.' }) code: string;
  @ApiProperty() sync_id: string;
  @ApiProperty({
    type: String,
    enum: ['left', 'right'],
    nullable: true,
    description: 'The side the issue concerns (extra field); null for sync-wide issues.',
  })
  side: 'left' | 'right' | null;
  @ApiProperty({ description: 'Connector of that side (for sync-wide issues: of the left side).' })
  connector: string;
  @ApiProperty() message: string;
  @ApiProperty({ type: RemediationDto }) remediation: RemediationDto;
  @ApiProperty({
    type: IssueTableDto,
    nullable: true,
    description: 'null unless the issue concerns one table.',
  })
  table: IssueTableDto | null;
  @ApiProperty({
    type: IssueRecordDto,
    nullable: true,
    description: 'null unless the issue concerns one record.',
  })
  record: IssueRecordDto | null;
  @ApiProperty({ type: String, format: 'date-time' }) first_seen_at: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'The last time the engine ran into it; the list is ordered by it.',
  })
  last_seen_at: string;
  @ApiProperty({
    type: 'integer',
    minimum: 1,
    description:
      'How often the engine ran into this failure, counting every time it opened again after being resolved.',
  })
  occurrence_count: number;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'null while the issue is open (extra field), again when the failure recurs after a clear; the ' +
      'single form also shows cleared issues.',
  })
  resolved_at: string | null;
  @ApiProperty({ format: 'uri', description: '`POST` it to retry (scope operate).' }) retry_url: string;
}

export class IssueListDto {
  @ApiProperty({ type: [IssueDto] }) data: IssueDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Opaque; pass back unchanged as `cursor` with the same `sync` and `type`.',
  })
  next_cursor: string | null;
}

/** The issue-retry confirmation (its fields are "not shown" in the spec). */
export class IssueRetryDto {
  @ApiProperty() issue_id: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'When the issue was cleared (by this call, or earlier).',
  })
  resolved_at: string;
  @ApiProperty({
    description:
      'True when the issue had already been cleared before this call (an earlier retry, or the ' +
      'engine once the cause went away): nothing was done again.',
  })
  already_resolved: boolean;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'Record operations this call added to the per-record queue (a `push` of the record of a ' +
      '`record` issue; 0 when one is already waiting or nothing was done).',
  })
  records_queued: number;
  @ApiProperty({
    type: String,
    format: 'uri',
    nullable: true,
    description:
      "The record's status document, to follow the retry (null when the issue concerns no record).",
  })
  record_url: string | null;
  @ApiProperty({
    format: 'uri',
    description: "The sync's open issues: the engine raises a new issue there when the cause persists.",
  })
  issues_url: string;
}
