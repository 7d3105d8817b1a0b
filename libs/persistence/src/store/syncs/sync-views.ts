/**
 * What the API shows of a sync (`GET /sync/syncs`, `GET /sync/syncs/{id}`) in one statement: the sync's own
 * columns, its sides and its open-issue and held-delete counts. The hot reads of the API go through here, so
 * they select only the columns a view shows (not the mappings document, the credentials or the checkpoints)
 * and cost one round trip to the store.
 */
import type { SyncEntity } from '../../entities/sync.entity';
import type { SyncSideEntity } from '../../entities/sync-side.entity';
import type { Db } from '../db';
import { preparedRows } from '../prepared';

export type SyncViewSync = Pick<
  SyncEntity,
  | 'id'
  | 'name'
  | 'status'
  | 'activating'
  | 'deleteApproval'
  | 'initialSyncPhase'
  | 'mappingsRevision'
  | 'createdAt'
  | 'updatedAt'
>;

export type SyncViewSide = Pick<
  SyncSideEntity,
  | 'syncId'
  | 'side'
  | 'connector'
  | 'authMethod'
  | 'baseId'
  | 'baseName'
  | 'authStatus'
  | 'authError'
  | 'connectedAt'
>;

export interface SyncView {
  sync: SyncViewSync;
  sides: { left: SyncViewSide | null; right: SyncViewSide | null };
  openIssues: number;
  pendingDeletes: number;
}

export interface SyncViewFilter {
  accountId: string;
  /** The one sync of a one-sync key (or the sync asked for by id); null for every sync of the account. */
  syncId: string | null;
  /** Keyset position: only syncs created before this one (newest first). */
  before?: { createdAt: string; id: string };
  limit: number;
}

const SYNC_VIEWS_SQL = `
  SELECT s.id, s.name, s.status, s.activating, s.delete_approval, s.initial_sync_phase, s.mappings_revision,
         s.created_at, s.updated_at,
         (SELECT count(*)::int FROM sync_issues i
           WHERE i.sync_id = s.id AND i.resolved_at IS NULL) AS open_issues,
         (SELECT count(*)::int FROM pending_deletes d
           WHERE d.sync_id = s.id AND d.state = 'awaiting_review') AS pending_deletes,
         (SELECT json_agg(json_build_object(
                   'side', x.side, 'connector', x.connector, 'auth_method', x.auth_method,
                   'base_id', x.base_id, 'base_name', x.base_name, 'auth_status', x.auth_status,
                   'auth_error', x.auth_error, 'connected_at', x.connected_at))
            FROM sync_sides x
           WHERE x.sync_id = s.id) AS sides
    FROM syncs s
   WHERE s.account_id = $1
     AND s.deleted_at IS NULL
     AND ($2::text IS NULL OR s.id = $2)
     AND ($3::timestamptz IS NULL OR (s.created_at, s.id) < ($3::timestamptz, $4::text))
   ORDER BY s.created_at DESC, s.id DESC
   LIMIT $5`;

const SYNC_VISIBLE_SQL = `
  SELECT 1
    FROM syncs
   WHERE id = $1
     AND account_id = $2
     AND deleted_at IS NULL`;

interface SideJson {
  side: 'left' | 'right';
  connector: string;
  auth_method: string;
  base_id: string | null;
  base_name: string | null;
  auth_status: string;
  auth_error: string | null;
  connected_at: string | null;
}

interface SyncViewRow {
  id: string;
  name: string;
  status: string;
  activating: boolean;
  delete_approval: string;
  initial_sync_phase: string;
  mappings_revision: number;
  created_at: Date;
  updated_at: Date;
  open_issues: number;
  pending_deletes: number;
  sides: SideJson[] | null;
}

/** A page of the account's syncs, newest first (one more than `limit` when another page follows). */
export async function listSyncViews(db: Db, filter: SyncViewFilter): Promise<SyncView[]> {
  const rows = await preparedRows<SyncViewRow>(db, SYNC_VIEWS_SQL, [
    filter.accountId,
    filter.syncId,
    filter.before?.createdAt ?? null,
    filter.before?.id ?? null,
    filter.limit,
  ]);
  return rows.map(toSyncView);
}

/**
 * One sync of the account as its view, or null when it does not exist, is deleted or is another account's.
 */
export async function findSyncView(db: Db, accountId: string, syncId: string): Promise<SyncView | null> {
  const [view] = await listSyncViews(db, { accountId, syncId, limit: 1 });
  return view ?? null;
}

/** Whether the sync exists, is not deleted and belongs to the account (one indexed lookup, nothing read). */
export async function isSyncVisible(db: Db, accountId: string, syncId: string): Promise<boolean> {
  const rows: unknown[] = await db.query(SYNC_VISIBLE_SQL, [syncId, accountId]);
  return rows.length > 0;
}

function toSyncView(row: SyncViewRow): SyncView {
  const sides: SyncView['sides'] = { left: null, right: null };
  for (const side of row.sides ?? []) sides[side.side] = toSideView(row.id, side);
  return {
    sync: {
      id: row.id,
      name: row.name,
      status: row.status as SyncEntity['status'],
      activating: row.activating,
      deleteApproval: row.delete_approval as SyncEntity['deleteApproval'],
      initialSyncPhase: row.initial_sync_phase as SyncEntity['initialSyncPhase'],
      mappingsRevision: row.mappings_revision,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    },
    sides,
    openIssues: row.open_issues,
    pendingDeletes: row.pending_deletes,
  };
}

/** `json_build_object` gives timestamps as text: back to `Date` as the entity has them. */
function toSideView(syncId: string, side: SideJson): SyncViewSide {
  return {
    syncId,
    side: side.side,
    connector: side.connector,
    authMethod: side.auth_method as SyncSideEntity['authMethod'],
    baseId: side.base_id,
    baseName: side.base_name,
    authStatus: side.auth_status as SyncSideEntity['authStatus'],
    authError: side.auth_error,
    connectedAt: side.connected_at === null ? null : new Date(side.connected_at),
  };
}
