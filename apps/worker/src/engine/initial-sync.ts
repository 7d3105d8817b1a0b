/**
 * Running the initial sync (engine design section 6), once initial-prepare.ts has prepared it: matched pairs
 * are linked in one statement, then each side is streamed page by page through `reconcile`, committing the
 * page cursor with the page, so a crash resumes from the last committed page; a large side runs as key ranges
 * any worker takes (`runRangeStep`). Pairs run in dependency order (relation targets first).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { type SideName } from '@lockstep/domain';
import {
  analyzeLinkLookups,
  type ClaimedRange,
  commitRangePage,
  createRanges,
  commitWithoutWaitingForDisk,
  type Db,
  finishInitialSyncRun,
  hasLinks,
  linkMatches,
  rangeTotals,
  skippedRemoteIds,
  syncedRightRemoteIds,
} from '@lockstep/persistence';
import type { RecordPage } from '@lockstep/connectors-core';
import { type EngineContext, StopSync } from './context';
import { type PairPlan, sideEnd } from './plan';
import { reconcile, type ReconcileResult } from './reconcile';
import { flushStageTimes, passTimes } from './stage-times';
import {
  type InitialProgress,
  type InitialStep,
  type PairProgress,
  runIds,
  saveProgress,
  SIDES,
} from './initial-progress';

/**
 * The next source page, read while the current one is reconciled (reading and writing then overlap). Only
 * a read: a crash or a pause simply drops it, and the page is read again from the committed cursor.
 */
interface Prefetch {
  key: string;
  at: number;
  /** null when the read ahead failed: the page is then read again (and its error reported) on use. */
  page: Promise<RecordPage | null>;
}

/**
 * Keyed by the side's session, which lives as long as the runner (a step's context and progress are new each
 * step).
 */
const prefetched = new WeakMap<object, Prefetch>();

function readNow(
  ctx: EngineContext,
  side: SideName,
  table: string,
  cursor: string | null,
  bounds: { view: string | null; before: string | null },
): Promise<RecordPage> {
  // A bound only for a range: connectors without `splitKeyRanges` are never given one.
  const before = bounds.before === null ? {} : { before: bounds.before };
  return ctx.sides[side].use((connection) =>
    connection.readPage(table, { after: cursor, pageSize: ctx.pageSize, view: bounds.view, ...before }),
  );
}

/** The view pair `index` reads on `side` (null: the whole table). */
function viewOf(ctx: EngineContext, side: SideName, index: number): string | null {
  const pair = ctx.plan.pairs[index];
  return pair ? sideEnd(pair, side).view : null;
}

async function readPage(
  ctx: EngineContext,
  side: SideName,
  table: string,
  index: number,
  at: { cursor: string | null; before: string | null },
): Promise<RecordPage> {
  const ahead = prefetched.get(ctx.sides[side]);
  prefetched.delete(ctx.sides[side]);
  // A page read long ago (the sync was paused between steps) is read again: fresher, and no memory held for
  // long.
  const page =
    ahead?.key === `${index}|${table}|${at.cursor ?? ''}|${at.before ?? ''}` && Date.now() - ahead.at < 30_000
      ? await ahead.page
      : null;
  return page ?? readNow(ctx, side, table, at.cursor, { view: viewOf(ctx, side, index), before: at.before });
}

function prefetch(
  ctx: EngineContext,
  side: SideName,
  table: string,
  index: number,
  at: { cursor: string; before: string | null },
): void {
  const bounds = { view: viewOf(ctx, side, index), before: at.before };
  prefetched.set(ctx.sides[side], {
    key: `${index}|${table}|${at.cursor}|${at.before ?? ''}`,
    at: Date.now(),
    page: readNow(ctx, side, table, at.cursor, bounds).catch(() => null),
  });
}

/** Per runner (its side session lives as long as it does): a label, and the pairs it has taken up. */
const runners = new WeakMap<object, { label: string; pairs: Set<number> }>();

/**
 * The first time a runner takes up a pair it writes its label into the pair's progress (committed before any
 * page of it is written). A different label already there means another runner began the pair and stopped
 * (a crash, a pause, a restart): the pair is `resumed`, and no pass is skipped after that.
 */
