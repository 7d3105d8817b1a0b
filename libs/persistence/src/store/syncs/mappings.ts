/** A sync's mappings document (`syncs.mappings`, `syncs.mappings_revision`) as the API saves it. */
import type { EntityManager } from 'typeorm';

// A compare-and-set on the revision; any change returns the sync to draft (never an active one).
const REPLACE_SQL = `
  UPDATE syncs
     SET mappings = $1, mappings_revision = mappings_revision + 1, status = 'draft', activating = false,
         updated_at = now()
   WHERE id = $2 AND mappings_revision = $3 AND status <> 'active' AND deleted_at IS NULL
  RETURNING mappings_revision`;

export class MappingStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  /**
   * Saves the stored table pairs when the revision is still `revision` and the sync is not active; returns
   * the new revision, or null when either changed.
   */
  async replace(syncId: string, tables: unknown[], revision: number): Promise<number | null> {
    const rows: { mappings_revision: number }[] = (
      await this.db.query(REPLACE_SQL, [JSON.stringify({ tables }), syncId, revision])
    )[0];
    return rows[0]?.mappings_revision ?? null;
  }
}
