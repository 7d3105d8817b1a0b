/**
 * Work on single records: the per-record queue (`push`, `refetch`, `verify_delete`, in id order per record;
 * a refetch runs after what is already queued) and the delete rules once an absence is confirmed, plus the
 * person's pending-delete decisions (approve, restore).
 */
import type { SideName } from '@lockstep/domain';
import type { SourceRecord } from '@lockstep/connectors-core';
import type { EngineContext } from './context';
import { applyConfirmedDeletes } from './deletes';
import { linkOperation as op } from './reconcile/operations';
import { type PairPlan, refreshFieldTypes, sideEnd } from './plan';
import { reconcile, retryableWriteError, type Observation } from './reconcile';
import {
  type DeleteDecision,
  deletedOn,
  dueQueueHeads,
  forgetCopy,
  insertOperations,
  type LinkRow,
  loadLinksById,
  markDecisionApplied,
  markDeleted,
  type OperationRow,
  openRecordIssues,
  type QueueHead,
  remoteOf,
  removeQueueEntries,
  unappliedDeleteDecisions,
} from '@lockstep/persistence';

const SIDES: SideName[] = ['left', 'right'];
const other = (side: SideName): SideName => (side === 'left' ? 'right' : 'left');

/** Runs due queue entries: the head of each record's queue only, so entries of one record run in order. */
export async function processQueue(ctx: EngineContext, limit = 500): Promise<number> {
  // The head of each record's queue, when it is due (one statement).
  const batch = await dueQueueHeads(ctx.db, ctx.syncId, limit);
  if (batch.length === 0) return 0;
  const links = await loadLinksById(
    ctx.db,
    batch.map((row) => row.record_id),
  );
  const linkById = new Map(links.map((link) => [link.id, link]));
  const byPair = new Map<number, QueueHead[]>();
  for (const row of batch) {
    const link = linkById.get(row.record_id);
    if (!link) continue;
    const list = byPair.get(link.table_pair) ?? [];
    list.push(row);
    byPair.set(link.table_pair, list);
  }
  for (const [pairIndex, entries] of byPair) {
    const pair = ctx.plan.pairs[pairIndex];
    if (!pair) {
      await ctx.fenced((tx) =>
        removeQueueEntries(
          tx,
          entries.map((entry) => entry.id),
        ),
      );
      continue;
    }
    await runEntries(ctx, pair, entries, linkById);
  }
  return batch.length;
}

async function runEntries(
  ctx: EngineContext,
  pair: PairPlan,
  entries: QueueHead[],
  linkById: Map<string, LinkRow>,
): Promise<void> {
  await refreshRetriedTargets(ctx, pair, entries);
  // Read every copy the entries need, once per side.
  const reads: Record<SideName, Map<string, SourceRecord>> = { left: new Map(), right: new Map() };
  for (const side of SIDES) {
    const ids = entries
      .map((entry) => linkById.get(entry.record_id)!)
      .filter((link) => remoteOf(link, side) !== null)
      .map((link) => remoteOf(link, side)!);
    if (ids.length === 0) continue;
    const found = await ctx.sides[side].use((connection) =>
      connection.readByIds(sideEnd(pair, side).remoteId, ids, { view: sideEnd(pair, side).view }),
    );
    for (const record of found) reads[side].set(record.remoteId, record);
  }
  const observations: Observation[] = [];
  const confirmed: { link: LinkRow; side: SideName }[] = [];
  for (const entry of entries) {
    const link = linkById.get(entry.record_id)!;
    for (const side of SIDES) {
      const remoteId = remoteOf(link, side);
      if (remoteId === null) continue;
      const record = reads[side].get(remoteId);
      if (record) {
        observations.push({ side, remoteId, record, at: null });
      } else if (
        entry.type === 'verify_delete' &&
        (entry.side === side || entry.side === null) &&
        !deletedOn(link, side)
      ) {
        // Read by id and not there: a confirmed absence. (Other entries leave a missing copy to a
        // verify_delete.)
        confirmed.push({ link, side });
      }
    }
  }
  const attempts = new Map<string, number>();
  for (const entry of entries)
    if (entry.type === 'push')
      attempts.set(entry.record_id, Math.max(attempts.get(entry.record_id) ?? 0, entry.attempts));
  // The entries are removed in the reconcile's commit, before a push still deferred is queued again (with a
  // longer delay). A copy that reappeared closes its pending delete inside reconcile (whichever path observed
  // it).
  await reconcile(ctx, pair, observations, {
    kind: 'queue',
    consumed: entries.map((entry) => entry.id),
    attempts,
  });
  if (confirmed.length > 0) await applyConfirmedDeletes(ctx, pair, confirmed);
}

