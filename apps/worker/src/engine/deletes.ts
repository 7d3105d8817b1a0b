/**
 * The delete rules of the design (section 5) once an absence is confirmed: mark the missing copy deleted,
 * hold a pending delete for review, or delete the surviving copy under auto-approve.
 */
import { decideDelete, type SideName } from '@lockstep/domain';
import { newId } from '@lockstep/domain';
import type { EngineContext } from './context';
import { type PairPlan, sideEnd } from './plan';
import { linkOperation } from './reconcile/operations';
import { retryableWriteError } from './write-errors';
import {
  deletedOn,
  holdDelete,
  ignoredDeleteRecordIds,
  insertOperations,
  type LinkRow,
  loadLinksById,
  markDeleted,
  markDeletedOrDead,
  type OperationRow,
  remoteOf,
} from '@lockstep/persistence';

const SIDES: SideName[] = ['left', 'right'];
const other = (side: SideName): SideName => (side === 'left' ? 'right' : 'left');

/** Absences a read by id confirmed: the delete rules of the design (section 5). */
export async function applyConfirmedDeletes(
  ctx: EngineContext,
  pair: PairPlan,
  confirmed: { link: LinkRow; side: SideName }[],
): Promise<void> {
  // Re-read the links: the reconcile above may have changed them.
  const fresh = new Map(
    (
      await loadLinksById(
        ctx.db,
        confirmed.map((entry) => entry.link.id),
      )
    ).map((link) => [link.id, link]),
  );
  const ignored = new Set(await ignoredDeleteRecordIds(ctx.db, ctx.syncId, [...fresh.keys()]));
  const operations: OperationRow[] = [];
  const holds: { link: LinkRow; missing: SideName }[] = [];
  const deletes: { link: LinkRow; side: SideName }[] = [];
  const marks: { id: string; side: SideName; dead: boolean }[] = [];
  for (const { link: stale, side } of confirmed) {
    const link = fresh.get(stale.id);
    if (!link || deletedOn(link, side)) continue;
    const there = other(side);
    const decision = decideDelete({
      missingSide: side,
      otherHasCopy: remoteOf(link, there) !== null && !deletedOn(link, there),
      tableDirection: pair.direction,
      otherDeleteBehavior: sideEnd(pair, there).deleteBehavior,
      deleteApproval: ctx.deleteApproval,
      ignored: ignored.has(link.id),
    });
    operations.push(linkOperation(pair, link, side, 'deleted', 'poll', { decision: decision.action }));
    marks.push({ id: link.id, side, dead: decision.action === 'mark_deleted' && decision.dead });
    if (decision.action === 'hold') holds.push({ link, missing: side });
    if (decision.action === 'delete') deletes.push({ link, side: decision.side });
  }
  // Deletes under auto-approve are applied to the other side.
  const deleted: { link: LinkRow; side: SideName }[] = [];
  for (const target of SIDES) {
    const batch = deletes.filter((entry) => entry.side === target);
    if (batch.length === 0) continue;
    await ctx.assertCanWrite();
    const results = await ctx.sides[target].use((connection) =>
      connection.deleteRecords(
        sideEnd(pair, target).remoteId,
        batch.map((entry) => remoteOf(entry.link, target)!),
      ),
    );
    batch.forEach((entry, index) => {
      const outcome = results[index]!;
      if (outcome.ok) {
        deleted.push(entry);
        operations.push(linkOperation(pair, entry.link, target, 'deleted', 'push', null));
      } else if (outcome.error.retryable || outcome.error.kind === 'auth') {
        throw retryableWriteError(outcome.error, target);
      }
    });
  }
  await ctx.fenced(async (tx) => {
    for (const mark of marks) await markDeletedOrDead(tx, mark.id, mark.side, mark.dead);
    for (const entry of deleted) await markDeleted(tx, entry.link.id, entry.side);
    for (const hold of holds) {
      await holdDelete(tx, {
        id: newId('pendingDelete'),
        syncId: ctx.syncId,
        recordId: hold.link.id,
        pair: pair.index,
        missingSide: hold.missing,
        deleteFromSide: other(hold.missing),
      });
    }
    await insertOperations(tx, ctx.syncId, operations);
  });
}
