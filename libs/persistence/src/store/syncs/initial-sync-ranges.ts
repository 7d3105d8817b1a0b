/**
 * `initial_sync_ranges`: the key ranges of a large pair's initial sync pass, one row per range of a side.
 * Any worker of the deployment claims a free range with a lease of its own (owner, expiry and a fencing token
 * that grows with every claim, as `sync_leases`); the range's cursor and counts are committed with each page
 * under that token (`holdsRange` first in the page's transaction), so a worker that lost the range cannot
 * commit. Token 1 is the range's first taker; a higher one took it over (after a crash, a shutdown, a pause).
 */
import type { SideName } from '@lockstep/domain';
import type { Db } from '../db';
import { returnedRows } from '../db';

/** Which range: a sync's pair, the side its pass reads, the range's place in key order. */
export interface RangeKey {
  syncId: string;
  pair: number;
  side: SideName;
  index: number;
}

/** A range as its worker claimed it: the bounds, where its pass stands, and the claim's token. */
export interface ClaimedRange extends RangeKey {
  after: string | null;
  before: string | null;
  cursor: string | null;
  done: number;
  token: string;
}

/** What a side's ranges did together, for the pair's progress. */
export interface RangeTotals {
  ranges: number;
  finished: number;
  /** Ranges claimed more than once (a crash, a shutdown, a pause): their first taker did not finish them. */
  takenOver: number;
  done: number;
  created: Record<SideName, number>;
  updated: Record<SideName, number>;
  failed: number;
}

/** What one page of a range did, committed with it. */
export interface RangePage {
  cursor: string | null;
  rows: number;
  created: Record<SideName, number>;
  updated: Record<SideName, number>;
  failed: number;
}

const DELETE_SIDE_SQL = `
  DELETE FROM initial_sync_ranges WHERE sync_id = $1 AND table_pair = $2 AND side = $3`;

const INSERT_RANGES_SQL = `
  INSERT INTO initial_sync_ranges (sync_id, table_pair, side, range_index, after_cursor, before_key)
  SELECT $1, $2, $3, i - 1, a, b FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS t(a, b, i)`;

/** The side's pass of the pair runs as these ranges (any earlier ranges of it are dropped). */
export async function createRanges(
  db: Db,
  input: { syncId: string; pair: number; side: SideName },
  ranges: { after: string | null; before: string | null }[],
): Promise<void> {
  const params = [input.syncId, input.pair, input.side];
  await db.query(DELETE_SIDE_SQL, params);
  await db.query(INSERT_RANGES_SQL, [
    ...params,
    ranges.map((range) => range.after),
    ranges.map((range) => range.before),
  ]);
}

const CLEAR_RANGES_SQL = `DELETE FROM initial_sync_ranges WHERE sync_id = $1`;

/** Forgets the sync's ranges (a new preparation, or the run is done). */
export async function clearRanges(db: Db, syncId: string): Promise<void> {
  await db.query(CLEAR_RANGES_SQL, [syncId]);
}

const TOTALS_SQL = `
  SELECT count(*) AS ranges, count(finished_at) AS finished, count(*) FILTER (WHERE token > 1) AS taken_over,
         coalesce(sum(done), 0) AS done,
         coalesce(sum(created_left), 0) AS created_left, coalesce(sum(created_right), 0) AS created_right,
         coalesce(sum(updated_left), 0) AS updated_left, coalesce(sum(updated_right), 0) AS updated_right,
         coalesce(sum(failed), 0) AS failed
  FROM initial_sync_ranges WHERE sync_id = $1 AND table_pair = $2 AND side = $3`;

/** The side's ranges of the pair summed. */
export async function rangeTotals(
  db: Db,
  syncId: string,
  pair: number,
  side: SideName,
): Promise<RangeTotals> {
  const [row]: Record<string, string>[] = await db.query(TOTALS_SQL, [syncId, pair, side]);
  const n = (column: string) => Number(row![column]);
  return {
    ranges: n('ranges'),
    finished: n('finished'),
    takenOver: n('taken_over'),
    done: n('done'),
    created: { left: n('created_left'), right: n('created_right') },
    updated: { left: n('updated_left'), right: n('updated_right') },
    failed: n('failed'),
  };
}

/**
 * The first free range (never claimed, released, or its lease expired) of an active sync whose initial sync
 * runs, locked with `SKIP LOCKED` so two workers claiming at once take different ones, and claimed in the
 * same statement.
 */
