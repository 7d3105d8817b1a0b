/**
 * Records whose conditional update found the target edited since it was read are merged again. The target is
 * read anew; its edit is the later change (it was made after the read, so after the source change that was
 * being written), so where both sides changed the same field, the conflict rules see the target's edit as
 * later: the target wins a two-way field (`later_change`), the source a field carried only its way
 * (`direction`), and the operation records the conflict. The source is observed as this call saw it, at its
 * change time (or when this call decided); an edit made there since reaches the engine through its own change
 * feed.
 */
import type { EngineContext } from '../context';
import { type PairPlan, sideEnd } from '../plan';
import { remoteOf } from '@lockstep/persistence';
import { type Edited, type Observation, other, type ReconcileRequest, remergeRound, SIDES } from './types';

/** How often one reconcile call merges records again whose target keeps being edited under its writes. */
const MAX_REMERGES = 3;

/**
 * Whether this call merges its edited records again after its commit. Not in the initial sync (first sight:
 * the preferred side wins whatever the times), nor after MAX_REMERGES rounds of a record that keeps being
 * edited: a queued push does it then.
 */
export function remerging(request: ReconcileRequest): boolean {
  return request.kind !== 'initial' && remergeRound(request) < MAX_REMERGES;
}

/** The request of the next round. */
export function remergeRequest(request: ReconcileRequest): ReconcileRequest {
  return { kind: 'remerge', round: remergeRound(request) + 1 };
}

/** The observations to merge again: each edited target read anew, its source as this call saw it. */
export async function observeEdited(
  ctx: EngineContext,
  pair: PairPlan,
  edited: Edited[],
  decidedAt: string,
): Promise<Observation[]> {
  const observations: Observation[] = [];
  for (const target of SIDES) {
    const entries = edited.filter((entry) => entry.target === target);
    if (entries.length === 0) continue;
    const from = other(target);
    await ctx.assertCanWrite();
    const ids = entries.map(({ unit }) => remoteOf(unit.link, target)!);
    const found = await ctx.sides[target].use((connection) =>
      connection.readByIds(sideEnd(pair, target).remoteId, ids),
    );
    const byId = new Map(found.map((record) => [record.remoteId, record]));
    for (const { unit, at } of entries) {
      const source = remoteOf(unit.link, from);
      const values = unit.current[from];
      if (source !== null && values)
        observations.push({
          side: from,
          remoteId: source,
          record: { remoteId: source, values },
          at: unit.at[from] ?? decidedAt,
        });
      // Gone meanwhile: the new merge finds it missing and queues the check of its delete.
      const record = byId.get(remoteOf(unit.link, target)!);
      if (record) observations.push({ side: target, remoteId: record.remoteId, record, at });
    }
  }
  return observations;
}
