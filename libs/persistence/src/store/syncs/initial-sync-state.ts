/**
 * The initial sync's state in the store: its phase and progress on `syncs`, the prepared tables, the match
 * keys of both sides staged in `initial_sync_keys` (and the preview counted from them), and the link stage
 * that links every pair of records matched by key.
 */
import type { SideName } from '@lockstep/domain';
import type { Db } from '../db';
import { hasLinks } from '../record-links/record-links';
import { clearRanges } from './initial-sync-ranges';

const SAVE_PROGRESS_SQL = `UPDATE syncs SET initial_sync_progress = $2, updated_at = now() WHERE id = $1`;

/** The run's progress (its pairs, stages and cursors), committed with the work it describes. */
export async function saveInitialSyncProgress(db: Db, syncId: string, progress: object): Promise<void> {
  await db.query(SAVE_PROGRESS_SQL, [syncId, JSON.stringify(progress)]);
}

const TABLES_PREPARED_SQL = `
  UPDATE sync_tables SET prepared_at = now() WHERE sync_id = $1 AND side = $2
     AND remote_id = ANY($3::text[])`;

/** These tables of the side were set up in the app (service id column, change capture). */
export async function markTablesPrepared(
  db: Db,
  syncId: string,
  side: SideName,
  remoteIds: string[],
): Promise<void> {
  await db.query(TABLES_PREPARED_SQL, [syncId, side, remoteIds]);
}

const CLEAR_KEYS_SQL = `DELETE FROM initial_sync_keys WHERE sync_id = $1`;

/** Forgets the sync's staged match keys. */
export async function clearMatchKeys(db: Db, syncId: string): Promise<void> {
  await db.query(CLEAR_KEYS_SQL, [syncId]);
}

const STAGE_KEYS_SQL = `
  INSERT INTO initial_sync_keys (sync_id, table_pair, side, remote_id, match_key)
  SELECT $1, $2, $3, r, k FROM unnest($4::text[], $5::text[]) AS t(r, k)
  ON CONFLICT DO NOTHING`;

/** The match keys of a page of a side's records (null: the record has none), in the order of `remoteIds`. */
export async function stageMatchKeys(
  db: Db,
  input: { syncId: string; pair: number; side: SideName; remoteIds: string[]; keys: (string | null)[] },
): Promise<void> {
  await db.query(STAGE_KEYS_SQL, [input.syncId, input.pair, input.side, input.remoteIds, input.keys]);
}

const ANALYZE_KEYS_SQL = `ANALYZE initial_sync_keys`;

/** Fresh statistics: the planner otherwise assumes the bulk-filled table is empty and picks nested loops. */
export async function analyzeMatchKeys(db: Db): Promise<void> {
  await db.query(ANALYZE_KEYS_SQL);
}

const RESOLVE_PREVIEW_ISSUES_SQL = `
  UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND type = 'sync_preview'
     AND resolved_at IS NULL`;

/** The preview issues of an earlier preparation close (a new preview raises whatever still holds). */
export async function resolvePreviewIssues(db: Db, syncId: string): Promise<void> {
  await db.query(RESOLVE_PREVIEW_ISSUES_SQL, [syncId]);
}

const BEGIN_RUN_SQL = `
  UPDATE syncs SET initial_sync_phase = 'running', updated_at = now()
  WHERE id = $1 AND initial_sync_phase = 'preparing' AND status = 'active'`;

/**
 * Preparing is done: the run begins. Only while still active: a sync paused during the preparation stays
 * `preparing` (the run has not begun, and a pause while it runs would be refused), so activating it prepares
 * it again.
 */
export async function beginInitialSyncRun(db: Db, syncId: string): Promise<void> {
  await db.query(BEGIN_RUN_SQL, [syncId]);
}

const FINISH_RUN_SQL = `
  UPDATE syncs SET initial_sync_phase = 'done', initial_sync_finished_at = now(), activating = false,
     updated_at = now()
  WHERE id = $1 AND initial_sync_phase = 'running'`;

