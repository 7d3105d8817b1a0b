import type { OperationDto, OperationListItemDto } from '@lockstep/contracts';
import type { OperationReadRow as OperationRow } from '@lockstep/persistence';
import type { SyncLinks } from '../syncs/sync-links';

/** The list form (spec 2.10): no `field_changes`, `record.url` null. */
export function toOperationListItem(row: OperationRow, links: SyncLinks): OperationListItemDto {
  return {
    id: row.id,
    occurred_at: row.occurred_at.toISOString(),
    sync_id: row.sync_id,
    action: row.action,
    trigger: row.trigger,
    side: row.side,
    table: row.table_id === null ? null : { id: row.table_id, name: row.table_name ?? row.table_id },
    record: { remote_id: row.record_remote_id, name: row.record_name, url: null },
    record_id: row.record_id,
    record_url: row.record_id === null ? null : links.record(row.sync_id, row.record_id),
    details: row.details,
  };
}

/** The single form: with `field_changes` and `record.url` (the record's copy on the operation's side). */
export function toOperationDto(row: OperationRow, links: SyncLinks): OperationDto {
  const item = toOperationListItem(row, links);
  const url =
    row.record_id !== null && row.side !== null
      ? links.recordPage(row.sync_id, row.record_id, row.side)
      : null;
  return {
    ...item,
    record: { ...item.record, url },
    field_changes: (row.field_changes ?? []).map((change) => ({
      field: change.field,
      before: change.before ?? null,
      after: change.after ?? null,
    })),
  };
}
