import type { IssueDto, IssueRecordDto } from '@lockstep/contracts';
import type { IssueRow, SideName } from '@lockstep/persistence';
import type { SyncLinks } from '../syncs/sync-links';

export type { IssueRow };

/** The side whose copy `record_remote_id` is: the issue's own side when it matches, else the other one. */
function remoteSide(row: IssueRow): SideName {
  const own: SideName = row.side ?? 'left';
  const other: SideName = own === 'left' ? 'right' : 'left';
  const remoteOf = (side: SideName) => (side === 'left' ? row.link_left_remote_id : row.link_right_remote_id);
  if (row.record_remote_id === null) return own;
  if (remoteOf(own) === row.record_remote_id) return own;
  if (remoteOf(other) === row.record_remote_id) return other;
  return own;
}

function recordEntry(row: IssueRow, links: SyncLinks): IssueRecordDto | null {
  if (row.record_id === null) return null;
  const side = remoteSide(row);
  return {
    id: row.record_id,
    remote_id: row.record_remote_id,
    name: row.record_name,
    side,
    url: links.recordPage(row.sync_id, row.record_id, side),
    status_url: links.record(row.sync_id, row.record_id),
  };
}

export function toIssueDto(row: IssueRow, links: SyncLinks): IssueDto {
  return {
    id: row.id,
    type: row.type,
    code: row.code,
    sync_id: row.sync_id,
    side: row.side,
    connector: row.connector,
    message: row.message,
    remediation: {
      explanation: row.remediation.explanation,
      suggested_action: row.remediation.suggested_action,
      links: row.remediation.links ?? [],
    },
    table: row.table_id === null ? null : { id: row.table_id, name: row.table_name ?? row.table_id },
    record: recordEntry(row, links),
    first_seen_at: row.first_seen_at.toISOString(),
    last_seen_at: row.last_seen_at.toISOString(),
    occurrence_count: row.occurrence_count,
    resolved_at: row.resolved_at?.toISOString() ?? null,
    retry_url: links.api(`/sync/issues/${row.id}/retry`),
  };
}
