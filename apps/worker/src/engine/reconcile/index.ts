/**
 * The heart of the engine: given records observed on one or both sides of a table pair (from a change
 * feed, a page of the initial sync, a full scan or a queued refetch), decide field by field what to write
 * (three-way merge against each side's shadow), write it in batches, read back what the targets now hold,
 * and commit links, shadows, operations and issues in one fenced transaction. Replaying the same
 * observations after a crash is harmless: a side whose value equals its shadow is unchanged, and a create
 * carries the link's service id so a repeated create adopts the row it already wrote.
 *
 * The stages, in order: observe (links for the observed records), read the other side (where a record was not
 * observed), decide (libs/domain `decideRecord` per record), write, commit; then, for targets edited under a
 * write, merge those records again (remerge).
 */
import { isConnectorError } from '@lockstep/connectors-core';
import type { EngineContext } from '../context';
import type { PairPlan } from '../plan';
import { isRetryableWriteError, retryableWriteError } from '../write-errors';
import { commit } from './commit';
import { decide } from './decide';
import { observe } from './observe';
import { readOtherSide } from './read-other-side';
import { observeEdited, remergeRequest, remerging } from './remerge';
import { type Batch, type Observation, type ReconcileRequest, type ReconcileResult, SIDES } from './types';
import { write, type WriteOutcome } from './write';

export { deferredDelayMs } from './commit';
export type { Observation, OnCommit, ReconcileRequest, ReconcileResult } from './types';
export { isConnectorError, isRetryableWriteError, retryableWriteError };

export async function reconcile(
  ctx: EngineContext,
  pair: PairPlan,
  observations: Observation[],
  request: ReconcileRequest,
): Promise<ReconcileResult> {
  const batch = await observe(ctx, pair, observations, request);
  await readOtherSide(batch);
  await decide(batch);
  const result = batch.result;
  if (request.kind === 'initial') {
    // Pipelined: this page's writes and commit run in the background while the caller decides the next page;
    // that page's app writes queue behind these on the side's single connection, and its commit follows this
    // one. The caller paces itself on both: `written` (the target is free for the next page) and `commit`.
    // The writes of the pages go to the target in page order (a page's writes do not interleave with the
    // next page's, so its commit is not held up by them).
    // A page whose writes failed fails the next ones with its error, so nothing is written after it.
    const writing = request.writeAfter ? request.writeAfter.then(() => write(batch)) : write(batch);
    result.written = writing.then(() => undefined);
    result.written.catch(() => undefined);
    result.commit = finish(batch, writing, request.after);
    // Awaited by the caller later; meanwhile a failure must not count as an unhandled rejection.
    result.commit.catch(() => undefined);
    return result;
  }
  await finish(batch, write(batch), null);
  return result;
}

/**
 * Once the writes are made: commit (after `after`), then merge again the records whose target was edited under
 * a write.
 */
async function finish(
  batch: Batch,
  writing: Promise<WriteOutcome>,
  after: Promise<void> | null,
): Promise<void> {
  const { ctx, pair, request, result } = batch;
  const outcome = await writing;
  await commit(batch, outcome, after);
  if (!remerging(request) || outcome.edited.length === 0) return;
  const observations = await observeEdited(ctx, pair, outcome.edited, batch.now);
  const again = await reconcile(ctx, pair, observations, remergeRequest(request));
  for (const side of SIDES) {
    result.created[side] += again.created[side];
    result.updated[side] += again.updated[side];
  }
  result.failed += again.failed;
  result.verifyDeletes += again.verifyDeletes;
}