/**
 * A push a person asked for (the retry of a record issue: `queueRecordPush` names the issue's side; the
 * engine's own pushes name none) is written against that side's current field types, since the person may
 * have widened the field the issue was about (the plan holds the types read when the sync was set up, and a
 * value too long for them fails before any write). One field listing per side in such a batch only: the
 * engine's own work reads no schema. The listing also renews the connector's cached table description.
 */
async function refreshRetriedTargets(
  ctx: EngineContext,
  pair: PairPlan,
  entries: QueueHead[],
): Promise<void> {
  const sides = new Set<SideName>();
  for (const entry of entries) if (entry.type === 'push' && entry.side !== null) sides.add(entry.side);
  for (const side of sides) {
    const fields = await ctx.sides[side].use((connection) =>
      connection.listFields(sideEnd(pair, side).remoteId),
    );
    refreshFieldTypes(pair, side, fields);
  }
}

/** A person approved (delete the surviving copy) or restored (re-create the missing copy) a held delete. */
export async function applyDecisions(ctx: EngineContext): Promise<number> {
  const rows: DeleteDecision[] = await unappliedDeleteDecisions(ctx.db, ctx.syncId);
  if (rows.length === 0) return 0;
  const links = new Map(
    (
      await loadLinksById(
        ctx.db,
        rows.map((row) => row.record_id),
      )
    ).map((link) => [link.id, link]),
  );
  for (const row of rows) {
    const link = links.get(row.record_id);
    const pair = ctx.plan.pairs[row.table_pair];
    if (!link || !pair) {
      await ctx.fenced((tx) => markDecisionApplied(tx, row.id));
      continue;
    }
    if (row.requested_action === 'approve') await approveDelete(ctx, pair, link, row);
    else await restoreCopy(ctx, pair, link, row);
  }
  return rows.length;
}

/**
 * An approved delete: the surviving copy is deleted (unless already gone), then the link marked deleted with
 * its operation. A delete the app refuses for the record's own reason opens an issue instead.
 */
async function approveDelete(
  ctx: EngineContext,
  pair: PairPlan,
  link: LinkRow,
  row: DeleteDecision,
): Promise<void> {
  const side = row.delete_from_side;
  const remoteId = remoteOf(link, side);
  const operations: OperationRow[] = [];
  if (remoteId !== null && !deletedOn(link, side)) {
    await ctx.assertCanWrite();
    const [outcome] = await ctx.sides[side].use((connection) =>
      connection.deleteRecords(sideEnd(pair, side).remoteId, [remoteId]),
    );
    if (outcome && !outcome.ok) {
      if (outcome.error.retryable || outcome.error.kind === 'auth')
        throw retryableWriteError(outcome.error, side);
      await ctx.fenced((tx) =>
        openRecordIssues(tx, ctx.syncId, [
          {
            recordId: link.id,
            side,
            connector: ctx.sides[side].connector,
            cause: 'delete',
            message:
              `Deleting the approved record in ${sideEnd(pair, side).name} (${side}) was rejected: ` +
              outcome.error.message,
            remediation: {
              explanation: `The ${side} app refused the delete a person approved: ${outcome.error.message}.`,
              suggested_action:
                `Delete the record in the ${side} app by hand, or remove what blocks the delete ` +
                '(for example rows that reference it).',
              links: [],
            },
            tableId: sideEnd(pair, side).id,
            tableName: sideEnd(pair, side).name,
            remoteId,
            name: link.name,
            recordUrl: null,
          },
        ]),
      );
      return;
    }
    operations.push(op(pair, link, side, 'deleted', 'push', { approved: true }));
  }
  await ctx.fenced(async (tx) => {
    await markDeleted(tx, link.id, side);
    await markDecisionApplied(tx, row.id);
    await insertOperations(tx, ctx.syncId, operations);
  });
}

/**
 * A restored copy: the missing copy is forgotten, then reconciled from the surviving one (which creates it
 * again).
 */
async function restoreCopy(
  ctx: EngineContext,
  pair: PairPlan,
  link: LinkRow,
  row: DeleteDecision,
): Promise<void> {
  const missing = row.missing_side;
  await ctx.fenced((tx) => forgetCopy(tx, link.id, missing));
  const surviving = other(missing);
  const remoteId = remoteOf(link, surviving);
  const found = remoteId
    ? await ctx.sides[surviving].use((connection) =>
        connection.readByIds(sideEnd(pair, surviving).remoteId, [remoteId]),
      )
    : [];
  await reconcile(
    ctx,
    pair,
    found.map((record) => ({ side: surviving, remoteId: record.remoteId, record, at: null })),
    { kind: 'restore', onCommit: (tx) => markDecisionApplied(tx, row.id) },
  );
}
