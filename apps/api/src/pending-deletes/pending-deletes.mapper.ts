import type { PendingDeleteEntity } from '@lockstep/persistence';

/** A held delete after a person's decision (printed by `lockstep pending-delete ...`). */
export interface PendingDeleteDecisionView {
  sync_id: string;
  record_id: string;
  state: PendingDeleteEntity['state'];
  missing_side: PendingDeleteEntity['missingSide'];
  delete_from_side: PendingDeleteEntity['deleteFromSide'];
  /** What the engine still has to carry out (`approve`: delete the surviving copy; `restore`: re-create the missing one). */
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