/** Every pair is done: the sync is on, and its staged match keys and key ranges go. */
export async function finishInitialSyncRun(db: Db, syncId: string): Promise<void> {
  await db.query(FINISH_RUN_SQL, [syncId]);
  await db.query(CLEAR_KEYS_SQL, [syncId]);
  await clearRanges(db, syncId);
}

const ASYNCHRONOUS_COMMIT_SQL = `SET LOCAL synchronous_commit = off`;

/**
 * The transaction's commit does not wait for its WAL to reach the disk. For an initial sync page's commit:
 * losing the last such commits (the store's server crashed just after them) loses only what a worker crash
 * between a page's app writes and its commit loses: the pages are read again from the cursor before them, and
 * their copies adopted (service ids are derived). The next synchronous commit on the server (the phase moving
 * to 'done' included) makes them durable.
 */
export async function commitWithoutWaitingForDisk(tx: Db): Promise<void> {
  await tx.query(ASYNCHRONOUS_COMMIT_SQL);
}

/**
 * The staged match keys that pair one record on each side (a value unique on both sides). A pair is linkable
 * when neither record is linked to another record of the other side: both unlinked, already linked together,
 * or linked only to their own side (a create that failed or a copy never made, as an earlier start of this
 * sync may have left). The link stage links exactly the linkable pairs, so the preview counts them.
 */
const KEY_PAIRS_SQL = `
  k AS (SELECT match_key, count(*) FILTER (WHERE side = 'left') AS l,
     count(*) FILTER (WHERE side = 'right') AS r,
               min(remote_id) FILTER (WHERE side = 'left') AS l_id,
                  min(remote_id) FILTER (WHERE side = 'right') AS r_id
        FROM initial_sync_keys WHERE sync_id = $1 AND table_pair = $2
           AND match_key IS NOT NULL GROUP BY match_key),
  p AS (SELECT l_id AS l, r_id AS r FROM k WHERE l = 1 AND r = 1),
  j AS (SELECT p.l, p.r, a.id AS a_id, b.id AS b_id,
               (a.right_remote_id IS NULL OR a.right_remote_id = p.r) AND (b.left_remote_id IS NULL
                  OR b.left_remote_id = p.l) AS linkable
        FROM p
        LEFT JOIN record_links a ON a.sync_id = $1 AND a.table_pair = $2 AND a.left_remote_id = p.l
        LEFT JOIN record_links b ON b.sync_id = $1 AND b.table_pair = $2 AND b.right_remote_id = p.r)`;

/**
 * Each staged record of a side, classed by what the run does with it: `matched` (a linkable pair), `linked`
 * (already linked to a record of the other side: never created again), `skipped` (its match value is not
 * unique, or its pair is not linkable: not created, since a record with that value exists on the other side)
 * or `create`.
 */
function classSql(side: SideName): string {
  const own = side === 'left' ? 'left_remote_id' : 'right_remote_id';
  const other = side === 'left' ? 'right_remote_id' : 'left_remote_id';
  return `SELECT '${side}' AS side, CASE WHEN j.linkable THEN 'matched' WHEN x.id IS NOT NULL THEN 'linked'
                 WHEN j.l IS NOT NULL OR kk.l > 1 OR kk.r > 1 THEN 'skipped' ELSE 'create' END AS class
          FROM initial_sync_keys s
          LEFT JOIN j ON j.${side === 'left' ? 'l' : 'r'} = s.remote_id
          LEFT JOIN k kk ON kk.match_key = s.match_key
          LEFT JOIN record_links x ON x.sync_id = $1 AND x.table_pair = $2 AND x.${own} = s.remote_id
             AND x.${other} IS NOT NULL
          WHERE s.sync_id = $1 AND s.table_pair = $2 AND s.side = '${side}'`;
}

/** What the preview of a pair counts from its staged match keys. */
export interface KeyPreview {
  matched: number;
  duplicateKeys: number;
  /** Per side: its records that are not created on the other side because of their match value. */
  skipped: Record<SideName, number>;
}

