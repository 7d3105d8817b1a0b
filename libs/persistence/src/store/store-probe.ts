/** The readiness probe's check of the service store. */
import type { EntityManager } from 'typeorm';

const PING_SQL = `SELECT 1`;

export class StoreProbe {
  /** `db`: the data source's manager. */
  constructor(private readonly db: EntityManager) {}

  /** Resolves when the store answers a query (rejects otherwise). */
  async ping(): Promise<void> {
    await this.db.query(PING_SQL);
  }
}