async function takeUp(ctx: EngineContext, progress: InitialProgress, entry: PairProgress): Promise<void> {
  let runner = runners.get(ctx.sides.left);
  if (!runner) runners.set(ctx.sides.left, (runner = { label: randomUUID(), pairs: new Set() }));
  if (runner.pairs.has(entry.table_pair)) return;
  if (entry.runner !== undefined && entry.runner !== runner.label) entry.resumed = true;
  entry.runner = runner.label;
  await ctx.fenced((tx) => saveProgress(tx, ctx.syncId, progress));
  runner.pairs.add(entry.table_pair);
}

/**
 * The links table grows fast during an initial sync, and the planner must know it is not empty for lookups to
 * use the indexes. Statistics taken once it holds a few pages stay good as it grows (the planner scales row
 * counts with the table's size), so they are refreshed a few times, geometrically, and only for the columns
 * lookups filter on (a full ANALYZE also samples the shadows).
 */
const ANALYZE_AFTER_PAGES = [2, 20, 200];

/**
 * Pages in flight after their records are decided, until their store commit: being written to the app,
 * waiting for that, committing, or waiting to commit after the page before (commits happen in page order).
 * Each holds at most a store connection; app writes share the side's connection, in page order.
 */
const PAGES_IN_FLIGHT = 5;

/**
 * Decided pages whose app writes are not done, at most (one being written, the next one ready): the loop
 * decides the next page as soon as the target has fewer queued, whatever the commits do, so the target is not
 * left idle while commits run; and it does not decide further ahead than the target can take.
 */
const PAGES_TO_WRITE = 2;

/**
 * How long one step keeps taking pages before it returns to the runner (which checks the sync between steps).
 */
const STEP_BUDGET_MS = 5000;

/**
 * Running: a step takes pages of one pass for about five seconds (every app write checks pause first), then
 * returns to the runner. Pages are pipelined: a page's app writes and store commit (links, shadows,
 * operations, the cursor) run while the next pages are read and decided (at most PAGES_IN_FLIGHT pages in
 * flight); commits stay in page order, and the step ends only after its last commit (so a short step would
 * drain the pipeline often). A crash can therefore leave a few pages written to the app but not committed;
 * the replay from the committed cursor derives the same service ids and adopts those rows. A large side's
 * pass runs as key ranges any worker takes (`openRanges`): the step then only follows them (`followRanges`),
 * and `waiting` says nothing is left for this runner until they finish.
 */
export async function runInitialSyncStep(
  ctx: EngineContext,
  progress: InitialProgress,
): Promise<InitialStep> {
  for (const index of ctx.plan.order) {
    const entry = progress.pairs.find((candidate) => candidate.table_pair === index);
    const pair = ctx.plan.pairs[index];
    if (!entry || !pair || entry.stage === 'done') continue;
    await takeUp(ctx, progress, entry);
    if (entry.stage === 'link') {
      await ctx.fenced(async (tx) => {
        await linkMatches(tx, ctx.syncId, index);
        entry.stage = 'left';
        entry.cursor = null;
        await saveProgress(tx, ctx.syncId, progress);
      });
      await analyzeLinkLookups(ctx.db);
      return 'more';
    }
    const side: SideName = entry.stage === 'left' ? 'left' : 'right';
    if (entry.preview[`${side}_records`] === 0 && entry.cursor === null && !entry.resumed) {
      // The side was empty when the sync started, and this runner did the whole other pass: every record the
      // side holds now is a copy that pass wrote (linked already) or was added since the checkpoint (the
      // change feed after the initial sync delivers it). Reading the side again would find nothing to do.
      entry.stage = side === 'left' ? 'right' : 'done';
      await ctx.fenced((tx) => saveProgress(tx, ctx.syncId, progress));
      return 'more';
    }
    if (entry.ranges?.side === side || (await openRanges(ctx, progress, entry, pair, side)))
      return followRanges(ctx, progress, entry, side);
    const unlinked = await unlinkedPass(ctx, entry, side);
    await runPass(ctx, progress, {
      entry,
      pair,
      side,
      cursor: entry.cursor,
      before: null,
      processed: entry.processed.left + entry.processed.right,
      unlinked,
      commit: (tx, page, counts) => commitPage(ctx, tx, { progress, entry, side, page, counts }),
    });
    return 'more';
  }
  return 'done';
}

