/**
 * `record_queue`: work on single records a sync's runner carries out (`push`, `refetch`, `verify_delete`), in id
 * order per record, each due from its `not_before`.
 */
import type { SideName } from '@lockstep/domain';
import type { Db } from '../db';

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
  FROM jsonb_to_recordset($2::jsonb) AS v(record_id text, type text, side text, delay integer, attempts integer)
  WHERE NOT EXISTS (SELECT 1 FROM record_queue q WHERE q.record_id = v.record_id AND q.type = v.type AND q.side IS NOT DISTINCT FROM v.side)`;

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

const WAKE_DEFERRED_PUSHES_SQL = `
  UPDATE record_queue q SET not_before = now() FROM record_links l
  WHERE q.sync_id = $1 AND q.type = 'push' AND q.attempts > 0 AND q.not_before > now() AND l.id = q.record_id AND l.table_pair = ANY($2::int[])`;

/**
 * Deferred pushes (queued again with a backoff because a record they link to had no copy on the other side yet) of
 * records in these table pairs are due now: a record of the pair they link to was just created there.
 */
export async function wakeDeferredPushes(db: Db, syncId: string, pairs: number[]): Promise<void> {
  await db.query(WAKE_DEFERRED_PUSHES_SQL, [syncId, pairs]);
}
