/**
 * The initial sync (engine design section 6). Preparing: table setup (service id column, change capture),
 * change checkpoints taken before anything is read (so edits made during the initial sync are replayed
 * afterwards), match keys of both sides staged in the store, and a preview (counts; non-unique match keys
 * raise a `sync_preview` issue). Running: matched pairs are linked in one statement, then each side is
 * streamed page by page through `reconcile`, committing the page cursor with the page, so a crash resumes
 * from the last committed page. Pairs run in dependency order (relation targets first).
 */
import { randomUUID } from 'node:crypto';
import type { CanonicalValue, SideName } from '@lockstep/domain';
import { raiseIssues } from '@lockstep/persistence';
import type { RecordPage } from '@lockstep/connectors-core';
import type { EngineContext } from './context';
import { convertAcross, type PairPlan, sideEnd } from './plan';
import { reconcile } from './reconcile';
import type { Db } from './store';
import type { IdScheme } from './service-ids';

export interface PairProgress {
  table_pair: number;
  left_table: string;
  right_table: string;
  stage: 'link' | 'left' | 'right' | 'done';
  cursor: string | null;
  match_field: { left: string; right: string } | null;
  preview: { left_records: number; right_records: number; matched: number; to_create_left: number; to_create_right: number; skipped: number; duplicate_keys: number };
  processed: { left: number; right: number };
  created: { left: number; right: number };
  updated: { left: number; right: number };
  failed: number;
  /** The runner working on the pair (see `takeUp`). */
  runner?: string;
  /** Set when another runner had begun the pair (after a crash, a pause or a restart): no pass is skipped then. */
  resumed?: boolean;
  /**
   * The side whose pass this runner began while the pair had no record links at all (see `unlinkedPass`): its
   * pages look up no links by remote id.
   */
  unlinked?: SideName;
}

export interface InitialProgress {
  /** This initial sync's run: the seed of the service ids its creates derive (service-ids.ts). */
  run?: string;
  /** How the run derives them; absent for runs prepared before scheme 2 (they keep scheme 1 when they resume). */
  id_scheme?: IdScheme;
  pairs: PairProgress[];
}

const SIDES: SideName[] = ['left', 'right'];

/**
 * What a run's creates derive their service ids from: its run id and its scheme. A run prepared by an older
 * release has no `id_scheme` and keeps scheme 1, so a page it replays after a crash derives the ids it wrote.
 */
export function runIds(progress: InitialProgress): { initialRun?: string; initialIdScheme?: IdScheme } {
  return progress.run ? { initialRun: progress.run, initialIdScheme: progress.id_scheme ?? 1 } : {};
}