/** One step's pass: where it starts and ends, and how its pages commit. */
interface PassRun {
  entry: PairProgress;
  pair: PairPlan;
  side: SideName;
  /** The committed cursor the step starts after. */
  cursor: string | null;
  /** A range's upper key bound (exclusive); null: the side's end. */
  before: string | null;
  /** Records the pass has done so far (for refreshing statistics). */
  processed: number;
  unlinked: boolean;
  /** In the page's fenced commit: the pass's cursor and counts move past the page. */
  commit(tx: Db, page: PageRead, counts: ReconcileResult): Promise<void>;
}

/**
 * One step of a side's pass (or range): its pages for about STEP_BUDGET_MS, pipelined (see
 * `runInitialSyncStep`). Returns the cursor it committed last (null: the pass or range is done).
 */
async function runPass(ctx: EngineContext, progress: InitialProgress, run: PassRun): Promise<string | null> {
  const { pair, side, unlinked, before } = run;
  const table = sideEnd(pair, side).remoteId;
  const times = passTimes(ctx.syncId, pair.index, side);
  times?.startStep();
  const started = Date.now();
  let cursor = run.cursor;
  let processed = run.processed;
  // Pages still being written or committed, oldest first.
  const inFlight: { written: Promise<void>; commit: Promise<void> }[] = [];
  let at = performance.now();
  try {
    do {
      while (inFlight.length >= PAGES_IN_FLIGHT) await inFlight.shift()!.commit;
      if (inFlight.length >= PAGES_TO_WRITE) await inFlight[inFlight.length - PAGES_TO_WRITE]!.written;
      at = times?.lap('pipeline_wait', at) ?? at;
      // Statistics serve the lookups of links by remote id, which an unlinked pass does not make; a pass that
      // makes them after one that did not (and took none) starts with fresh ones.
      const passStart = cursor === null && processed > 0;
      if (!unlinked && (passStart || ANALYZE_AFTER_PAGES.includes(processed / ctx.pageSize)))
        await analyzeLinkLookups(ctx.db);
      at = times?.lap('other', at) ?? at;
      const page = await readPage(ctx, side, table, pair.index, { cursor, before });
      if (page.next) prefetch(ctx, side, table, pair.index, { cursor: page.next, before });
      at = times?.lap('read_wait', at) ?? at;
      const { records, skip } = await toReconcile(ctx, run.entry, side, page, unlinked);
      // What the page's commit needs of it: its records are not kept in memory until then.
      const read: PageRead = { records: page.records.length, next: page.next };
      at = times?.lap('other', at) ?? at;
      const result = await reconcile(
        ctx,
        pair,
        records.map((record) => ({ side, remoteId: record.remoteId, record, at: null })),
        {
          kind: 'initial',
          skip,
          unlinked,
          ...runIds(progress),
          after: inFlight.at(-1)?.commit ?? null,
          writeAfter: inFlight.at(-1)?.written ?? null,
          times,
          onCommit: (tx, counts) => run.commit(tx, read, counts),
        },
      );
      at = times?.lap('decide', at) ?? at;
      if (result.commit) inFlight.push({ written: result.written ?? result.commit, commit: result.commit });
      if (times) times.rows += page.records.length;
      processed += page.records.length;
      cursor = page.next;
    } while (cursor && Date.now() - started < STEP_BUDGET_MS);
  } catch (error) {
    await Promise.allSettled(inFlight.map((page) => page.commit));
    throw error;
  }
  for (const page of inFlight) await page.commit;
  times?.lap('pipeline_wait', at);
  times?.endStep();
  await flushStageTimes();
  return cursor;
}