const UNLINKED_PREVIEW_SQL = `
  WITH k AS (SELECT match_key, count(*) FILTER (WHERE side = 'left') AS l,
     count(*) FILTER (WHERE side = 'right') AS r
             FROM initial_sync_keys WHERE sync_id = $1 AND table_pair = $2
                AND match_key IS NOT NULL GROUP BY match_key)
  SELECT count(*) FILTER (WHERE l = 1 AND r = 1) AS matched, count(*) FILTER (WHERE l > 1
     OR r > 1) AS dup_keys,
         coalesce(sum(l) FILTER (WHERE l > 1 OR r > 1), 0) AS skipped_left,
            coalesce(sum(r) FILTER (WHERE l > 1 OR r > 1), 0) AS skipped_right
  FROM k`;

/**
 * The preview of a pair without links (the usual first start): every pair of unique values is linkable and
 * nothing is linked yet, so one pass over the keys counts it all.
 */
export async function unlinkedKeyPreview(db: Db, syncId: string, pair: number): Promise<KeyPreview> {
  const [stats]: Record<string, string>[] = await db.query(UNLINKED_PREVIEW_SQL, [syncId, pair]);
  return {
    matched: Number(stats!['matched']),
    duplicateKeys: Number(stats!['dup_keys']),
    skipped: { left: Number(stats!['skipped_left']), right: Number(stats!['skipped_right']) },
  };
}

const LINKED_PREVIEW_SQL = `
  WITH ${KEY_PAIRS_SQL},
  c AS (${classSql('left')} UNION ALL ${classSql('right')})
  SELECT (SELECT count(*) FROM j WHERE linkable) AS matched, (SELECT count(*) FROM k WHERE l > 1
     OR r > 1) AS dup_keys,
         count(*) FILTER (WHERE side = 'left' AND class = 'skipped') AS skipped_left,
            count(*) FILTER (WHERE side = 'right' AND class = 'skipped') AS skipped_right,
         count(*) FILTER (WHERE side = 'left' AND class = 'create') AS create_left,
            count(*) FILTER (WHERE side = 'right' AND class = 'create') AS create_right
  FROM c`;

/**
 * The preview of a pair that has links already (an earlier start of the sync): each staged record classed
 * (see `classSql`), with per side the records the run creates on the other side.
 */
export async function linkedKeyPreview(
  db: Db,
  syncId: string,
  pair: number,
): Promise<KeyPreview & { create: Record<SideName, number> }> {
  const [row]: Record<string, string>[] = await db.query(LINKED_PREVIEW_SQL, [syncId, pair]);
  return {
    matched: Number(row!['matched']),
    duplicateKeys: Number(row!['dup_keys']),
    skipped: { left: Number(row!['skipped_left']), right: Number(row!['skipped_right']) },
    create: { left: Number(row!['create_left']), right: Number(row!['create_right']) },
  };
}

const LINKED_PAIRS_SQL = `
  SELECT count(*) AS linked FROM record_links
  WHERE sync_id = $1 AND table_pair = $2 AND left_remote_id IS NOT NULL AND right_remote_id IS NOT NULL`;

/** How many links of the pair join a record on each side. */
export async function countLinkedPairs(db: Db, syncId: string, pair: number): Promise<number> {
  const [row]: { linked: string }[] = await db.query(LINKED_PAIRS_SQL, [syncId, pair]);
  return Number(row!.linked);
}

/** The linkable pairs that are not one link yet (`a_id`: the left record's link, `b_id`: the right one's). */
const OPEN_PAIRS_SQL = `WITH ${KEY_PAIRS_SQL} SELECT * FROM j WHERE linkable AND a_id IS DISTINCT FROM b_id`;

const RESOLVE_MATCHED_ISSUES_SQL = `
  UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND type = 'record' AND resolved_at IS NULL
    AND record_id IN (SELECT a_id FROM (${OPEN_PAIRS_SQL}) o UNION SELECT b_id FROM (${OPEN_PAIRS_SQL}) o)`;