function matchKey(value: CanonicalValue): string | null {
  if (value === null || value === '') return null;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return /^-?\d+(\.\d+)?$/.test(value) ? String(Number(value)) === value ? value : value.replace(/\.?0+$/, '') : value;
  if (typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

export async function saveProgress(db: Db, syncId: string, progress: InitialProgress): Promise<void> {
  await db.query(`UPDATE syncs SET initial_sync_progress = $2, updated_at = now() WHERE id = $1`, [syncId, JSON.stringify(progress)]);
}

/** Preparing: table setup, checkpoints, staged match keys, preview. */
export async function prepareInitialSync(ctx: EngineContext): Promise<void> {
  const { plan } = ctx;
  // Table setup first: change capture must exist before the checkpoints that mark "now".
  for (const side of SIDES) {
    const tables = [...new Set(plan.pairs.map((pair) => sideEnd(pair, side)).filter((table) => !table.readOnly).map((table) => table.remoteId))];
    await ctx.assertCanWrite();
    await ctx.sides[side].use(async (connection) => {
      for (const table of tables) await connection.prepareTable(table, { changeCapture: true, serviceIdColumn: true });
    });
    await ctx.db.query(`UPDATE sync_tables SET prepared_at = now() WHERE sync_id = $1 AND side = $2 AND remote_id = ANY($3::text[])`, [ctx.syncId, side, tables]);
    const checkpoints: Record<string, string> = {};
    await ctx.sides[side].use(async (connection) => {
      for (const pair of plan.pairs) {
        const table = sideEnd(pair, side).remoteId;
        checkpoints[table] ??= await connection.currentCheckpoint(table);
      }
    });
    await ctx.fenced((tx) => tx.query(`UPDATE sync_sides SET checkpoint = $3, change_detection = 'change_feed', updated_at = now() WHERE sync_id = $1 AND side = $2`, [ctx.syncId, side, JSON.stringify({ tables: checkpoints })]));
  }
  await ctx.db.query(`DELETE FROM initial_sync_keys WHERE sync_id = $1`, [ctx.syncId]);
  const progress: InitialProgress = { run: randomUUID(), id_scheme: 2, pairs: [] };
  for (const pair of plan.pairs) progress.pairs.push(await stagePair(ctx, pair));
  await ctx.fenced(async (tx) => {
    await tx.query(`UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND type = 'sync_preview' AND resolved_at IS NULL`, [ctx.syncId]);
    for (const entry of progress.pairs) {
      if (entry.preview.skipped === 0) continue;
      const pair = plan.pairs[entry.table_pair]!;
      await raiseIssues(tx, ctx.syncId, [
        {
          type: 'sync_preview',
          code: 'validation_error',
          side: null,
          connector: ctx.sides.left.connector,
          message: `Table pair ${pair.index} (${pair.left.name} / ${pair.right.name}): ${entry.preview.skipped} record(s) are not matched and not synced (${entry.preview.duplicate_keys} match key value(s) are not unique; other values belong to a record already linked to another one).`,
          remediation: {
            explanation: `The initial sync pairs existing records by the match field ${entry.match_field?.left} = ${entry.match_field?.right}. Some values occur more than once on a side, or belong to a record an earlier start of this sync linked to another record, so Lockstep cannot tell which records belong together; those records are skipped instead of creating duplicates.`,
            suggested_action: 'Make the match field unique on both sides (or pick another match field when starting the sync), then start the sync again to match the skipped records.',
            links: [],
          },
          dedupeKey: `preview:${pair.index}`,
          tableId: pair.left.id,
          tableName: pair.left.name,
        },
      ]);
    }
    await saveProgress(tx, ctx.syncId, progress);
    // Only while still active: a sync paused during the preparation stays `preparing` (the run has not begun, and
    // a pause while it runs would be refused), so activating it prepares it again.
    await tx.query(`UPDATE syncs SET initial_sync_phase = 'running', updated_at = now() WHERE id = $1 AND initial_sync_phase = 'preparing' AND status = 'active'`, [ctx.syncId]);
  });
}

async function stagePair(ctx: EngineContext, pair: PairPlan): Promise<PairProgress> {
  const match = pair.match;
  const counts = { left: 0, right: 0 };
  const fieldOf = (side: SideName): string | null => (match ? (side === 'left' ? match.left.remoteId : match.right.remoteId) : null);
  const read = (side: SideName, after: string | null, field: string | null) =>
    ctx.sides[side].use((connection) => connection.readPage(sideEnd(pair, side).remoteId, { after, pageSize: Math.max(ctx.pageSize, 2000), fields: field ? [field] : [] }));
  // Without a match field, or when one side is empty, there is nothing to pair up: the pass only counts.
  const first = { left: await read('left', null, fieldOf('left')), right: await read('right', null, fieldOf('right')) };
  const pairsUp = match !== null && first.left.records.length > 0 && first.right.records.length > 0;
  for (const side of SIDES) {
    const field = pairsUp ? fieldOf(side) : null;
    if (!pairsUp && first[side].next !== null) {
      // Only a count is needed: the app counts when its connector can (200,000 rows paged through took a second).
      const counted = await ctx.sides[side].use((connection) => (connection.countRecords ? connection.countRecords(sideEnd(pair, side).remoteId) : Promise.resolve(null)));
      if (counted !== null) {
        counts[side] = counted;
        continue;
      }
    }
    let after: string | null = null;
    let page: RecordPage | null = first[side];
    do {
      page ??= await read(side, after, field);
      counts[side] += page.records.length;
      if (page.records.length > 0 && match && field) {
        const keys = page.records.map((record) => {
          if (!match || !field) return null;
          const value = record.values[field] ?? null;
          // Keys compare in the right side's type: left values are converted first.
          const converted = side === 'left' ? convertAcross(match, 'left', value) : { ok: true as const, value };
          return converted.ok ? matchKey(converted.value) : null;
        });
        await ctx.db.query(
          `INSERT INTO initial_sync_keys (sync_id, table_pair, side, remote_id, match_key) SELECT $1, $2, $3, r, k FROM unnest($4::text[], $5::text[]) AS t(r, k) ON CONFLICT DO NOTHING`,
          [ctx.syncId, pair.index, side, page.records.map((record) => record.remoteId), keys],
        );
      }
      after = page.next;
      page = null;
    } while (after);
  }
  // Fresh statistics: the planner otherwise assumes the bulk-filled table is empty and picks nested loops.
  await ctx.db.query(`ANALYZE initial_sync_keys`);
  const outcome = pairsUp ? await stagedOutcome(ctx, pair.index, counts) : await unstagedOutcome(ctx, pair.index, counts);
  const { matched, skipped } = outcome;
  const writesRight = pair.direction !== 'right_to_left';
  const writesLeft = pair.direction !== 'left_to_right';
  return {
    table_pair: pair.index,
    left_table: pair.left.name,
    right_table: pair.right.name,
    stage: 'link',
    cursor: null,
    match_field: match ? { left: match.left.name, right: match.right.name } : null,
    preview: {
      left_records: counts.left,
      right_records: counts.right,
      matched,
      to_create_right: writesRight ? outcome.create.left : 0,
      to_create_left: writesLeft ? outcome.create.right : 0,
      skipped: skipped.left + skipped.right,
      duplicate_keys: outcome.duplicateKeys,
    },
    processed: { left: 0, right: 0 },
    created: { left: 0, right: 0 },
    updated: { left: 0, right: 0 },
    failed: 0,
  };
}

/**
 * The staged match keys that pair one record on each side (a value unique on both sides). A pair is linkable
 * when neither record is linked to another record of the other side: both unlinked, already linked together,
 * or linked only to their own side (a create that failed or a copy never made, as an earlier start of this
 * sync may have left). The link stage links exactly the linkable pairs, so the preview counts them.
 */
const KEY_PAIRS_SQL = `
  k AS (SELECT match_key, count(*) FILTER (WHERE side = 'left') AS l, count(*) FILTER (WHERE side = 'right') AS r,
               min(remote_id) FILTER (WHERE side = 'left') AS l_id, min(remote_id) FILTER (WHERE side = 'right') AS r_id
        FROM initial_sync_keys WHERE sync_id = $1 AND table_pair = $2 AND match_key IS NOT NULL GROUP BY match_key),
  p AS (SELECT l_id AS l, r_id AS r FROM k WHERE l = 1 AND r = 1),
  j AS (SELECT p.l, p.r, a.id AS a_id, b.id AS b_id,
               (a.right_remote_id IS NULL OR a.right_remote_id = p.r) AND (b.left_remote_id IS NULL OR b.left_remote_id = p.l) AS linkable
        FROM p
        LEFT JOIN record_links a ON a.sync_id = $1 AND a.table_pair = $2 AND a.left_remote_id = p.l
        LEFT JOIN record_links b ON b.sync_id = $1 AND b.table_pair = $2 AND b.right_remote_id = p.r)`;

/**
 * Each staged record of a side, classed by what the run does with it: `matched` (a linkable pair), `linked`
 * (already linked to a record of the other side: never created again), `skipped` (its match value is not unique,
 * or its pair is not linkable: not created, since a record with that value exists on the other side) or `create`.
 */
function classSql(side: SideName): string {
  const own = side === 'left' ? 'left_remote_id' : 'right_remote_id';
  const other = side === 'left' ? 'right_remote_id' : 'left_remote_id';
  return `SELECT '${side}' AS side, CASE WHEN j.linkable THEN 'matched' WHEN x.id IS NOT NULL THEN 'linked'
                 WHEN j.l IS NOT NULL OR kk.l > 1 OR kk.r > 1 THEN 'skipped' ELSE 'create' END AS class
          FROM initial_sync_keys s
          LEFT JOIN j ON j.${side === 'left' ? 'l' : 'r'} = s.remote_id
          LEFT JOIN k kk ON kk.match_key = s.match_key
          LEFT JOIN record_links x ON x.sync_id = $1 AND x.table_pair = $2 AND x.${own} = s.remote_id AND x.${other} IS NOT NULL
          WHERE s.sync_id = $1 AND s.table_pair = $2 AND s.side = '${side}'`;
}

interface PairOutcome {
  matched: number;
  duplicateKeys: number;
  /** Per side: its records that are not created on the other side because of their match value. */
  skipped: Record<SideName, number>;
  /** Per side: its records the run creates on the other side (where the direction allows). */
  create: Record<SideName, number>;
}

async function hasLinks(db: Db, syncId: string, index: number): Promise<boolean> {
  const rows: { found: boolean }[] = await db.query(`SELECT EXISTS (SELECT 1 FROM record_links WHERE sync_id = $1 AND table_pair = $2) AS found`, [syncId, index]);
  return rows[0]?.found === true;
}

/**
 * The preview of a pair whose match keys were staged on both sides. Without links (the usual first start) every
 * pair of unique values is linkable and nothing is linked yet: one pass over the keys counts it all.
 */
async function stagedOutcome(ctx: EngineContext, index: number, counts: Record<SideName, number>): Promise<PairOutcome> {
  if (!(await hasLinks(ctx.db, ctx.syncId, index))) {
    const [stats]: Record<string, string>[] = await ctx.db.query(
      `WITH k AS (SELECT match_key, count(*) FILTER (WHERE side = 'left') AS l, count(*) FILTER (WHERE side = 'right') AS r
                  FROM initial_sync_keys WHERE sync_id = $1 AND table_pair = $2 AND match_key IS NOT NULL GROUP BY match_key)
       SELECT count(*) FILTER (WHERE l = 1 AND r = 1) AS matched, count(*) FILTER (WHERE l > 1 OR r > 1) AS dup_keys,
              coalesce(sum(l) FILTER (WHERE l > 1 OR r > 1), 0) AS skipped_left, coalesce(sum(r) FILTER (WHERE l > 1 OR r > 1), 0) AS skipped_right
       FROM k`,
      [ctx.syncId, index],
    );
    const matched = Number(stats!['matched']);
    const skipped = { left: Number(stats!['skipped_left']), right: Number(stats!['skipped_right']) };
    return { matched, duplicateKeys: Number(stats!['dup_keys']), skipped, create: { left: counts.left - matched - skipped.left, right: counts.right - matched - skipped.right } };
  }
  const [row]: Record<string, string>[] = await ctx.db.query(
    `WITH ${KEY_PAIRS_SQL},
     c AS (${classSql('left')} UNION ALL ${classSql('right')})
     SELECT (SELECT count(*) FROM j WHERE linkable) AS matched, (SELECT count(*) FROM k WHERE l > 1 OR r > 1) AS dup_keys,
            count(*) FILTER (WHERE side = 'left' AND class = 'skipped') AS skipped_left, count(*) FILTER (WHERE side = 'right' AND class = 'skipped') AS skipped_right,
            count(*) FILTER (WHERE side = 'left' AND class = 'create') AS create_left, count(*) FILTER (WHERE side = 'right' AND class = 'create') AS create_right
     FROM c`,
    [ctx.syncId, index],
  );
  return {
    matched: Number(row!['matched']),
    duplicateKeys: Number(row!['dup_keys']),
    skipped: { left: Number(row!['skipped_left']), right: Number(row!['skipped_right']) },
    create: { left: Number(row!['create_left']), right: Number(row!['create_right']) },
  };
}

/**
 * The preview of a pair with nothing to match (no match field, or a side empty): every record is created on the
 * other side except those an earlier start of the sync already linked to a record there.
 */
async function unstagedOutcome(ctx: EngineContext, index: number, counts: Record<SideName, number>): Promise<PairOutcome> {
  const [row]: { linked: string }[] = await ctx.db.query(
    `SELECT count(*) AS linked FROM record_links WHERE sync_id = $1 AND table_pair = $2 AND left_remote_id IS NOT NULL AND right_remote_id IS NOT NULL`,
    [ctx.syncId, index],
  );
  const linked = Number(row!.linked);
  return { matched: 0, duplicateKeys: 0, skipped: { left: 0, right: 0 }, create: { left: Math.max(0, counts.left - linked), right: Math.max(0, counts.right - linked) } };
}

/**
 * The link stage: every linkable pair ends up as one link. A record linked only to its own side (an earlier
 * start's create that failed) keeps its link and gains its match; two such links of one pair become one. Their
 * shadows are cleared, so the pair is merged as first seen (the preferred side wins differences), as a new match
 * is; their record issues close (the run raises again whatever still fails).
 */
async function linkMatches(tx: Db, syncId: string, index: number): Promise<void> {
  const params = [syncId, index];
  if (await hasLinks(tx, syncId, index)) {
    const open = `WITH ${KEY_PAIRS_SQL} SELECT * FROM j WHERE linkable AND a_id IS DISTINCT FROM b_id`;
    await tx.query(
      `UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND type = 'record' AND resolved_at IS NULL
         AND record_id IN (SELECT a_id FROM (${open}) o UNION SELECT b_id FROM (${open}) o)`,
      params,
    );
    await tx.query(`DELETE FROM record_links WHERE id IN (SELECT b_id FROM (${open}) o WHERE a_id IS NOT NULL)`, params);
    const cleared = `left_shadow = NULL, right_shadow = NULL, left_hash = NULL, right_hash = NULL, create_pending = NULL, updated_at = now()`;
    await tx.query(`UPDATE record_links x SET right_remote_id = o.r, ${cleared} FROM (${open}) o WHERE x.id = o.a_id`, params);
    await tx.query(`UPDATE record_links x SET left_remote_id = o.l, ${cleared} FROM (${open}) o WHERE x.id = o.b_id AND o.a_id IS NULL`, params);
  }
  await tx.query(
    `WITH ${KEY_PAIRS_SQL}
     INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id)
     SELECT 'rec_' || substr(md5(gen_random_uuid()::text), 1, 20), $1, $2, gen_random_uuid(), j.l, j.r FROM j
     WHERE j.a_id IS NULL AND j.b_id IS NULL
     ON CONFLICT DO NOTHING`,
    params,
  );
}

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

/** Keyed by the side's session, which lives as long as the runner (a step's context and progress are new each step). */
const prefetched = new WeakMap<object, Prefetch>();

function readNow(ctx: EngineContext, side: SideName, table: string, cursor: string | null): Promise<RecordPage> {
  return ctx.sides[side].use((connection) => connection.readPage(table, { after: cursor, pageSize: ctx.pageSize }));
}

async function readPage(ctx: EngineContext, side: SideName, table: string, index: number, cursor: string | null): Promise<RecordPage> {
  const ahead = prefetched.get(ctx.sides[side]);
  prefetched.delete(ctx.sides[side]);
  // A page read long ago (the sync was paused between steps) is read again: fresher, and no memory held for long.
  const page = ahead?.key === `${index}|${table}|${cursor ?? ''}` && Date.now() - ahead.at < 30_000 ? await ahead.page : null;
  return page ?? readNow(ctx, side, table, cursor);
}

function prefetch(ctx: EngineContext, side: SideName, table: string, index: number, cursor: string): void {
  prefetched.set(ctx.sides[side], { key: `${index}|${table}|${cursor}`, at: Date.now(), page: readNow(ctx, side, table, cursor).catch(() => null) });
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
 * lookups filter on: a full ANALYZE also samples the shadows and took about half a second per run at 100k links.
 */
const ANALYZE_AFTER_PAGES = [2, 20, 200];

async function analyzeLinks(ctx: EngineContext): Promise<void> {
  await ctx.db.query(`ANALYZE record_links (sync_id, table_pair, left_remote_id, right_remote_id, service_id)`);
}

/**
 * Pages in flight after their records are decided: one being written to the app, one whose store commit
 * runs, one waiting on either. Each holds at most a store connection; app writes share the side's connection.
 * Commits happen in page order.
 */
const PAGES_IN_FLIGHT = 3;

/** How long one step keeps taking pages before it returns to the runner (which checks the sync between steps). */
const STEP_BUDGET_MS = 5000;

/**
 * Running: a step takes pages of one pass for about five seconds (every app write checks pause first), then
 * returns to the runner. Pages are pipelined: a page's app writes and store commit (links, shadows, operations,
 * the cursor) run while the next pages are read and decided (at most PAGES_IN_FLIGHT pages in flight); commits
 * stay in page order, and the step ends only after its last commit (so a short step would drain the pipeline
 * often). A crash can therefore leave a few pages written to the app but not committed; the replay from the
 * committed cursor derives the same service ids and adopts those rows. Returns true when done.
 */
export async function runInitialSyncStep(ctx: EngineContext, progress: InitialProgress): Promise<boolean> {
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
      await analyzeLinks(ctx);
      return false;
    }
    const side: SideName = entry.stage === 'left' ? 'left' : 'right';
    if (entry.preview[`${side}_records`] === 0 && entry.cursor === null && !entry.resumed) {
      // The side was empty when the sync started, and this runner did the whole other pass: every record the side
      // holds now is a copy that pass wrote (linked already) or was added since the checkpoint (the change feed
      // after the initial sync delivers it). Reading the side again would find nothing to do.
      entry.stage = side === 'left' ? 'right' : 'done';
      await ctx.fenced((tx) => saveProgress(tx, ctx.syncId, progress));
      return false;
    }
    const unlinked = await unlinkedPass(ctx, entry, side);
    const table = sideEnd(pair, side).remoteId;
    const started = Date.now();
    let cursor = entry.cursor;
    let processed = entry.processed.left + entry.processed.right;
    // Pages still being written or committed, oldest first.
    const inFlight: Promise<void>[] = [];
    try {
      do {
        if (inFlight.length >= PAGES_IN_FLIGHT) await inFlight.shift();
        // Statistics serve the lookups of links by remote id, which an unlinked pass does not make; a pass that makes
        // them after one that did not (and took none) starts with fresh ones.
        const passStart = cursor === null && processed > 0;
        if (!unlinked && (passStart || ANALYZE_AFTER_PAGES.includes(processed / ctx.pageSize))) await analyzeLinks(ctx);
        const page = await readPage(ctx, side, table, index, cursor);
        if (page.next) prefetch(ctx, side, table, index, page.next);
        const { records, skip } = await toReconcile(ctx, entry, side, page, unlinked);
        const next = page.next;
        const result = await reconcile(
          ctx,
          pair,
          records.map((record) => ({ side, remoteId: record.remoteId, record, at: null })),
          {
            kind: 'initial',
            skip,
            unlinked,
            ...runIds(progress),
            after: inFlight.at(-1) ?? null,
            onCommit: async (tx, counts) => {
              // A page's commit does not wait for its WAL to reach the disk. Losing the last such commits (the store's
              // server crashed just after them) loses only what a worker crash between a page's app writes and its commit
              // loses: the pages are read again from the cursor before them, and their copies adopted (service ids are
              // derived). The next synchronous commit on the server (the phase moving to 'done' included) makes them durable.
              await tx.query(`SET LOCAL synchronous_commit = off`);
              entry.processed[side] += page.records.length;
              entry.created.left += counts.created.left;
              entry.created.right += counts.created.right;
              entry.updated.left += counts.updated.left;
              entry.updated.right += counts.updated.right;
              entry.failed += counts.failed;
              entry.cursor = next;
              if (!next) {
                entry.stage = side === 'left' ? 'right' : 'done';
                entry.cursor = null;
              }
              await saveProgress(tx, ctx.syncId, progress);
            },
          },
        );
        if (result.commit) inFlight.push(result.commit);
        processed += page.records.length;
        cursor = next;
      } while (cursor && Date.now() - started < STEP_BUDGET_MS);
    } catch (error) {
      await Promise.allSettled(inFlight);
      throw error;
    }
    for (const commit of inFlight) await commit;
    return false;
  }
  return true;
}

/**
 * Whether the records of this pass have no record links yet, so that their pages need not look any up by remote
 * id (two index probes per record in the store, about a sixth of its work per record).
 *
 * Decided when the pass begins (cursor null) by a runner that began the pair (not `resumed`): the pass is
 * `unlinked` when the pair has no links at all then (no matched pairs, no earlier pass that wrote any, no
 * earlier initial sync). From then on, links of the pair are written only by this pass (the initial sync is all
 * a sync does until it is done, and nothing else writes links), one per record of its pages; the pages come in
 * remote id order after the cursor, so no page holds a record an earlier page did, and a record of the page
 * being read has no link. The choice is kept in the progress for the pass's later steps. A runner that takes
 * the pair up after another one (a crash, a pause, a restart) finds it `resumed` and looks links up as usual:
 * pages written to the app but not committed are read again then, and their copies adopted.
 */
async function unlinkedPass(ctx: EngineContext, entry: PairProgress, side: SideName): Promise<boolean> {
  if (entry.resumed) return false;
  if (entry.cursor === null) {
    const rows: { found: boolean }[] = await ctx.db.query(`SELECT EXISTS (SELECT 1 FROM record_links WHERE sync_id = $1 AND table_pair = $2) AS found`, [ctx.syncId, entry.table_pair]);
    if (!rows[0]?.found) entry.unlinked = side;
    else if (entry.unlinked === side) delete entry.unlinked;
  }
  return entry.unlinked === side;
}

/** The page's records this pass reconciles (with the ones not to create, for duplicate match keys). */
async function toReconcile(ctx: EngineContext, entry: PairProgress, side: SideName, page: RecordPage, unlinked: boolean): Promise<{ records: RecordPage['records']; skip: Set<string> }> {
  const ids = page.records.map((record) => record.remoteId);
  const own = side === 'left' ? 'left_remote_id' : 'right_remote_id';
  const other = side === 'left' ? 'right_remote_id' : 'left_remote_id';
  // A record whose match value is not unique, or whose counterpart by match value is linked to another record.
  const skipRows: { remote_id: string }[] =
    ids.length && entry.preview.skipped > 0
      ? await ctx.db.query(
          `SELECT k.remote_id FROM initial_sync_keys k WHERE k.sync_id = $1 AND k.table_pair = $2 AND k.side = $3 AND k.remote_id = ANY($4::text[])
             AND (k.match_key IN (SELECT match_key FROM initial_sync_keys WHERE sync_id = $1 AND table_pair = $2 AND match_key IS NOT NULL GROUP BY side, match_key HAVING count(*) > 1)
               OR EXISTS (SELECT 1 FROM initial_sync_keys o JOIN record_links x ON x.sync_id = $1 AND x.table_pair = $2 AND x.${other} = o.remote_id
                          WHERE o.sync_id = $1 AND o.table_pair = $2 AND o.side <> $3 AND o.match_key = k.match_key AND x.${own} <> k.remote_id))`,
          [ctx.syncId, entry.table_pair, side, ids],
        )
      : [];
  const skip = new Set(skipRows.map((row) => `${side}:${row.remote_id}`));
  let records = page.records;
  if (side === 'right' && ids.length && !unlinked) {
    // Records the left pass already synced (matched or created) are done.
    const doneRows: { right_remote_id: string }[] = await ctx.db.query(
      `SELECT right_remote_id FROM record_links WHERE sync_id = $1 AND table_pair = $2 AND right_remote_id = ANY($3::text[]) AND right_shadow IS NOT NULL`,
      [ctx.syncId, entry.table_pair, ids],
    );
    const done = new Set(doneRows.map((row) => row.right_remote_id));
    records = records.filter((record) => !done.has(record.remoteId));
  }
  return { records, skip };
}

/** All pairs done: the sync is on. */
export async function finishInitialSync(ctx: EngineContext, progress: InitialProgress): Promise<void> {
  await ctx.fenced(async (tx) => {
    await saveProgress(tx, ctx.syncId, progress);
    await tx.query(`UPDATE syncs SET initial_sync_phase = 'done', initial_sync_finished_at = now(), activating = false, updated_at = now() WHERE id = $1 AND initial_sync_phase = 'running'`, [ctx.syncId]);
    await tx.query(`DELETE FROM initial_sync_keys WHERE sync_id = $1`, [ctx.syncId]);
  });
}
