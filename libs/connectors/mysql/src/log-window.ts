/**
 * Checkpoints over an AUTO_INCREMENT log written by triggers: the sync's change log (change-feed.ts) and the
 * live export's log (export-capture.ts) are read the same way, in windows.
 *
 * Out-of-order commits. AUTO_INCREMENT ids are handed out when a trigger runs, but become visible when the
 * writing transaction commits, so id 11 can become visible after id 12. A plain "id > checkpoint" would lose
 * 11. The checkpoint therefore carries a high-water mark and the **holes** below it: ids not visible when
 * the high-water mark was taken (a transaction still open, or one rolled back). Every read looks at
 * `id > high-water OR id IN (holes)` in one consistent snapshot; a hole that shows up is delivered and
 * leaves the list; a hole that stays empty for the hold window (measured on the server's clock) is taken to
 * be a rollback and dropped. Holes are few (open transactions), so the checkpoint stays small; it is capped
 * (`CaptureLog`), keeping the newest. A transaction that stays open longer than the hold window after
 * writing is caught by the engine's periodic full scan.
 *
 * Holes are kept as runs of ids (a big transaction still open is one run, not thousands of ids).
 */
import type { PoolConnection } from 'mysql2/promise';
import { exec, rows, type Row } from './db';
import { logExists } from './change-capture';
import { placeholders, quoteIdent } from './sql';

/** How far below the newest id a checkpoint looks for transactions still open. */
export const CHECKPOINT_LOOKBACK = 1_000;

/** Log ids `from`..`to` (inclusive) not visible, first seen missing at `seenAt` (server time, ms). */
export type HoleRange = [from: number, to: number, seenAt: number];

/** Where a reader of a log stands (the sync and the live export each spell it as text their own way). */
export interface LogCheckpoint {
  /** Every log id up to here was delivered, belongs to another table, or lies in `holes`. */
  high: number;
  /** Runs of ids at or below `high` not visible yet, ascending and disjoint. */
  holes: HoleRange[];
}

/** A log written by triggers and read in windows (`readLogWindow`). */
export interface CaptureLog {
  table: string;
  /** At most this many hole ids are kept, the newest (an older one is given up, as if rolled back). */
  maxHoleIds: number;
  /** At most this many runs of hole ids (each is a `BETWEEN` in the read). */
  maxHoleRanges: number;
}

/** A scan for holes at checkpoint time never looks further below the newest id than this. */
const MAX_LOOKBACK_IDS = 1_000_000;
/** Ids fetched per statement while looking for holes. */
const GAP_SCAN_CHUNK = 100_000;
/** Hole runs per statement when checking which became visible. */
const RANGES_PER_STATEMENT = 500;

const COUNT_RANGE_SQL = (log: string) => `
SELECT COUNT(*) AS n FROM ${quoteIdent(log)} WHERE id > ? AND id <= ?`;

const IDS_IN_RANGE_SQL = (log: string) => `
SELECT id FROM ${quoteIdent(log)} WHERE id > ? AND id <= ? ORDER BY id LIMIT ?`;

const IDS_IN_RUNS_SQL = (log: string, runs: number) => `
SELECT id
  FROM ${quoteIdent(log)}
 WHERE ${Array.from({ length: runs }, () => '(id BETWEEN ? AND ?)').join(' OR ')}
 ORDER BY id`;

const MAX_ID_SQL = (log: string) => `
SELECT COALESCE(MAX(id), 0) AS high FROM ${quoteIdent(log)}`;

const NEWEST_BEFORE_SQL = (log: string) => `
SELECT id
  FROM ${quoteIdent(log)}
 WHERE changed_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
 ORDER BY changed_at DESC
 LIMIT 1`;

const WINDOW_SQL = (log: string, columns: string, holeRuns: number) => `
SELECT ${columns}
  FROM ${quoteIdent(log)}
 WHERE table_name = ? AND (id > ?${' OR (id BETWEEN ? AND ?)'.repeat(holeRuns)})
 ORDER BY id
 LIMIT ?`;

const OLD_ENTRIES_SQL = (log: string) => `
SELECT id
  FROM ${quoteIdent(log)}
 WHERE changed_at < UTC_TIMESTAMP(6) - INTERVAL ? DAY AND table_name <> ''
 ORDER BY id
 LIMIT 5000`;

/** Runs of ids in (from, to] missing from `present` (ascending, may hold ids outside the range). Pure. */
export function gapRanges(from: number, to: number, present: readonly number[]): [number, number][] {
  const gaps: [number, number][] = [];
  let expected = from + 1;
  for (const id of present) {
    if (id < expected || id > to) continue;
    if (id > expected) gaps.push([expected, id - 1]);
    expected = id + 1;
  }
  if (expected <= to) gaps.push([expected, to]);
  return gaps;
}

