/**
 * `sync_sides` as the engine keeps it: each side's change checkpoints (per table, `checkpoint.tables`), how its
 * changes are detected and its polling state, and the API's retry of a rejected credential.
 */
import type { SideName } from '@lockstep/domain';
import type { Db } from '../db';

/** Per side: the change checkpoint of each of its tables, by remote table id. */
export type TableCheckpoints = Record<SideName, Record<string, string>>;

const SIDES: SideName[] = ['left', 'right'];

const LOAD_CHECKPOINTS_SQL = `SELECT side, checkpoint FROM sync_sides WHERE sync_id = $1`;

export async function loadTableCheckpoints(db: Db, syncId: string): Promise<TableCheckpoints> {
  const rows: { side: SideName; checkpoint: { tables?: Record<string, string> } | null }[] = await db.query(
    LOAD_CHECKPOINTS_SQL,
    [syncId],
  );
  const result: TableCheckpoints = { left: {}, right: {} };
  for (const row of rows) result[row.side] = { ...(row.checkpoint?.tables ?? {}) };
  return result;
}

const SAVE_CHECKPOINTS_SQL = `
  UPDATE sync_sides SET checkpoint = jsonb_set(coalesce(checkpoint, '{}'::jsonb), '{tables}', $3::jsonb),
     last_polled_at = now(), polling_state = 'idle'
  WHERE sync_id = $1 AND side = $2`;

/** Both sides' table checkpoints after a poll (the side is idle again). */
export async function saveTableCheckpoints(
  db: Db,
  syncId: string,
  checkpoints: TableCheckpoints,
): Promise<void> {
  for (const side of SIDES)
    await db.query(SAVE_CHECKPOINTS_SQL, [syncId, side, JSON.stringify(checkpoints[side])]);
}

const START_CHANGE_FEED_SQL = `
  UPDATE sync_sides SET checkpoint = $3, change_detection = 'change_feed', updated_at = now()
     WHERE sync_id = $1 AND side = $2`;

/** The side's changes are read from its change feed from these checkpoints on (taken before an initial sync). */
export async function startChangeFeed(
  db: Db,
  syncId: string,
  side: SideName,
  tables: Record<string, string>,
): Promise<void> {
  await db.query(START_CHANGE_FEED_SQL, [syncId, side, JSON.stringify({ tables })]);
}

const CHANGE_DETECTED_SQL = `UPDATE sync_sides SET last_change_detected_at = now() WHERE sync_id = $1`;

export async function noteChangeDetected(db: Db, syncId: string): Promise<void> {
  await db.query(CHANGE_DETECTED_SQL, [syncId]);
}

const FULL_SCAN_SQL = `UPDATE sync_sides SET polling_state = 'full_scan' WHERE sync_id = $1`;
const IDLE_SQL = `UPDATE sync_sides SET polling_state = 'idle' WHERE sync_id = $1`;

/** A full scan of the sync's tables began. */
export async function markFullScan(db: Db, syncId: string): Promise<void> {
  await db.query(FULL_SCAN_SQL, [syncId]);
}

/** The full scan ended. */
export async function markPollingIdle(db: Db, syncId: string): Promise<void> {
  await db.query(IDLE_SQL, [syncId]);
}

const RETRY_AUTH_SQL = `
  UPDATE sync_sides SET auth_status = 'ok', auth_error = NULL, updated_at = now()
   WHERE sync_id = $1 AND side = $2 AND auth_status = 'error'`;

/** Lets the engine try a rejected credential again (the side's `auth_status` back to `ok`). */
export async function retryAuthentication(db: Db, syncId: string, side: SideName): Promise<void> {
  await db.query(RETRY_AUTH_SQL, [syncId, side]);
}
