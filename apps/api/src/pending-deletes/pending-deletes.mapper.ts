import type { PendingDeleteDto } from '@lockstep/contracts';
import type { PendingDeleteEntity, PendingDeleteListRow } from '@lockstep/persistence';
import type { SyncLinks } from '../syncs/sync-links';

/** A held delete after a person's decision (printed by `lockstep pending-delete ...`). */
export interface PendingDeleteDecisionView {
  sync_id: string;
  record_id: string;
  state: PendingDeleteEntity['state'];
  missing_side: PendingDeleteEntity['missingSide'];
  delete_from_side: PendingDeleteEntity['deleteFromSide'];
  /**
   * What the engine still has to carry out (`approve`: delete the surviving copy; `restore`: re-create the
   * missing one).
   */
  requested_action: PendingDeleteEntity['requestedAction'];
  pending_since: string;
  ignored_at: string | null;
  decided_at: string | null;
  applied_at: string | null;
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

export function toDecisionView(row: PendingDeleteEntity): PendingDeleteDecisionView {
  return {
    sync_id: row.syncId,
    record_id: row.recordId,
    state: row.state,
    missing_side: row.missingSide,
    delete_from_side: row.deleteFromSide,
    requested_action: row.requestedAction,
    pending_since: row.pendingSince.toISOString(),
    ignored_at: iso(row.ignoredAt),
    decided_at: iso(row.decidedAt),
    applied_at: iso(row.appliedAt),
  };
}

export type { PendingDeleteListRow };

/**
 * Spec 2.13: `record` is the surviving copy (on `delete_from_side`), null once that side holds no copy
 * either.
 */
export function toPendingDeleteDto(
  syncId: string,
  row: PendingDeleteListRow,
  links: SyncLinks,
): PendingDeleteDto {
  const side = row.delete_from_side;
  const remoteId = side === 'left' ? row.left_remote_id : row.right_remote_id;
  const deleted = side === 'left' ? row.left_deleted : row.right_deleted;
  return {
    id: row.id,
    state: row.state,
    record_id: row.record_id,
    missing_side: row.missing_side,
    delete_from_side: side,
    pending_since: row.pending_since.toISOString(),
    ignored_at: iso(row.ignored_at),
    record:
      remoteId !== null && deleted === false
        ? {
            id: row.record_id,
            remote_id: remoteId,
            name: row.name,
            side,
            browser_url: links.recordPage(syncId, row.record_id, side),
          }
        : null,
    record_url: links.record(syncId, row.record_id),
    review_url: links.pendingDeleteReview(syncId, row.record_id),
  };
}
