/** Syncs and their sides (`syncs`, `sync_sides`) as the API lists, creates, edits and deletes them. */
import { type EntityManager, IsNull } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { type SideName, SyncEntity, SyncSideEntity } from '../../entities';

export interface SyncCountsRow {
  id: string;
  open_issues: number;
  pending_deletes: number;
}

export interface QueuedOperations {
  push: number;
  refetch: number;
  verify_delete: number;
}

/** Open issues and held deletes of each sync in `$1`, one row per sync. */
const COUNTS_SQL = `
  SELECT s.id,
         (SELECT count(*)::int FROM sync_issues i WHERE i.sync_id = s.id AND i.resolved_at IS NULL) AS open_issues,
         (SELECT count(*)::int FROM pending_deletes d
           WHERE d.sync_id = s.id AND d.state = 'awaiting_review') AS pending_deletes
    FROM unnest($1::text[]) AS s(id)`;

const RECORD_QUEUE_EXISTS_SQL = `
  SELECT to_regclass('record_queue') IS NOT NULL AS exists`;

const QUEUED_SQL = `
  SELECT type, count(*) AS count FROM record_queue WHERE sync_id = $1 GROUP BY type`;

export class SyncStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get syncs() {
    return this.db.getRepository(SyncEntity);
  }

  private get sideRows() {
    return this.db.getRepository(SyncSideEntity);
  }

  async find(syncId: string): Promise<SyncEntity | null> {
    return this.syncs.findOneBy({ id: syncId });
  }

  async get(syncId: string): Promise<SyncEntity> {
    return this.syncs.findOneByOrFail({ id: syncId });
  }

  /** The sync, locked for the rest of the transaction (so its sides change one connection at a time). */
  async findForUpdate(syncId: string): Promise<SyncEntity | null> {
    return this.syncs.findOne({ where: { id: syncId }, lock: { mode: 'pessimistic_write' } });
  }

  /** The sync's sides. */
  async sides(syncId: string): Promise<SyncSideEntity[]> {
    return this.sideRows.find({ where: { syncId } });
  }

  /** Open issues and held deletes per sync, in one query. */
  async counts(syncIds: string[]): Promise<SyncCountsRow[]> {
    return this.db.query(COUNTS_SQL, [syncIds]);
  }

  /** Record operations waiting in the per-record queue, by type (none while the engine's table is absent). */
  async queuedOperations(syncId: string): Promise<QueuedOperations> {
    const queued: QueuedOperations = { push: 0, refetch: 0, verify_delete: 0 };
    const [{ exists }] = await this.db.query(RECORD_QUEUE_EXISTS_SQL);
    if (!exists) return queued;
    const rows: { type: keyof QueuedOperations; count: string }[] = await this.db.query(QUEUED_SQL, [syncId]);
    for (const row of rows) if (row.type in queued) queued[row.type] = Number(row.count);
    return queued;
  }

  async insert(sync: QueryDeepPartialEntity<SyncEntity>): Promise<void> {
    await this.syncs.insert(sync);
  }

  async insertSide(side: QueryDeepPartialEntity<SyncSideEntity>): Promise<void> {
    await this.sideRows.insert(side);
  }

  async update(syncId: string, changes: QueryDeepPartialEntity<SyncEntity>): Promise<void> {
    await this.syncs.update({ id: syncId }, changes);
  }

  async updateSide(
    syncId: string,
    side: SideName,
    changes: QueryDeepPartialEntity<SyncSideEntity>,
  ): Promise<void> {
    await this.sideRows.update({ syncId, side }, changes);
  }

  /** Hides the sync at once and pauses it; false when it was already deleted. */
  async markDeleted(syncId: string): Promise<boolean> {
    const result = await this.syncs.update(
      { id: syncId, deletedAt: IsNull() },
      { deletedAt: new Date(), status: 'paused', activating: false, updatedAt: new Date() },
    );
    return !!result.affected;
  }
}
