import type {
  PendingDeleteEventDto,
  QueuedOperationDto,
  RecordCopyDto,
  RecordHitCopyDto,
  RecordHitDto,
  RecordIssueDto,
  RecordOperationDto,
  RecordQueueEntryDto,
  RecordStatusDto,
  RecordTablesDto,
} from '@lockstep/contracts';
import { type PendingDeleteListRow, toPendingDeleteDto } from '../pending-deletes/pending-deletes.mapper';
import { SIDES } from '../syncs/sync-access';
import type { SyncLinks } from '../syncs/sync-links';
import type { PairTables } from './record-tables';
import {
  deletedOn,
  remoteOf,
  type RecordIssueRow as IssueRow,
  type RecordLinkRow as LinkRow,
  type RecordMatchRow as MatchRow,
  type RecordOperationRow as OperationRow,
  type RecordPendingDeleteEventRow as PendingDeleteEventRow,
  type RecordPendingDeleteRow as PendingDeleteRow,
  type RecordQueueRow as QueueRow,
  type SideName,
} from '@lockstep/persistence';

/** A side holds a copy while it has a remote id and the copy is not deleted there. */
export function hasCopy(link: LinkRow, side: SideName): boolean {
  return remoteOf(link, side) !== null && !deletedOn(link, side);
}

function tablesOf(link: LinkRow, pairs: PairTables[]): RecordTablesDto {
  const pair = pairs[link.table_pair];
  return { left: pair?.left ?? null, right: pair?.right ?? null };
}

export function toHitDto(hit: MatchRow, pairs: PairTables[], links: SyncLinks): RecordHitDto {
  const copy = (side: SideName): RecordHitCopyDto | null => {
    const remoteId = remoteOf(hit, side);
    return remoteId === null
      ? null
      : {
          remote_id: remoteId,
          is_deleted: deletedOn(hit, side),
          browser_url: links.recordPage(hit.sync_id, hit.id, side),
        };
  };
  const open =
    [hit.matched_side, ...SIDES].find((side): side is SideName => side !== null && hasCopy(hit, side)) ??
    null;
  return {
    id: hit.id,
    sync_id: hit.sync_id,
    name: hit.name,
    table_pair: hit.table_pair,
    table: tablesOf(hit, pairs),
    left: copy('left'),
    right: copy('right'),
    matched_by: hit.matched_by,
    url: links.record(hit.sync_id, hit.id),
    browser_url: open ? links.recordPage(hit.sync_id, hit.id, open) : null,
  };
}

export function toOperationDto(row: OperationRow, links: SyncLinks): RecordOperationDto {
  return {
    id: row.id,
    sync_id: row.sync_id,
    occurred_at: row.occurred_at.toISOString(),
    action: row.action,
    trigger: row.trigger,
    side: row.side,
    table: row.table_id ? { id: row.table_id, name: row.table_name ?? '' } : null,
    record: { remote_id: row.record_remote_id, name: row.record_name, url: null },
    url: links.api(`/sync/operations/${row.id}`),
  };
}

export function toIssueDto(row: IssueRow, links: SyncLinks): RecordIssueDto {
  return {
    id: row.id,
    type: row.type,
    code: row.code,
    side: row.side,
    connector: row.connector,
    message: row.message,
    remediation: row.remediation,
    table: row.table_id ? { id: row.table_id, name: row.table_name ?? '' } : null,
    first_seen_at: row.first_seen_at.toISOString(),
    last_seen_at: row.last_seen_at.toISOString(),
    occurrence_count: row.occurrence_count,
    url: links.api(`/sync/issues/${row.id}`),
  };
}

export function toEventDto(row: PendingDeleteEventRow): PendingDeleteEventDto {
  return {
    kind: row.kind,
    at: row.at.toISOString(),
    actor: row.actor,
    pending_delete_id: row.pending_delete_id,
  };
}

export interface RecordStatusParts {
  link: LinkRow;
  pairs: PairTables[];
  queue: QueueRow[];
  issues: IssueRow[];
  pendingDelete: PendingDeleteRow | null;
  events: PendingDeleteEventRow[];
  operations: OperationRow[];
  operationsLimit: number;
}

/**
 * The record status document (spec 2.12). Queue positions are 1-based over the record's whole queue (the
 * order the worker runs them, both sides together); a side lists the entries that concern it, keeping their
 * positions, and an entry for both sides (side null) is listed on both.
 */
export function toStatusDto(parts: RecordStatusParts, links: SyncLinks): RecordStatusDto {
  const { link } = parts;
  const queue: RecordQueueEntryDto[] = parts.queue.map((entry, index) => ({
    type: entry.type,
    position: index + 1,
    side: entry.side,
  }));
  const copy = (side: SideName): RecordCopyDto | null => {
    const remoteId = remoteOf(link, side);
    if (remoteId === null) return null;
    return {
      remote_id: remoteId,
      is_deleted: deletedOn(link, side),
      is_filtered: side === 'left' ? link.left_filtered : link.right_filtered,
      is_sync_disabled: side === 'left' ? link.left_sync_disabled : link.right_sync_disabled,
      queued_operations: queue
        .filter((entry) => entry.side === side || entry.side === null)
        .map(({ type, position }): QueuedOperationDto => ({ type, position })),
      browser_url: links.recordPage(link.sync_id, link.id, side),
    };
  };
  const pendingDelete: PendingDeleteListRow | null = parts.pendingDelete
    ? {
        ...parts.pendingDelete,
        name: link.name,
        left_remote_id: link.left_remote_id,
        right_remote_id: link.right_remote_id,
        left_deleted: link.left_deleted,
        right_deleted: link.right_deleted,
      }
    : null;
  return {
    id: link.id,
    sync_id: link.sync_id,
    name: link.name,
    table_pair: link.table_pair,
    table: tablesOf(link, parts.pairs),
    left: copy('left'),
    right: copy('right'),
    queued_operations: queue,
    issues: parts.issues.map((row) => toIssueDto(row, links)),
    pending_delete: pendingDelete ? toPendingDeleteDto(link.sync_id, pendingDelete, links) : null,
    pending_delete_events: parts.events.map(toEventDto),
    operations: parts.operations.slice(0, parts.operationsLimit).map((row) => toOperationDto(row, links)),
    operations_has_more: parts.operations.length > parts.operationsLimit,
    operations_url: links.operations(link.sync_id, link.id),
    url: links.record(link.sync_id, link.id),
  };
}