/** `holes` without the ids in `present` (ascending): a run a visible id falls in splits around it. Pure. */
export function subtractIds(holes: readonly HoleRange[], present: readonly number[]): HoleRange[] {
  const result: HoleRange[] = [];
  let index = 0;
  for (const [from, to, seenAt] of holes) {
    while (index < present.length && present[index] < from) index++;
    let start = from;
    while (index < present.length && present[index] <= to) {
      if (present[index] > start) result.push([start, present[index] - 1, seenAt]);
      start = Math.max(start, present[index] + 1);
      index++;
    }
    if (start <= to) result.push([start, to, seenAt]);
  }
  return result;
}

/** Splits runs at `cutoff`: the parts at or below it, and those above. Pure. */
export function splitHoles(holes: readonly HoleRange[], cutoff: number): [HoleRange[], HoleRange[]] {
  const below: HoleRange[] = [];
  const above: HoleRange[] = [];
  for (const [from, to, seenAt] of holes) {
    if (to <= cutoff) below.push([from, to, seenAt]);
    else if (from > cutoff) above.push([from, to, seenAt]);
    else {
      below.push([from, cutoff, seenAt]);
      above.push([cutoff + 1, to, seenAt]);
    }
  }
  return [below, above];
}

/** Sorts runs and keeps the newest within `maxIds` ids and `maxRanges` runs. Pure. */
export function capHoles(holes: readonly HoleRange[], maxIds: number, maxRanges: number): HoleRange[] {
  const sorted = [...holes].sort((a, b) => a[0] - b[0]);
  const kept: HoleRange[] = [];
  let room = maxIds;
  for (let index = sorted.length - 1; index >= 0 && room > 0 && kept.length < maxRanges; index--) {
    const [from, to, seenAt] = sorted[index];
    const start = Math.max(from, to - room + 1);
    kept.push([start, to, seenAt]);
    room -= to - start + 1;
  }
  return kept.reverse();
}

async function serverNowMs(connection: PoolConnection): Promise<number> {
  const [row] = await rows(connection, 'SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS now');
  return Number(row.now);
}

async function ids(connection: PoolConnection, sql: string, values: unknown[]): Promise<number[]> {
  const [result] = await connection.query({ sql, values, rowsAsArray: true });
  return (result as unknown as [unknown][]).map((row) => Number(row[0]));
}

/** Runs of ids in (from, to] not visible in `log` (any table's). One COUNT when there are none. */
async function findGaps(
  connection: PoolConnection,
  log: string,
  from: number,
  to: number,
): Promise<[number, number][]> {
  if (to <= from) return [];
  const [count] = await rows(connection, COUNT_RANGE_SQL(log), [from, to]);
  if (Number(count.n) === to - from) return [];
  const gaps: [number, number][] = [];
  let cursor = from;
  for (;;) {
    const found = await ids(connection, IDS_IN_RANGE_SQL(log), [cursor, to, GAP_SCAN_CHUNK]);
    if (found.length === 0) break;
    const last = found[found.length - 1];
    gaps.push(...gapRanges(cursor, last, found));
    cursor = last;
    if (found.length < GAP_SCAN_CHUNK) break;
  }
  if (cursor < to) gaps.push([cursor + 1, to]);
  return gaps;
}

/** The ids inside `holes` that are visible now (any table's), ascending. */
async function visibleIds(
  connection: PoolConnection,
  log: string,
  holes: readonly HoleRange[],
): Promise<number[]> {
  const found: number[] = [];
  for (let start = 0; start < holes.length; start += RANGES_PER_STATEMENT) {
    const part = holes.slice(start, start + RANGES_PER_STATEMENT);
    const values = part.flatMap(([from, to]) => [from, to]);
    found.push(...(await ids(connection, IDS_IN_RUNS_SQL(log, part.length), values)));
  }
  return found;
}

/**
 * Runs `work` in a read-only transaction on one consistent snapshot. REPEATABLE READ is asked for explicitly:
 * under READ COMMITTED (a server or session default) every statement would see a newer state, and an id
 * committed between two statements could be neither delivered nor kept as a hole.
 */