const CLAIM_RANGE_SQL = `
  WITH c AS (
    SELECT r.sync_id, r.table_pair, r.side, r.range_index
    FROM initial_sync_ranges r JOIN syncs s ON s.id = r.sync_id
    WHERE r.finished_at IS NULL AND (r.owner IS NULL OR r.expires_at < now())
      AND s.status = 'active' AND s.deleted_at IS NULL AND s.initial_sync_phase = 'running'
      AND ($3::text IS NULL OR s.account_id = $3)
    ORDER BY r.sync_id, r.table_pair, r.side, r.range_index
    LIMIT 1 FOR UPDATE OF r SKIP LOCKED)
  UPDATE initial_sync_ranges r SET owner = $1, token = r.token + 1,
     expires_at = now() + make_interval(secs => $2)
  FROM c
  WHERE r.sync_id = c.sync_id AND r.table_pair = c.table_pair AND r.side = c.side
     AND r.range_index = c.range_index
  RETURNING r.sync_id, r.table_pair, r.side, r.range_index, r.after_cursor, r.before_key, r.cursor, r.done,
     r.token::text AS token`;

/** Claims a free range for `owner` (of one account when `accountId` is given); null when none is free. */
export async function claimRange(
  db: Db,
  input: { owner: string; ttlSeconds: number; accountId: string | null },
): Promise<ClaimedRange | null> {
  const rows = returnedRows<Record<string, string | number | null>>(
    await db.query(CLAIM_RANGE_SQL, [input.owner, input.ttlSeconds, input.accountId]),
  );
  const row = rows[0];
  if (!row) return null;
  return {
    syncId: String(row['sync_id']),
    pair: Number(row['table_pair']),
    side: row['side'] as SideName,
    index: Number(row['range_index']),
    after: row['after_cursor'] as string | null,
    before: row['before_key'] as string | null,
    cursor: row['cursor'] as string | null,
    done: Number(row['done']),
    token: String(row['token']),
  };
}

const RENEW_RANGES_SQL = `
  UPDATE initial_sync_ranges SET expires_at = now() + make_interval(secs => $2)
  WHERE owner = $1 AND finished_at IS NULL AND expires_at >= now()`;

/** Extends the leases of the unfinished ranges `owner` holds (one statement per tick). */
export async function renewRanges(db: Db, owner: string, ttlSeconds: number): Promise<void> {
  await db.query(RENEW_RANGES_SQL, [owner, ttlSeconds]);
}

const RELEASE_RANGE_SQL = `
  UPDATE initial_sync_ranges SET expires_at = now() - interval '1 second'
  WHERE sync_id = $1 AND table_pair = $2 AND side = $3 AND range_index = $4 AND owner = $5 AND token = $6`;

/** The range is free again now, when this owner still holds it with this token. */
export async function releaseRange(db: Db, range: RangeKey, owner: string, token: string): Promise<void> {
  await db.query(RELEASE_RANGE_SQL, [range.syncId, range.pair, range.side, range.index, owner, token]);
}

const RELEASE_OWNER_RANGES_SQL = `
  UPDATE initial_sync_ranges SET expires_at = now() - interval '1 second' WHERE owner = $1
     AND finished_at IS NULL`;

/** Every range this owner holds is free again now (the worker shuts down). */
export async function releaseRangesOf(db: Db, owner: string): Promise<void> {
  await db.query(RELEASE_OWNER_RANGES_SQL, [owner]);
}

const HOLDS_RANGE_SQL = `
  SELECT 1 FROM initial_sync_ranges
  WHERE sync_id = $1 AND table_pair = $2 AND side = $3 AND range_index = $4 AND owner = $5 AND token = $6
     AND finished_at IS NULL
  FOR KEY SHARE`;

/**
 * Whether this owner still holds the range with this token. Run first in a transaction: the row stays
 * key-share locked until it ends, so no other worker claims the range before the transaction commits (a claim
 * locks the row `FOR UPDATE SKIP LOCKED`). A key-share lock, not a share lock: the range's pipelined page
 * commits overlap, and each page's own update of the row (cursor, counts, made in page order) and the lease's
 * renewal must not wait for the next page's transaction, which waits for this one to commit.
 */
export async function holdsRange(db: Db, range: RangeKey, owner: string, token: string): Promise<boolean> {
  const rows: unknown[] = await db.query(HOLDS_RANGE_SQL, [
    range.syncId,
    range.pair,
    range.side,
    range.index,
    owner,
    token,
  ]);
  return rows.length > 0;
}

const COMMIT_PAGE_SQL = `
  UPDATE initial_sync_ranges SET cursor = $5, done = done + $6, created_left = created_left + $7,
     created_right = created_right + $8, updated_left = updated_left + $9, updated_right = updated_right + $10,
     failed = failed + $11, finished_at = CASE WHEN $5::text IS NULL THEN now() END
  WHERE sync_id = $1 AND table_pair = $2 AND side = $3 AND range_index = $4`;

/**
 * In a page's fenced commit (after `holdsRange`): the range's cursor and counts move past the page; a page
 * without a next one finishes the range.
 */
export async function commitRangePage(db: Db, range: RangeKey, page: RangePage): Promise<void> {
  await db.query(COMMIT_PAGE_SQL, [
    range.syncId,
    range.pair,
    range.side,
    range.index,
    page.cursor,
    page.rows,
    page.created.left,
    page.created.right,
    page.updated.left,
    page.updated.right,
    page.failed,
  ]);
}