/**
 * Splits the side's pass into key ranges when the side is large (at least `ENGINE_RANGE_MIN_ROWS` records in
 * the preview), its connector splits (ordered keys: the database connectors) and the pair reads the whole
 * table (no view). Only when the pass begins (cursor null): a pass begun whole ends whole. Whether the ranges'
 * first takers may skip link lookups is decided here as `unlinkedPass` decides it for a whole pass. Returns
 * whether the pass now runs as ranges.
 */
async function openRanges(
  ctx: EngineContext,
  progress: InitialProgress,
  entry: PairProgress,
  pair: PairPlan,
  side: SideName,
): Promise<boolean> {
  const end = sideEnd(pair, side);
  if (entry.cursor !== null || end.view !== null) return false;
  if (entry.preview[`${side}_records`] < ctx.ranges.minRows) return false;
  const ranges = await ctx.sides[side].use((connection) =>
    connection.splitKeyRanges
      ? connection.splitKeyRanges(end.remoteId, ctx.ranges.count)
      : Promise.resolve(null),
  );
  if (!ranges || ranges.length < 2) return false;
  const unlinked = !entry.resumed && !(await hasLinks(ctx.db, ctx.syncId, entry.table_pair));
  const base = {
    created: { ...entry.created },
    updated: { ...entry.updated },
    failed: entry.failed,
  };
  await ctx.fenced(async (tx) => {
    await createRanges(tx, { syncId: ctx.syncId, pair: entry.table_pair, side }, ranges);
    entry.ranges = { side, unlinked, base };
    await saveProgress(tx, ctx.syncId, progress);
  });
  return true;
}

/**
 * The owner's part of a ranged pass: the pair's counts become the ranges' sums (what the status shows), and
 * once every range is finished the pair moves on. A range another worker took over (token above 1) counts as
 * a takeover of the pair: the right pass is then never skipped, so a copy a crashed range wrote for a record
 * deleted since is found there.
 */
async function followRanges(
  ctx: EngineContext,
  progress: InitialProgress,
  entry: PairProgress,
  side: SideName,
): Promise<InitialStep> {
  const ranged = entry.ranges!;
  const totals = await rangeTotals(ctx.db, ctx.syncId, entry.table_pair, side);
  entry.processed[side] = totals.done;
  for (const end of SIDES) {
    entry.created[end] = ranged.base.created[end] + totals.created[end];
    entry.updated[end] = ranged.base.updated[end] + totals.updated[end];
  }
  entry.failed = ranged.base.failed + totals.failed;
  const finished = totals.finished === totals.ranges;
  if (finished) {
    if (totals.takenOver > 0) entry.resumed = true;
    entry.stage = side === 'left' ? 'right' : 'done';
    entry.cursor = null;
    delete entry.ranges;
  }
  await ctx.fenced((tx) => saveProgress(tx, ctx.syncId, progress));
  return finished ? 'more' : 'waiting';
}

/**
 * One step of a range a worker claimed (`claimRange`), under the range's own lease (`ctx.fenced` checks its
 * token): the same pipelined pass as a whole side's, from the range's committed cursor to its upper bound,
 * committing the range's cursor and counts with each page. The range's first taker skips link lookups when
 * the ranged pass is `unlinked`; a taker after it (token above 1: a crash, a shutdown) looks them up, so the
 * pages the earlier taker wrote but did not commit are read again and their copies adopted by their derived
 * service ids. Returns the range's cursor after the step (null: the range is finished).
 */
export async function runRangeStep(
  ctx: EngineContext,
  progress: InitialProgress,
  range: ClaimedRange,
): Promise<string | null> {
  const entry = progress.pairs.find((candidate) => candidate.table_pair === range.pair);
  const pair = ctx.plan.pairs[range.pair];
  if (!entry || !pair || entry.ranges?.side !== range.side) throw new StopSync('the range is no longer run');
  const cursor = await runPass(ctx, progress, {
    entry,
    pair,
    side: range.side,
    cursor: range.cursor ?? range.after,
    before: range.before,
    processed: range.done,
    unlinked: entry.ranges.unlinked && range.token === '1',
    commit: async (tx, page, counts) => {
      await commitWithoutWaitingForDisk(tx);
      await commitRangePage(tx, range, {
        cursor: page.next,
        rows: page.records,
        created: counts.created,
        updated: counts.updated,
        failed: counts.failed,
      });
      range.cursor = page.next;
      range.done += page.records;
    },
  });
  return cursor;
}

