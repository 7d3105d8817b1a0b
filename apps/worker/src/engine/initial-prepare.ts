/**
 * Preparing an initial sync (engine design section 6): table setup (service id column, change capture),
 * change checkpoints taken before anything is read (so edits made during the initial sync are replayed
 * afterwards), match keys of both sides staged in the store, and a preview (counts; non-unique match keys
 * raise a `sync_preview` issue). The passes that follow are initial-sync.ts.
 */
import { randomUUID } from 'node:crypto';
import { type CanonicalValue, convertAcross, type SideName } from '@lockstep/domain';
import {
  analyzeMatchKeys,
  beginInitialSyncRun,
  clearMatchKeys,
  clearRanges,
  countLinkedPairs,
  hasLinks,
  linkedKeyPreview,
  markTablesPrepared,
  raiseIssues,
  resolvePreviewIssues,
  stageMatchKeys,
  startChangeFeed,
  unlinkedKeyPreview,
} from '@lockstep/persistence';
import type { RecordPage, SourceRecord } from '@lockstep/connectors-core';
import { type EngineContext } from './context';
import { type FieldPlan, type PairPlan, sideEnd } from './plan';
import { type InitialProgress, type PairProgress, saveProgress, SIDES } from './initial-progress';

function matchKey(value: CanonicalValue): string | null {
  if (value === null || value === '') return null;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string')
    return /^-?\d+(\.\d+)?$/.test(value)
      ? String(Number(value)) === value
        ? value
        : value.replace(/\.?0+$/, '')
      : value;
  if (typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Preparing: table setup, checkpoints, staged match keys, preview. */
export async function prepareInitialSync(ctx: EngineContext): Promise<void> {
  const { plan } = ctx;
  // The two sides are set up at once (each its own app and session; the store rows they write are their
  // side's): an app slow to set up (Airtable's requests at 5/s, a database's triggers) does not wait for the
  // other. Both are done (or failed) before anything else.
  const setups = await Promise.allSettled(SIDES.map((side) => prepareSide(ctx, side)));
  for (const setup of setups) if (setup.status === 'rejected') throw setup.reason;
  await clearMatchKeys(ctx.db, ctx.syncId);
  await clearRanges(ctx.db, ctx.syncId);
  const progress: InitialProgress = { run: randomUUID(), id_scheme: 2, pairs: [] };
  for (const pair of plan.pairs) progress.pairs.push(await stagePair(ctx, pair));
  await ctx.fenced(async (tx) => {
    await resolvePreviewIssues(tx, ctx.syncId);
    for (const entry of progress.pairs) {
      if (entry.preview.skipped === 0) continue;
      const pair = plan.pairs[entry.table_pair]!;
      await raiseIssues(tx, ctx.syncId, [
        {
          type: 'sync_preview',
          code: 'validation_error',
          side: null,
          connector: ctx.sides.left.connector,
          message:
            `Table pair ${pair.index} (${pair.left.name} / ${pair.right.name}): ` +
            `${entry.preview.skipped} record(s) are not matched and not synced ` +
            `(${entry.preview.duplicate_keys} match key value(s) are not unique; other values belong to ` +
            `a record already linked to another one).`,
          remediation: {
            explanation:
              `The initial sync pairs existing records by the match field ${entry.match_field?.left} = ` +
              `${entry.match_field?.right}. Some values occur more than once on a side, or belong to a ` +
              `record an earlier start of this sync linked to another record, so Lockstep cannot tell ` +
              `which records belong together; those records are skipped instead of creating duplicates.`,
            suggested_action:
              'Make the match field unique on both sides (or pick another match field when starting ' +
              'the sync), then start the sync again to match the skipped records.',
            links: [],
          },
          dedupeKey: `preview:${pair.index}`,
          tableId: pair.left.id,
          tableName: pair.left.name,
        },
      ]);
    }
    await saveProgress(tx, ctx.syncId, progress);
    await beginInitialSyncRun(tx, ctx.syncId);
  });
}

/**
 * One side's table setup (service id column, change capture) and change checkpoints. Table setup first: change
 * capture must exist before the checkpoints that mark "now".
 */
async function prepareSide(ctx: EngineContext, side: SideName): Promise<void> {
  const { plan } = ctx;
  const tables = [
    ...new Set(
      plan.pairs
        .map((pair) => sideEnd(pair, side))
        .filter((table) => !table.readOnly)
        .map((table) => table.remoteId),
    ),
  ];
  await ctx.assertCanWrite();
  await ctx.sides[side].use(async (connection) => {
    for (const table of tables)
      await connection.prepareTable(table, { changeCapture: true, serviceIdColumn: true });
  });
  await markTablesPrepared(ctx.db, ctx.syncId, side, tables);
  const checkpoints: Record<string, string> = {};
  await ctx.sides[side].use(async (connection) => {
    for (const pair of plan.pairs) {
      const table = sideEnd(pair, side).remoteId;
      checkpoints[table] ??= await connection.currentCheckpoint(table);
    }
  });
  await ctx.fenced((tx) => startChangeFeed(tx, ctx.syncId, side, checkpoints));
}

async function stagePair(ctx: EngineContext, pair: PairPlan): Promise<PairProgress> {
  const match = pair.match;
  const counts = { left: 0, right: 0 };
  const fieldOf = (side: SideName): string | null =>
    match ? (side === 'left' ? match.left.remoteId : match.right.remoteId) : null;
  const read = (side: SideName, after: string | null, field: string | null) =>
    ctx.sides[side].use((connection) =>
      connection.readPage(sideEnd(pair, side).remoteId, {
        after,
        pageSize: Math.max(ctx.pageSize, 2000),
        fields: field ? [field] : [],
        view: sideEnd(pair, side).view,
      }),
    );
  // Without a match field, or when one side is empty, there is nothing to pair up: the pass only counts.
  const first = {
    left: await read('left', null, fieldOf('left')),
    right: await read('right', null, fieldOf('right')),
  };
  const pairsUp = match !== null && first.left.records.length > 0 && first.right.records.length > 0;
  for (const side of SIDES) {
    const field = pairsUp ? fieldOf(side) : null;
    if (!pairsUp && first[side].next !== null) {
      // Only a count is needed: the app counts when its connector can (cheaper than paging through the
      // table).
      const counted = await ctx.sides[side].use((connection) =>
        connection.countRecords
          ? connection.countRecords(sideEnd(pair, side).remoteId)
          : Promise.resolve(null),
      );
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
        await stageMatchKeys(ctx.db, {
          syncId: ctx.syncId,
          pair: pair.index,
          side,
          remoteIds: page.records.map((record) => record.remoteId),
          keys: matchKeys(match, side, field, page.records),
        });
      }
      after = page.next;
      page = null;
    } while (after);
  }
  await analyzeMatchKeys(ctx.db);
  const outcome = pairsUp
    ? await stagedOutcome(ctx, pair.index, counts)
    : await unstagedOutcome(ctx, pair.index, counts);
  return previewProgress(pair, counts, outcome);
}

/**
 * The match keys of a page of one side's records (null: no usable key). Keys compare in the right side's
 * type: left values are converted first.
 */
function matchKeys(
  match: FieldPlan,
  side: SideName,
  field: string,
  records: SourceRecord[],
): (string | null)[] {
  return records.map((record) => {
    const value = record.values[field] ?? null;
    const converted = side === 'left' ? convertAcross(match, 'left', value) : { ok: true as const, value };
    return converted.ok ? matchKey(converted.value) : null;
  });
}

/** A pair's progress after its staging pass: the preview counts, and the link stage to do next. */
function previewProgress(
  pair: PairPlan,
  counts: Record<SideName, number>,
  outcome: PairOutcome,
): PairProgress {
  const match = pair.match;
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
      matched: outcome.matched,
      to_create_right: writesRight ? outcome.create.left : 0,
      to_create_left: writesLeft ? outcome.create.right : 0,
      skipped: outcome.skipped.left + outcome.skipped.right,
      duplicate_keys: outcome.duplicateKeys,
    },
    processed: { left: 0, right: 0 },
    created: { left: 0, right: 0 },
    updated: { left: 0, right: 0 },
    failed: 0,
  };
}

