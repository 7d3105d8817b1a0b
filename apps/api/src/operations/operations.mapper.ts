import type { OperationDto, OperationListItemDto } from '@lockstep/contracts';
import type { FieldChange, SideName } from '@lockstep/persistence';
import type { SyncLinks } from '../syncs/sync-links';

/** An `operations` row as the service reads it (`field_changes` only for the single form). */
export interface OperationRow {
  id: string;
  seq: string;
  sync_id: string;
  record_id: string | null;
  side: SideName | null;
  table_id: string | null;
  table_name: string | null;
  record_remote_id: string | null;
  record_name: string | null;
  action: string;
  trigger: 'push' | 'poll';
  details: Record<string, unknown> | null;
  occurred_at: Date;
  /** `occurred_at` in full precision (microseconds), for the keyset cursor. */
  occurred_key: string;
  field_changes?: FieldChange[];
}

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
  const url = row.record_id !== null && row.side !== null ? links.recordPage(row.sync_id, row.record_id, row.side) : null;
  return {
    ...item,
    record: { ...item.record, url },
    field_changes: (row.field_changes ?? []).map((change) => ({ field: change.field, before: change.before ?? null, after: change.after ?? null })),
  };
}
