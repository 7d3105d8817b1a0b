/**
 * What a confirmed absence does (engine design section 5). A record missing on `missingSide` whose link
 * still has a copy on the other side is decided here; the engine only calls this after a `verify_delete`
 * read confirmed the absence (a partial scan or an outage never gets here).
 */
import type { Direction } from '../mappings/directions';
import type { RecordDeleteBehavior } from '../mappings/document';
import type { SideName } from '../mappings/schema';

export type DeleteApprovalMode = 'review_required' | 'auto_approve';

export interface DeleteInput {
  missingSide: SideName;
  /** The other side still has a (not deleted) copy. */
  otherHasCopy: boolean;
  tableDirection: Direction;
  /** `record_delete_behavior` of the other side: what a delete on the missing side does to it. */
  otherDeleteBehavior: RecordDeleteBehavior;
  deleteApproval: DeleteApprovalMode;
  /** A person already ignored a held delete of this record (dormant: not raised again). */
  ignored?: boolean;
}

export type DeleteDecision =
  /** Nothing left on the other side: mark the missing copy deleted. */
  | { action: 'forget' }
  /**
   * The pair does not carry deletes this way: mark the missing copy deleted; `dead` when it was a one-way
   * destination (not re-created).
   */
  | { action: 'mark_deleted'; dead: boolean }
  /** Delete protection (`do_nothing`) on the other side: mark the missing copy deleted, keep the other. */
  | { action: 'unlink' }
  /** `review_required`: hold a pending delete and write nothing. */
  | { action: 'hold' }
  /** A held delete was ignored by a person: stay dormant. */
  | { action: 'dormant' }
  /** `auto_approve`: delete the other side's copy. */
  | { action: 'delete'; side: SideName };

export function decideDelete(input: DeleteInput): DeleteDecision {
  const other: SideName = input.missingSide === 'left' ? 'right' : 'left';
  if (!input.otherHasCopy) return { action: 'forget' };
  const carries =
    input.tableDirection === 'two_way' ||
    (input.missingSide === 'left'
      ? input.tableDirection === 'left_to_right'
      : input.tableDirection === 'right_to_left');
  if (!carries) return { action: 'mark_deleted', dead: true };
  if (input.otherDeleteBehavior === 'do_nothing') return { action: 'unlink' };
  // An ignored delete stays dormant even if the sync later switches to auto_approve: a person chose to keep
  // the copy.
  if (input.ignored) return { action: 'dormant' };
  if (input.deleteApproval === 'review_required') return { action: 'hold' };
  return { action: 'delete', side: other };
}
