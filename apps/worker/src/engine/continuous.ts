/**
 * Continuous sync: the change feed of both sides of every table pair, read from the stored checkpoints and
 * reconciled together (so concurrent edits of one record meet in one merge), the checkpoints advancing in
 * the same commit as the links and operations; and the periodic full scan that compares every record's
 * content hash with its link and, only when complete, sends links whose record was not seen to
 * `verify_delete`.
 */
import type { SideName } from '@lockstep/domain';
import type { ChangeBatch } from '@lockstep/connectors-core';
import type { EngineContext } from './context';
import { type PairPlan, sideEnd, fieldEnd } from './plan';
import { type Observation, reconcile } from './reconcile';
import {
  contentHash,
  enqueue,
  loadTableCheckpoints,
  markSeen,
  noteChangeDetected,
  saveTableCheckpoints,
  type TableCheckpoints,
  undeletedLinkIds,
  unseenLinkIds,
} from '@lockstep/persistence';

const SIDES: SideName[] = ['left', 'right'];

export type Checkpoints = TableCheckpoints;

export async function loadCheckpoints(ctx: EngineContext): Promise<Checkpoints> {
  return loadTableCheckpoints(ctx.db, ctx.syncId);
}

/** Reads and applies every waiting change; returns the number of changes seen. */
export async function pollChanges(ctx: EngineContext, checkpoints: Checkpoints): Promise<number> {
  let seen = 0;
  for (const index of ctx.plan.order) {
    const pair = ctx.plan.pairs[index]!;
    for (;;) {
      const batches: Partial<Record<SideName, ChangeBatch>> = {};
      for (const side of SIDES) {
        const { remoteId: table, view } = sideEnd(pair, side);
        const since =
          checkpoints[side][table] ??
          (await ctx.sides[side].use((connection) => connection.currentCheckpoint(table)));
        checkpoints[side][table] = since;
        batches[side] = await ctx.sides[side].use((connection) =>
          connection.readChanges(table, since, { limit: ctx.pageSize, ignoreOwnWrites: true, view }),
        );
      }
      const observations: Observation[] = [];
      const deleted: Record<SideName, string[]> = { left: [], right: [] };
      for (const side of SIDES) {
        for (const change of batches[side]!.changes) {
          if (change.kind === 'upsert' && change.record)
            observations.push({ side, remoteId: change.remoteId, record: change.record, at: change.at });
          else if (change.kind === 'delete') deleted[side].push(change.remoteId);
        }
      }
      const count = observations.length + deleted.left.length + deleted.right.length;
      seen += count;
      const next: Checkpoints = { left: { ...checkpoints.left }, right: { ...checkpoints.right } };
      for (const side of SIDES) next[side][sideEnd(pair, side).remoteId] = batches[side]!.checkpoint;
      if (count === 0) {
        // Nothing new: read on from the new checkpoints; they are stored with the next change (a replay is
        // harmless).
        checkpoints.left = next.left;
        checkpoints.right = next.right;
      } else {
        // Only an upsert reaches reconcile; a delete from the feed is verified by id before it counts.
        const observedIds = new Set(observations.map((o) => `${o.side}:${o.remoteId}`));
        await reconcile(ctx, pair, observations, {
          kind: 'feed',
          onCommit: async (tx) => {
            for (const side of SIDES) {
              const ids = deleted[side].filter((id) => !observedIds.has(`${side}:${id}`));
              if (ids.length === 0) continue;
              const links = await undeletedLinkIds(tx, ctx.syncId, pair.index, side, ids);
              await enqueue(
                tx,
                ctx.syncId,
                links.map((id) => ({ recordId: id, type: 'verify_delete', side })),
              );
            }
            await noteChangeDetected(tx, ctx.syncId);
            await saveTableCheckpoints(tx, ctx.syncId, next);
          },
        });
        checkpoints.left = next.left;
        checkpoints.right = next.right;
      }
      if (!batches.left!.hasMore && !batches.right!.hasMore) break;
    }
  }
  return seen;
}

export interface ScanState {
  pair: number;
  side: SideName;
  cursor: string | null;
  startedAt: string;
}

/** One page of a full scan; returns the new state, or null when the scan of that table is complete. */
export async function fullScanStep(ctx: EngineContext, state: ScanState): Promise<ScanState | null> {
  const pair: PairPlan | undefined = ctx.plan.pairs[state.pair];
  if (!pair) return null;
  const side = state.side;
  const { remoteId: table, view } = sideEnd(pair, side);
  const fields = pair.fields.map((field) => fieldEnd(field, side).remoteId);
  const page = await ctx.sides[side].use((connection) =>
    connection.readPage(table, { after: state.cursor, pageSize: ctx.pageSize, view }),
  );
  const ids = page.records.map((record) => record.remoteId);
  if (ids.length > 0) {
    const links = await markSeen(ctx.db, ctx.syncId, pair.index, side, ids);
    const byId = new Map(links.map((link) => [link.remote_id, link]));
    const changed: Observation[] = [];
    for (const record of page.records) {
      const link = byId.get(record.remoteId);
      if (!link || link.deleted || link.hash !== contentHash(record.values, fields))
        changed.push({ side, remoteId: record.remoteId, record, at: null });
    }
    if (changed.length > 0) await reconcile(ctx, pair, changed, { kind: 'scan' });
  }
  if (page.next) return { ...state, cursor: page.next };
  // Complete: only now may missing records be suspected, and each is read by id before it counts.
  await ctx.fenced(async (tx) => {
    const missing = await unseenLinkIds(tx, ctx.syncId, pair.index, side, state.startedAt);
    await enqueue(
      tx,
      ctx.syncId,
      missing.map((id) => ({ recordId: id, type: 'verify_delete', side })),
    );
  });
  return null;
}