const DROP_RIGHT_LINKS_SQL = `
  DELETE FROM record_links WHERE id IN (SELECT b_id FROM (${OPEN_PAIRS_SQL}) o WHERE a_id IS NOT NULL)`;

const CLEARED = `
  left_shadow = NULL, right_shadow = NULL, left_hash = NULL, right_hash = NULL, create_pending = NULL,
  updated_at = now()`;

const JOIN_LEFT_LINKS_SQL = `
  UPDATE record_links x SET right_remote_id = o.r, ${CLEARED} FROM (${OPEN_PAIRS_SQL}) o WHERE x.id = o.a_id`;

const JOIN_RIGHT_LINKS_SQL = `
  UPDATE record_links x SET left_remote_id = o.l, ${CLEARED} FROM (${OPEN_PAIRS_SQL}) o WHERE x.id = o.b_id
     AND o.a_id IS NULL`;

const LINK_NEW_PAIRS_SQL = `
  WITH ${KEY_PAIRS_SQL}
  INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id)
  SELECT 'rec_' || substr(md5(gen_random_uuid()::text), 1, 20), $1, $2, gen_random_uuid(), j.l, j.r FROM j
  WHERE j.a_id IS NULL AND j.b_id IS NULL
  ON CONFLICT DO NOTHING`;

/**
 * The link stage: every linkable pair ends up as one link. A record linked only to its own side (an earlier
 * start's create that failed) keeps its link and gains its match; two such links of one pair become one.
 * Their shadows are cleared, so the pair is merged as first seen (the preferred side wins differences), as a
 * new match is; their record issues close (the run raises again whatever still fails).
 */
export async function linkMatches(tx: Db, syncId: string, pair: number): Promise<void> {
  const params = [syncId, pair];
  if (await hasLinks(tx, syncId, pair)) {
    await tx.query(RESOLVE_MATCHED_ISSUES_SQL, params);
    await tx.query(DROP_RIGHT_LINKS_SQL, params);
    await tx.query(JOIN_LEFT_LINKS_SQL, params);
    await tx.query(JOIN_RIGHT_LINKS_SQL, params);
  }
  await tx.query(LINK_NEW_PAIRS_SQL, params);
}

/**
 * The records of a page the run does not create: their match value is not unique, or their counterpart by
 * match value is linked to another record.
 */
function skippedSql(side: SideName): string {
  const own = side === 'left' ? 'left_remote_id' : 'right_remote_id';
  const other = side === 'left' ? 'right_remote_id' : 'left_remote_id';
  return `
    SELECT k.remote_id FROM initial_sync_keys k WHERE k.sync_id = $1 AND k.table_pair = $2 AND k.side = $3
       AND k.remote_id = ANY($4::text[])
      AND (k.match_key IN (SELECT match_key FROM initial_sync_keys WHERE sync_id = $1 AND table_pair = $2
         AND match_key IS NOT NULL GROUP BY side, match_key HAVING count(*) > 1)
        OR EXISTS (SELECT 1 FROM initial_sync_keys o JOIN record_links x ON x.sync_id = $1
           AND x.table_pair = $2 AND x.${other} = o.remote_id
                   WHERE o.sync_id = $1 AND o.table_pair = $2 AND o.side <> $3 AND o.match_key = k.match_key
                      AND x.${own} <> k.remote_id))`;
}

const SKIPPED_SQL: Record<SideName, string> = { left: skippedSql('left'), right: skippedSql('right') };

/** Those of these records of a side that the run skips (see `skippedSql`). */
export async function skippedRemoteIds(
  db: Db,
  input: { syncId: string; pair: number; side: SideName; remoteIds: string[] },
): Promise<string[]> {
  const rows: { remote_id: string }[] = await db.query(SKIPPED_SQL[input.side], [
    input.syncId,
    input.pair,
    input.side,
    input.remoteIds,
  ]);
  return rows.map((row) => row.remote_id);
}
