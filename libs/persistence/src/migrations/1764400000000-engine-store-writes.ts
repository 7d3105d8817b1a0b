import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cheaper writes of the engine's two largest tables, `record_links` and `operations` (an initial sync writes a
 * row of each per record):
 *
 * - Their `sync_id` foreign keys are replaced by a statement-level trigger on `syncs` that deletes a removed
 *   sync's links and operations (what `ON DELETE CASCADE` did). A foreign key checks every inserted row with a
 *   query of its own, which was about a sixth of the store's work per record. The engine writes these rows only
 *   inside its fenced transactions, which hold the sync's lease row (itself a foreign key to `syncs`), so a
 *   sync cannot disappear underneath them.
 * - `operations_remote` `(sync_id, record_remote_id)` is dropped: nothing reads operations by remote id (the
 *   records API finds records through the links' remote-id indexes).
 */
export class EngineStoreWrites1764400000000 implements MigrationInterface {
  name = 'EngineStoreWrites1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION delete_sync_rows() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM record_links WHERE sync_id IN (SELECT id FROM gone);
        DELETE FROM operations WHERE sync_id IN (SELECT id FROM gone);
        RETURN NULL;
      END $$`);
    await q.query(
      `CREATE TRIGGER syncs_delete_rows AFTER DELETE ON syncs REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION delete_sync_rows()`,
    );
    await q.query(`ALTER TABLE record_links DROP CONSTRAINT record_links_sync_id_fkey`);
    await q.query(`ALTER TABLE operations DROP CONSTRAINT operations_sync_id_fkey`);
    await q.query(`DROP INDEX operations_remote`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX operations_remote ON operations (sync_id, record_remote_id)`);
    await q.query(
      `ALTER TABLE operations ADD CONSTRAINT operations_sync_id_fkey FOREIGN KEY (sync_id) REFERENCES syncs(id) ON DELETE CASCADE`,
    );
    await q.query(
      `ALTER TABLE record_links ADD CONSTRAINT record_links_sync_id_fkey FOREIGN KEY (sync_id) REFERENCES syncs(id) ON DELETE CASCADE`,
    );
    await q.query(`DROP TRIGGER syncs_delete_rows ON syncs`);
    await q.query(`DROP FUNCTION delete_sync_rows()`);
  }
}
