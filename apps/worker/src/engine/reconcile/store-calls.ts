/**
 * The store statements of reconcile that are not in `../store`: the links of relation targets, removing the
 * queue entries a call carried out, and closing pending deletes of records that reappeared.
 */
import type { SideName } from '@lockstep/domain';
import { type Db, returnedRows } from '../store';

/**
 * Links of the records `ids` on `side` of table pair `pairIndex`: their remote id there and on the other
 * side.
 */
export async function loadRelationTargets(
  db: Db,
  syncId: string,
  pairIndex: number,
  side: SideName,
  ids: string[],
): Promise<{ source: string; target: string | null }[]> {
  const column = side === 'left' ? 'left_remote_id' : 'right_remote_id';
  const target = side === 'left' ? 'right_remote_id' : 'left_remote_id';
  return db.query(
    `SELECT ${column} AS source, ${target} AS target FROM record_links WHERE sync_id = $1 AND table_pair = $2 AND ${column} = ANY($3::text[])`,
    [syncId, pairIndex, ids],
  );
}

/** Removes the queue entries a call carried out. */
export async function deleteQueueEntries(tx: Db, ids: string[]): Promise<void> {
  await tx.query(`DELETE FROM record_queue WHERE id = ANY($1::bigint[])`, [ids]);
}

/** Pending deletes of records that reappeared before review close by themselves (event `closed`). */
export async function closeReappeared(tx: Db, syncId: string, recordIds: string[]): Promise<void> {
  if (recordIds.length === 0) return;
  const closed = returnedRows<{ id: string; record_id: string }>(
    await tx.query(
      `UPDATE pending_deletes SET state = 'closed', decided_at = now() WHERE sync_id = $1 AND record_id = ANY($2::text[]) AND state = 'awaiting_review' RETURNING id, record_id`,
      [syncId, recordIds],
    ),
  );
  for (const row of closed)
    await tx.query(
      `INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor) VALUES ($1, $2, $3, 'closed', 'engine')`,
      [row.id, syncId, row.record_id],
    );
}
