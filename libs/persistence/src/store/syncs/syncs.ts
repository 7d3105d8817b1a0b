/** Syncs and their sides (`syncs`, `sync_sides`) as the API lists, creates, edits and deletes them. */
import { type EntityManager, IsNull } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { type SideName, SyncEntity, SyncSideEntity } from '../../entities';

export interface SyncCountsRow {
  id: string;
  open_issues: number;
  pending_deletes: number;
}

/** Open issues and held deletes of each sync in `$1`, one row per sync. */
const COUNTS_SQL = `
  SELECT s.id,
         (SELECT count(*)::int FROM sync_issues i WHERE i.sync_id = s.id AND i.resolved_at IS NULL) AS open_issues,
         (SELECT count(*)::int FROM pending_deletes d
           WHERE d.sync_id = s.id AND d.state = 'awaiting_review') AS pending_deletes
    FROM unnest($1::text[]) AS s(id)`;

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
