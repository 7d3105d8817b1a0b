/**
 * Stage 5: shadows, hashes, flags and change times onto the links; then one fenced commit of links,
 * operations, issues and queue entries (and the caller's checkpoint or progress).
 */
import { setImmediate } from 'node:timers/promises';
import type { SideName } from '@lockstep/domain';
import { applyConfirmedDeletes } from '../deletes';
import {
  batchOperations,
  changedAtOf,
  closeReappeared,
  enqueue,
  insertLinks,
  insertOperationBatches,
  insertOperations,
  type LinkRow,
  type OperationRow,
  openRecordIssues,
  remoteOf,
  removeQueueEntries,
  resolveRecordIssues,
  saveLinks,
  setShadow,
  shadowOf,
  wakeDeferredPushes,
} from '@lockstep/persistence';
import { setFlags } from './decide';
import { recordName } from './operations';
import { remerging } from './remerge';
import { attemptsOf, type Batch, onCommitOf, other, SIDES, timed, type Unit, YIELD_EVERY } from './types';
import type { WriteOutcome } from './write';

/**
 * A push deferred until a linked record exists on the target: retried after 1 s, 2 s, 4 s... at most 5
 * minutes apart.
 */
export function deferredDelayMs(attempts: number): number {
  return Math.min(300_000, 1000 * 2 ** Math.min(attempts, 9));
}

/** What one commit stores. */
interface Rows {
  toSave: LinkRow[];
  fresh: LinkRow[];
  operations: OperationRow[];
  seen: { left: string[]; right: string[] };
  /**
   * Records whose pending change on one side is decided now (carried, or lost to a later change of the other
   * side).
   */
  settled: { recordId: string; side: SideName }[];
}

/** Commits after `after` (the previous page's commit) has, when given. */
export async function commit(
  batch: Batch,
  outcome: WriteOutcome,
  after: Promise<void> | null,
): Promise<void> {
  const rows = await linkRows(batch);
  queuePushes(batch, outcome);
  await store(batch, outcome, rows, after);
}

async function linkRows(batch: Batch): Promise<Rows> {
  const { pair, fields, now } = batch;
  const rows: Rows = { toSave: [], fresh: [], operations: [], seen: { left: [], right: [] }, settled: [] };
  let stepped = 0;
  for (const unit of batch.units.values()) {
    if (++stepped % YIELD_EVERY === 0) await setImmediate();
    // A write can change whether the record passes the filter or the sync-enabled field (the field may be on
    // the side written).
    if (unit.writes.left || unit.writes.right) setFlags(pair, unit);
    for (const side of SIDES) {
      const updates = unit.shadow[side];
      if (Object.keys(updates).length === 0) continue;
      // A side without a shadow yet (a new link) takes the updates object itself: nothing changes it after this.
      const before = shadowOf(unit.link, side);
      setShadow(unit.link, side, before ? { ...before, ...updates } : updates, fields[side]);
    }
    for (const side of SIDES) if (unit.current[side] !== null) rows.seen[side].push(unit.link.id);
    for (const side of keepChangeTimes(unit, now))
      rows.settled.push({ recordId: unit.link.id, side: other(side) });
    const named: SideName = unit.current.left ? 'left' : 'right';
    const name = recordName(pair, named, unit.current.left ?? unit.current.right, remoteOf(unit.link, named));
    unit.link.name = name ?? unit.link.name;
    if (unit.deferred) queuePushAgain(batch, unit.link.id);
    (unit.isNew ? rows.fresh : rows.toSave).push(unit.link);
    rows.operations.push(...unit.ops);
  }
  return rows;
}

/** A push of the record queued again, after a delay that grows with the attempts it already had. */
function queuePushAgain(batch: Batch, recordId: string): void {
  const tried = attemptsOf(batch.request, recordId);
  batch.queue.push({
    recordId,
    type: 'push',
    side: null,
    delayMs: deferredDelayMs(tried),
    attempts: tried + 1,
  });
}

/**
 * Records edited on a target between the read and the write are merged again right after this commit (see
 * `remerge`); where that is not done, a queued push does it instead.
 */
function queuePushes(batch: Batch, outcome: WriteOutcome): void {
  if (!remerging(batch.request)) {
    for (const { unit } of outcome.edited) queuePushAgain(batch, unit.link.id);
  }
  batch.result.verifyDeletes = batch.queue.filter((entry) => entry.type === 'verify_delete').length;
}

