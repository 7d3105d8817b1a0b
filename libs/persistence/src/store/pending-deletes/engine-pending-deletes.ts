/**
 * `pending_deletes` as the engine keeps it: deletes held for a person's review (with their `detected` history
 * entry), and the decisions (approve, restore) it carries out.
 */
import type { SideName } from '@lockstep/domain';
import { type Db, returnedRows } from '../db';

const IGNORED_SQL = `
  SELECT record_id FROM pending_deletes WHERE sync_id = $1 AND record_id = ANY($2::text[]) AND state = 'ignored'`;

/** Those of these records whose held delete a person chose to ignore. */
export async function ignoredDeleteRecordIds(db: Db, syncId: string, recordIds: string[]): Promise<string[]> {
  const rows: { record_id: string }[] = await db.query(IGNORED_SQL, [syncId, recordIds]);
  return rows.map((row) => row.record_id);
}

const HOLD_SQL = `
  INSERT INTO pending_deletes (id, sync_id, record_id, table_pair, missing_side, delete_from_side) VALUES ($1,
     $2, $3, $4, $5, $6)
  ON CONFLICT (sync_id, record_id) WHERE state IN ('awaiting_review', 'ignored') DO NOTHING RETURNING id`;

const DETECTED_SQL = `
  INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor) VALUES ($1, $2, $3,
     'detected', 'engine')`;

/**
 * A delete held for review: the copy on `missingSide` is gone, the one on `deleteFromSide` awaits a person's
 * decision. A record already held (or ignored) keeps its pending delete, and no second `detected` entry is made.
 */
export async function holdDelete(
  db: Db,
  hold: {
    id: string;
    syncId: string;
    recordId: string;
    pair: number;
    missingSide: SideName;
    deleteFromSide: SideName;
  },
): Promise<void> {
  const inserted: { id: string }[] = await db.query(HOLD_SQL, [
    hold.id,
    hold.syncId,
    hold.recordId,
    hold.pair,
    hold.missingSide,
    hold.deleteFromSide,
  ]);
  if (inserted.length > 0) await db.query(DETECTED_SQL, [hold.id, hold.syncId, hold.recordId]);
}

export interface DeleteDecision {
  id: string;
  record_id: string;
  table_pair: number;
  missing_side: SideName;
  delete_from_side: SideName;
  requested_action: 'approve' | 'restore';
}

const DECISIONS_SQL = `
  SELECT id, record_id, table_pair, missing_side, delete_from_side, requested_action FROM pending_deletes
  WHERE sync_id = $1 AND requested_action IS NOT NULL AND applied_at IS NULL ORDER BY decided_at LIMIT 200`;

/** Decisions a person made that the engine has not applied yet, oldest first (at most 200). */
export async function unappliedDeleteDecisions(db: Db, syncId: string): Promise<DeleteDecision[]> {
  return db.query(DECISIONS_SQL, [syncId]);
}

const APPLIED_SQL = `UPDATE pending_deletes SET applied_at = now() WHERE id = $1`;

/** The decision was carried out (or is moot). */
export async function markDecisionApplied(db: Db, pendingDeleteId: string): Promise<void> {
  await db.query(APPLIED_SQL, [pendingDeleteId]);
}

const CLOSE_REAPPEARED_SQL = `
  UPDATE pending_deletes
     SET state = 'closed', decided_at = now()
   WHERE sync_id = $1 AND record_id = ANY($2::text[]) AND state = 'awaiting_review'
  RETURNING id, record_id`;

const CLOSED_EVENT_SQL = `
  INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor)
  VALUES ($1, $2, $3, 'closed', 'engine')`;

/** Held deletes of records that reappeared before review close by themselves (event `closed`). */
export async function closeReappeared(db: Db, syncId: string, recordIds: string[]): Promise<void> {
  if (recordIds.length === 0) return;
  const closed = returnedRows<{ id: string; record_id: string }>(
    await db.query(CLOSE_REAPPEARED_SQL, [syncId, recordIds]),
  );
  for (const row of closed) await db.query(CLOSED_EVENT_SQL, [row.id, syncId, row.record_id]);
}
