/**
 * What the engine reads of a sync to plan and check its work: the schema cache of its tables and its state.
 */
import type { TypeClass } from '@lockstep/domain';
import type { Db } from '../db';

export interface PlanTableRow {
  id: string;
  remote_id: string;
  name: string;
  read_only: boolean;
}

export interface PlanFieldRow {
  id: string;
  remote_id: string;
  name: string;
  type_class: TypeClass;
  type_details: Record<string, unknown> | null;
  read: boolean;
  write: boolean;
  is_primary: boolean;
  table_id: string;
}

const TABLES_SQL = `SELECT id, remote_id, name, read_only FROM sync_tables WHERE sync_id = $1`;

const FIELDS_SQL = `
  SELECT f.id, f.remote_id, f.name, f.type_class, f.type_details, f.read, f.write, f.is_primary, f.table_id
  FROM sync_fields f JOIN sync_tables t ON t.id = f.table_id WHERE t.sync_id = $1`;

/** The sync's tables (both sides) and their fields, as the schema cache holds them. */
export async function planSchema(
  db: Db,
  syncId: string,
): Promise<{ tables: PlanTableRow[]; fields: PlanFieldRow[] }> {
  const tables: PlanTableRow[] = await db.query(TABLES_SQL, [syncId]);
  const fields: PlanFieldRow[] = await db.query(FIELDS_SQL, [syncId]);
  return { tables, fields };
}

export interface SyncStateRow {
  status: string;
  mappings_revision: number;
  deleted_at: Date | null;
}

const STATE_SQL = `SELECT status, mappings_revision, deleted_at FROM syncs WHERE id = $1`;

/** What decides whether a runner may still write: status, mappings revision, deletion; null when gone. */
export async function syncState(db: Db, syncId: string): Promise<SyncStateRow | null> {
  const rows: SyncStateRow[] = await db.query(STATE_SQL, [syncId]);
  return rows[0] ?? null;
}

const ACTIVE_SQL = `
  SELECT id FROM syncs WHERE id = ANY($1::text[]) AND status = 'active' AND deleted_at IS NULL`;

/** Those of these syncs that are active and not deleted. */
export async function activeSyncIds(db: Db, syncIds: string[]): Promise<string[]> {
  const rows: { id: string }[] = await db.query(ACTIVE_SQL, [syncIds]);
  return rows.map((row) => row.id);
}
