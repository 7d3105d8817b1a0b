/** Live exports (`live_exports`): the export, its sides, its mappings document and its saved plan. */
import { type EntityManager, In } from 'typeorm';
import { LiveExportEntity } from '../../entities';
import type { PageKey, PagePosition } from '../paging';

export type LiveExportChanges = Partial<Omit<LiveExportEntity, 'plan'>>;

const PAGE_SQL = (after: boolean) => `
  SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key
    FROM live_exports
   WHERE account_id = $1 ${after ? 'AND (created_at, id) < ($3::timestamptz, $4)' : ''}
   ORDER BY created_at DESC, id DESC
   LIMIT $2`;

// An older concurrent save never overwrites a newer one.
const RECORD_PLAN_SQL = `
  UPDATE live_exports SET plan = $2, saved_version = $3, saved_at = now(), updated_at = now()
   WHERE id = $1 AND (saved_version IS NULL OR saved_version <= $3)`;

export class LiveExportStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get exports() {
    return this.db.getRepository(LiveExportEntity);
  }

  async insert(entity: Omit<LiveExportEntity, 'plan' | 'createdAt' | 'updatedAt'>): Promise<void> {
    await this.exports.insert(entity);
  }

  async find(id: string): Promise<LiveExportEntity | null> {
    return this.exports.findOneBy({ id });
  }

  async get(id: string): Promise<LiveExportEntity> {
    return this.exports.findOneByOrFail({ id });
  }

  async findOwned(id: string, accountId: string): Promise<LiveExportEntity | null> {
    return this.exports.findOneBy({ id, accountId });
  }

  async findByIds(ids: string[]): Promise<LiveExportEntity[]> {
    return this.exports.findBy({ id: In(ids) });
  }

  /** One page of the account's export ids, newest first (`limit` rows after `position`). */
  async page(accountId: string, limit: number, position: PagePosition | null): Promise<PageKey[]> {
    return this.db.query(PAGE_SQL(position !== null), [
      accountId,
      limit,
      ...(position ? [position.createdAt, position.id] : []),
    ]);
  }

  /** Applies a PATCH; `bumpVersion` counts it as an unsaved change of the mappings. */
  async update(id: string, set: LiveExportChanges, bumpVersion: boolean): Promise<void> {
    await this.exports
      .createQueryBuilder()
      .update()
      .set({
        ...set,
        updatedAt: () => 'now()',
        ...(bumpVersion ? { mappingsVersion: () => 'mappings_version + 1' } : {}),
      })
      .where('id = :id', { id })
      .execute();
  }

  /** Compare-and-set of the mappings document on its version; false when the version moved. */
  async replaceMappings(
    id: string,
    expected: number,
    mappings: LiveExportEntity['mappings'],
  ): Promise<boolean> {
    const result = await this.db
      .createQueryBuilder()
      .update(LiveExportEntity)
      .set({ mappings, mappingsVersion: () => 'mappings_version + 1', updatedAt: () => 'now()' })
      .where('id = :id AND mappings_version = :expected', { id, expected })
      .execute();
    return !!result.affected;
  }

  /** Records a save's plan for the mappings `version` it was built from. */
  async recordPlan(id: string, plan: NonNullable<LiveExportEntity['plan']>, version: number): Promise<void> {
    await this.db.query(RECORD_PLAN_SQL, [id, JSON.stringify(plan), version]);
  }

  async delete(id: string): Promise<void> {
    await this.exports.delete({ id });
  }
}