export async function inSnapshot<T>(connection: PoolConnection, work: () => Promise<T>): Promise<T> {
  await connection.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
  await connection.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  try {
    const result = await work();
    await connection.query('COMMIT');
    return result;
  } catch (error) {
    await connection.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

export interface LookbackOptions {
  /** Look at least this many ids below the newest for transactions still open. */
  ids: number;
  /**
   * And back to the ids logged this long ago (server clock, by `changed_at`), when that reaches further:
   * a transaction that wrote within that time and is still open becomes a hole however many ids followed.
   */
  ms?: number;
}

/**
 * A checkpoint meaning "now", in a consistent snapshot: the newest visible id, and as holes the ids below it
 * (within the lookback) that are not visible: they belong to transactions still open, which commit after
 * "now". A missing log gives `{ high: 0, holes: [] }`.
 */
export async function logCheckpoint(
  connection: PoolConnection,
  database: string,
  log: CaptureLog,
  lookback: LookbackOptions,
): Promise<LogCheckpoint> {
  if (!(await logExists(connection, database, log.table))) return { high: 0, holes: [] };
  return inSnapshot(connection, async () => {
    const now = await serverNowMs(connection);
    const [max] = await rows(connection, MAX_ID_SQL(log.table));
    const high = Number(max.high);
    let floor = high - lookback.ids;
    if (lookback.ms !== undefined) {
      // `changed_at` is the writing statement's start, so a long statement stamps late ids with an early
      // time; the newest entry stamped before the window bounds the ids handed out since well enough.
      const [old] = await rows(connection, NEWEST_BEFORE_SQL(log.table), [Math.round(lookback.ms * 1000)]);
      floor = Math.min(floor, old ? Number(old.id) : 0);
    }
    floor = Math.max(0, floor, high - MAX_LOOKBACK_IDS);
    const holes = (await findGaps(connection, log.table, floor, high)).map(([from, to]): HoleRange => [
      from,
      to,
      now,
    ]);
    return { high, holes: capHoles(holes, log.maxHoleIds, log.maxHoleRanges) };
  });
}

export interface LogWindow {
  /** The table's log rows after the checkpoint (its holes, then above its high-water mark), by id. */
  entries: Row[];
  checkpoint: LogCheckpoint;
  hasMore: boolean;
}

/**
 * Reads the table's log entries after `since` (at most `limit`, by id) and the checkpoint after them. Must
 * run inside `inSnapshot`. Ids are examined up to a cutoff (the last entry returned when the limit cut the
 * read short, else the newest visible id): hole ids at or below it that are visible now were returned (this
 * table's) or are another table's, and leave the holes; those still missing stay while younger than
 * `holdWindowMs` (else they count as rolled back); hole ids above the cutoff stay as they are, whatever
 * their age, until a read reaches them. New holes are the ids missing between the old and the new
 * high-water mark.
 */
export async function readLogWindow(
  connection: PoolConnection,
  log: CaptureLog,
  tableName: string,
  since: LogCheckpoint,
  options: { limit: number; holdWindowMs: number; columns: string },
): Promise<LogWindow> {
  const limit = Math.max(1, Math.floor(options.limit));
  const now = await serverNowMs(connection);
  const found = await rows(connection, WINDOW_SQL(log.table, options.columns, since.holes.length), [
    tableName,
    since.high,
    ...since.holes.flatMap(([from, to]) => [from, to]),
    limit + 1,
  ]);
  const hasMore = found.length > limit;
  const entries = found.slice(0, limit);
  let cutoff = Number.MAX_SAFE_INTEGER;
  let high = since.high;
  if (hasMore) {
    cutoff = Number(entries[entries.length - 1].id);
    high = Math.max(high, cutoff);
  } else {
    const [max] = await rows(connection, MAX_ID_SQL(log.table));
    high = Math.max(high, Number(max.high));
  }
  const [reached, later] = splitHoles(since.holes, cutoff);
  const stillMissing = subtractIds(reached, await visibleIds(connection, log.table, reached)).filter(
    ([, , seenAt]) => now - seenAt < options.holdWindowMs,
  );
  const fresh = (await findGaps(connection, log.table, since.high, high)).map(([from, to]): HoleRange => [
    from,
    to,
    now,
  ]);
  const holes = capHoles([...stillMissing, ...later, ...fresh], log.maxHoleIds, log.maxHoleRanges);
  return { entries, checkpoint: { high, holes }, hasMore };
}

/**
 * Deletes a log's entries older than `days` (all tables), a bounded batch at a time. The ids are found with
 * a plain (non-locking) read and deleted by primary key, so the purge only locks old rows: a ranged DELETE
 * would take next-key locks and wait on (and block) the triggers of transactions still open. Rows with an
 * empty table name are no table's entries (the live export log's marker) and stay.
 */
export async function purgeLog(connection: PoolConnection, log: string, days: number): Promise<number> {
  const old = await ids(connection, OLD_ENTRIES_SQL(log), [days]);
  if (old.length === 0) return 0;
  const result = await exec(
    connection,
    `DELETE FROM ${quoteIdent(log)} WHERE id IN (${placeholders(old.length)})`,
    old,
  );
  return result.affectedRows;
}