interface PairOutcome {
  matched: number;
  duplicateKeys: number;
  /** Per side: its records that are not created on the other side because of their match value. */
  skipped: Record<SideName, number>;
  /** Per side: its records the run creates on the other side (where the direction allows). */
  create: Record<SideName, number>;
}

/**
 * The preview of a pair whose match keys were staged on both sides. Without links (the usual first start)
 * every pair of unique values is linkable and nothing is linked yet: one pass over the keys counts it all.
 */
async function stagedOutcome(
  ctx: EngineContext,
  index: number,
  counts: Record<SideName, number>,
): Promise<PairOutcome> {
  if (!(await hasLinks(ctx.db, ctx.syncId, index))) {
    const { matched, duplicateKeys, skipped } = await unlinkedKeyPreview(ctx.db, ctx.syncId, index);
    return {
      matched,
      duplicateKeys,
      skipped,
      create: { left: counts.left - matched - skipped.left, right: counts.right - matched - skipped.right },
    };
  }
  return linkedKeyPreview(ctx.db, ctx.syncId, index);
}

/**
 * The preview of a pair with nothing to match (no match field, or a side empty): every record is created on
 * the other side except those an earlier start of the sync already linked to a record there.
 */
async function unstagedOutcome(
  ctx: EngineContext,
  index: number,
  counts: Record<SideName, number>,
): Promise<PairOutcome> {
  const linked = await countLinkedPairs(ctx.db, ctx.syncId, index);
  return {
    matched: 0,
    duplicateKeys: 0,
    skipped: { left: 0, right: 0 },
    create: { left: Math.max(0, counts.left - linked), right: Math.max(0, counts.right - linked) },
  };
}