async function store(
  batch: Batch,
  outcome: WriteOutcome,
  rows: Rows,
  after: Promise<void> | null,
): Promise<void> {
  const { ctx, pair, request, issues, result } = batch;
  // A link stored for the first time has no open issue to clear.
  const freshIds = new Set(rows.fresh.map((link) => link.id));
  const issueKeys = new Set(issues.map((issue) => `${issue.recordId}:${issue.side}`));
  const resolved = outcome.succeeded.filter(
    (entry) => !freshIds.has(entry.recordId) && !issueKeys.has(`${entry.recordId}:${entry.side}`),
  );
  const moot = rows.settled.filter((entry) => !issueKeys.has(`${entry.recordId}:${entry.side}`));
  const orphans = [...batch.units.values()]
    .filter((unit) => unit.orphan)
    .map((unit) => ({ link: unit.link, side: other(unit.current.left ? 'left' : 'right') }));
  const onCommit = onCommitOf(request);
  const operations = storedOperations(batch, rows, freshIds);
  const times = request.kind === 'initial' ? request.times : null;
  times?.enterStore();
  await ctx
    .fenced(async (tx) => {
      await insertLinks(tx, ctx.syncId, rows.fresh, rows.seen);
      await saveLinks(tx, ctx.syncId, rows.toSave, rows.seen);
      await insertOperations(tx, ctx.syncId, operations.rest);
      await insertOperationBatches(tx, ctx.syncId, operations.batches);
      await openRecordIssues(tx, ctx.syncId, issues);
      await resolveRecordIssues(tx, ctx.syncId, resolved);
      // Nothing is left to carry there: the issues of converting or writing the settled change are moot.
      await resolveRecordIssues(tx, ctx.syncId, moot, ['convert', 'write']);
      if (request.kind === 'queue' && request.consumed.length > 0)
        await removeQueueEntries(tx, request.consumed);
      await enqueue(tx, ctx.syncId, batch.queue);
      // Records that may be link targets were created: pushes waiting for them need not wait out their backoff
      // (the initial sync's queue runs after it).
      if (request.kind !== 'initial' && result.created.left + result.created.right > 0) {
        const dependents = ctx.plan.pairs
          .filter((candidate) => candidate.fields.some((field) => field.relationPair === pair.index))
          .map((candidate) => candidate.index);
        if (dependents.length > 0) await wakeDeferredPushes(tx, ctx.syncId, dependents);
      }
      await closeReappeared(tx, ctx.syncId, [...batch.reappeared]);
      // Pipelined: the rows above went in while the previous page's commit may still have been running; the
      // progress is written, and this transaction commits, only after that one did (commits stay in page
      // order).
      if (after) {
        times?.exitStore();
        try {
          await timed(request, 'commit_order_wait', () => after);
        } finally {
          times?.enterStore();
        }
      }
      if (onCommit) await onCommit(tx, result);
    })
    .finally(() => times?.exitStore());
  // The source of an orphaned copy is gone: the delete rules decide about the copy (a pending delete under
  // review).
  if (orphans.length > 0) await applyConfirmedDeletes(ctx, pair, orphans);
}

/**
 * An initial sync page's creates of new links are stored as batches (one row per side and table pair, read
 * back by the API as one operation per record), each link keeping its operation's id; the rest one row each.
 */
function storedOperations(batch: Batch, rows: Rows, freshIds: ReadonlySet<string>) {
  if (batch.request.kind !== 'initial') return { rest: rows.operations, batches: [] };
  const { batches, rest, ids } = batchOperations(rows.operations, freshIds);
  for (const link of rows.fresh) link.created_op = ids.get(link.id) ?? null;
  return { rest, batches };
}

/**
 * The links' change times (`LinkRow.left_changed_at`): a side whose change did not reach the other one keeps
 * the time that change was seen (this round's observation, else the time stored before, else now); a side
 * whose values went through the merge with nothing kept, or whose copy was just created on the other side,
 * has nothing pending any more. A record that was not merged otherwise (filtered, one side only) keeps what
 * it had. Called after the writes (a write that failed is null by then). Returns the sides that had a pending
 * change and have none now.
 */
function keepChangeTimes(unit: Unit, now: string): SideName[] {
  const settled: SideName[] = [];
  for (const side of SIDES) {
    const before = changedAtOf(unit.link, side);
    const time = unit.kept[side]
      ? (unit.at[side] ?? before ?? now)
      : unit.merged || unit.writes[other(side)] !== null
        ? null
        : before;
    if (before !== null && time === null) settled.push(side);
    if (side === 'left') unit.link.left_changed_at = time;
    else unit.link.right_changed_at = time;
  }
  return settled;
}
