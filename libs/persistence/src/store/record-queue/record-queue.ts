/**
 * `record_queue`: work on single records a sync's runner carries out (`push`, `refetch`, `verify_delete`), in id
 * order per record, each due from its `not_before`.
 */
import type { SideName } from '@lockstep/domain';
import { type Db, returnedRows, type TransactionalDb } from '../db';

export type QueueEntryType = 'push' | 'refetch' | 'verify_delete';

export interface QueueEntry {
  recordId: string;
  type: QueueEntryType;
  side: SideName | null;
  delayMs?: number;
  attempts?: number;
}

/** One waiting entry of a kind per record and side is enough (entries being carried out are removed first). */
const ENQUEUE_SQL = `
  INSERT INTO record_queue (sync_id, record_id, type, side, not_before, attempts)
  SELECT $1, v.record_id, v.type, v.side, now() + make_interval(secs => v.delay / 1000.0), v.attempts
  FROM jsonb_to_recordset($2::jsonb) AS v(record_id text, type text, side text, delay integer,
     attempts integer)
  WHERE NOT EXISTS (SELECT 1 FROM record_queue q WHERE q.record_id = v.record_id AND q.type = v.type
     AND q.side IS NOT DISTINCT FROM v.side)`;

export async function enqueue(db: Db, syncId: string, entries: QueueEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const rows = entries.map((entry) => ({
    record_id: entry.recordId,
    type: entry.type,
    side: entry.side,
    delay: entry.delayMs ?? 0,
    attempts: entry.attempts ?? 0,
  }));
  await db.query(ENQUEUE_SQL, [syncId, JSON.stringify(rows)]);
}

// One waiting push per record and side is enough: behind what is already queued.
const QUEUE_PUSH_SQL = `
  INSERT INTO record_queue (sync_id, record_id, type, side)
  SELECT l.sync_id, l.id, 'push', $3 FROM record_links l
   WHERE l.id = $2 AND l.sync_id = $1
     AND NOT EXISTS (SELECT 1 FROM record_queue q
                      WHERE q.record_id = l.id AND q.type = 'push' AND q.side IS NOT DISTINCT FROM $3
                        AND q.attempts = 0)
  RETURNING id::text AS id`;

/**
 * Queues a push of one linked record of the sync (a person retried its record issue); how many entries were
 * added (0 or 1).
 */
export async function queueRecordPush(
  db: Db,
  syncId: string,
  recordId: string,
  side: SideName | null,
): Promise<number> {
  return returnedRows<{ id: string }>(await db.query(QUEUE_PUSH_SQL, [syncId, recordId, side])).length;
}

const WAKE_DEFERRED_PUSHES_SQL = `
  UPDATE record_queue q SET not_before = now() FROM record_links l
  WHERE q.sync_id = $1 AND q.type = 'push' AND q.attempts > 0 AND q.not_before > now() AND l.id = q.record_id
     AND l.table_pair = ANY($2::int[])`;

/**
 * Deferred pushes (queued again with a backoff because a record they link to had no copy on the other side yet) of
 * records in these table pairs are due now: a record of the pair they link to was just created there.
 */
export async function wakeDeferredPushes(db: Db, syncId: string, pairs: number[]): Promise<void> {
  await db.query(WAKE_DEFERRED_PUSHES_SQL, [syncId, pairs]);
}

export interface QueueHead {
  id: string;
  record_id: string;
  type: QueueEntryType;
  side: SideName | null;
  attempts: number;
}

const DUE_HEADS_SQL = `
  SELECT id, record_id, type, side, attempts FROM (
    SELECT DISTINCT ON (q.record_id) q.id::text AS id, q.record_id, q.type, q.side, q.attempts, q.not_before
    FROM record_queue q WHERE q.sync_id = $1 ORDER BY q.record_id, q.id) head
  WHERE not_before <= now() LIMIT $2`;

/** The head of each record's queue, when it is due (so entries of one record run in order), at most `limit`. */
export async function dueQueueHeads(db: Db, syncId: string, limit: number): Promise<QueueHead[]> {
  return db.query(DUE_HEADS_SQL, [syncId, limit]);
}