/** A page as its commit sees it: how many records it held, and the cursor after it. */
interface PageRead {
  records: number;
  next: string | null;
}

/**
 * In a page's commit: the pair's counts and cursor move past the page. The commit does not wait for the disk
 * (see `commitWithoutWaitingForDisk`): a page lost with the store's server is read again from the cursor
 * before it.
 */
async function commitPage(
  ctx: EngineContext,
  tx: Db,
  input: {
    progress: InitialProgress;
    entry: PairProgress;
    side: SideName;
    page: PageRead;
    counts: ReconcileResult;
  },
): Promise<void> {
  const { entry, side, page, counts } = input;
  await commitWithoutWaitingForDisk(tx);
  entry.processed[side] += page.records;
  entry.created.left += counts.created.left;
  entry.created.right += counts.created.right;
  entry.updated.left += counts.updated.left;
  entry.updated.right += counts.updated.right;
  entry.failed += counts.failed;
  entry.cursor = page.next;
  if (!page.next) {
    entry.stage = side === 'left' ? 'right' : 'done';
    entry.cursor = null;
  }
  await saveProgress(tx, ctx.syncId, input.progress);
}

/**
 * Whether the records of this pass have no record links yet, so that their pages need not look any up by
 * remote id (two index probes per record in the store).
 *
 * Decided when the pass begins (cursor null) by a runner that began the pair (not `resumed`): the pass is
 * `unlinked` when the pair has no links at all then (no matched pairs, no earlier pass that wrote any, no
 * earlier initial sync). From then on, links of the pair are written only by this pass (the initial sync is
 * all a sync does until it is done, and nothing else writes links), one per record of its pages; the pages
 * come in remote id order after the cursor, so no page holds a record an earlier page did, and a record of
 * the page being read has no link. The choice is kept in the progress for the pass's later steps. A runner
 * that takes the pair up after another one (a crash, a pause, a restart) finds it `resumed` and looks links
 * up as usual: pages written to the app but not committed are read again then, and their copies adopted.
 */
async function unlinkedPass(ctx: EngineContext, entry: PairProgress, side: SideName): Promise<boolean> {
  if (entry.resumed) return false;
  if (entry.cursor === null) {
    if (!(await hasLinks(ctx.db, ctx.syncId, entry.table_pair))) entry.unlinked = side;
    else if (entry.unlinked === side) delete entry.unlinked;
  }
  return entry.unlinked === side;
}

/** The page's records this pass reconciles (with the ones not to create, for duplicate match keys). */
async function toReconcile(
  ctx: EngineContext,
  entry: PairProgress,
  side: SideName,
  page: RecordPage,
  unlinked: boolean,
): Promise<{ records: RecordPage['records']; skip: Set<string> }> {
  const ids = page.records.map((record) => record.remoteId);
  // A record whose match value is not unique, or whose counterpart by match value is linked to another
  // record.
  const skipped =
    ids.length && entry.preview.skipped > 0
      ? await skippedRemoteIds(ctx.db, { syncId: ctx.syncId, pair: entry.table_pair, side, remoteIds: ids })
      : [];
  const skip = new Set(skipped.map((remoteId) => `${side}:${remoteId}`));
  let records = page.records;
  if (side === 'right' && ids.length && !unlinked) {
    // Records the left pass already synced (matched or created) are done.
    const done = new Set(await syncedRightRemoteIds(ctx.db, ctx.syncId, entry.table_pair, ids));
    records = records.filter((record) => !done.has(record.remoteId));
  }
  return { records, skip };
}

/** All pairs done: the sync is on. */
export async function finishInitialSync(ctx: EngineContext, progress: InitialProgress): Promise<void> {
  await ctx.fenced(async (tx) => {
    await saveProgress(tx, ctx.syncId, progress);
    await finishInitialSyncRun(tx, ctx.syncId);
  });
}