const REMOVE_ENTRIES_SQL = `DELETE FROM record_queue WHERE id = ANY($1::bigint[])`;

/** Entries carried out (or moot). */
export async function removeQueueEntries(db: Db, ids: string[]): Promise<void> {
  await db.query(REMOVE_ENTRIES_SQL, [ids]);
}

const NEXT_DUE_SQL = `
  SELECT extract(epoch FROM min(not_before) - now()) * 1000 AS wait FROM record_queue WHERE sync_id = $1`;

/** Milliseconds until the sync's next queue entry is due (negative when one is due), or null for an empty queue. */
export async function untilNextQueueEntry(db: Db, syncId: string): Promise<number | null> {
  const rows: { wait: string | null }[] = await db.query(NEXT_DUE_SQL, [syncId]);
  const wait = rows[0]?.wait;
  return wait === null || wait === undefined ? null : Number(wait);
}

const DUE_WORK_SQL = `
  SELECT DISTINCT sync_id FROM record_queue WHERE sync_id = ANY($1::text[]) AND not_before <= now()
     AND attempts = 0
  UNION SELECT DISTINCT sync_id FROM pending_deletes WHERE sync_id = ANY($1::text[])
     AND requested_action IS NOT NULL AND applied_at IS NULL`;

/**
 * Those of these syncs with work waiting: a due queue entry not yet tried, or a person's pending-delete decision
 * not applied yet.
 */
export async function syncsWithDueWork(db: Db, syncIds: string[]): Promise<string[]> {
  const rows: { sync_id: string }[] = await db.query(DUE_WORK_SQL, [syncIds]);
  return rows.map((row) => row.sync_id);
}

const REFETCH_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext('record_refetch:' || $1))`;

const QUEUE_REFETCH_SQL = `
  INSERT INTO record_queue (sync_id, record_id, type, side)
  SELECT $1, $2, 'refetch', $3
  WHERE NOT EXISTS (
    SELECT 1 FROM record_queue q WHERE q.record_id = $2 AND q.type = 'refetch' AND q.side = $3
       AND q.attempts = 0
      AND NOT EXISTS (SELECT 1 FROM record_queue later WHERE later.record_id = $2 AND later.id > q.id
         AND later.type <> 'refetch'))`;

/**
 * Queues a refetch of each side behind everything already queued for the record (the worker runs a
 * record's entries in id order). A refetch of that side already waiting at the end of the queue is enough,
 * so repeating the request adds nothing.
 */
export async function queueRefetch(
  db: TransactionalDb,
  syncId: string,
  recordId: string,
  sides: SideName[],
): Promise<void> {
  await db.transaction(async (m) => {
    // One request at a time per record, so two concurrent refetches cannot both see "nothing at the end".
    await m.query(REFETCH_LOCK_SQL, [recordId]);
    for (const side of sides) await m.query(QUEUE_REFETCH_SQL, [syncId, recordId, side]);
  });
}

/** Record operations waiting in a sync's queue, by type. */
export interface QueuedOperations {
  push: number;
  refetch: number;
  verify_delete: number;
}

const RECORD_QUEUE_EXISTS_SQL = `
  SELECT to_regclass('record_queue') IS NOT NULL AS exists`;

const QUEUED_SQL = `
  SELECT type, count(*) AS count FROM record_queue WHERE sync_id = $1 GROUP BY type`;

/** Record operations waiting in the sync's queue, by type (none while the engine's table is absent). */
export async function queuedOperations(db: Db, syncId: string): Promise<QueuedOperations> {
  const queued: QueuedOperations = { push: 0, refetch: 0, verify_delete: 0 };
  const [{ exists }] = await db.query(RECORD_QUEUE_EXISTS_SQL);
  if (!exists) return queued;
  const rows: { type: keyof QueuedOperations; count: string }[] = await db.query(QUEUED_SQL, [syncId]);
  for (const row of rows) if (row.type in queued) queued[row.type] = Number(row.count);
  return queued;
}
