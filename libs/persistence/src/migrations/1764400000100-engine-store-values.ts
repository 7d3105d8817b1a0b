import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How the engine's per-record rows are stored and found.
 *
 * The values the engine stores per record, the links' shadows and the operations' `field_changes` and
 * `details`, become `json` instead of `jsonb`. Nothing queries inside them (they are written whole and read
 * whole by the worker and the API), so the binary form only cost time: `jsonb` parses and converts every value
 * on the way in and prints it again on the way out, while `json` checks the text and keeps it. An initial sync
 * writes two shadows and one `field_changes` per record. The tables are rewritten once by this migration.
 *
 * `record_links_unplaced`: links lacking a remote id on a side (a create interrupted before its remote id was
 * stored, a record on one side only), by service id. The engine looks up the service ids that rows carry
 * (and that this sync did not derive) here instead of in the full `record_links_service` (see `loadLinks`).
 */
export class EngineStoreValues1764400000100 implements MigrationInterface {
  name = 'EngineStoreValues1764400000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE record_links ALTER left_shadow TYPE json USING left_shadow::json, ALTER right_shadow TYPE json USING right_shadow::json`,
    );
    await q.query(`
      ALTER TABLE operations ALTER field_changes DROP DEFAULT, ALTER field_changes TYPE json USING field_changes::json,
        ALTER field_changes SET DEFAULT '[]'::json, ALTER details TYPE json USING details::json`);
    await q.query(
      `CREATE INDEX record_links_unplaced ON record_links (sync_id, table_pair, service_id) WHERE left_remote_id IS NULL OR right_remote_id IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX record_links_unplaced`);
    await q.query(`
      ALTER TABLE operations ALTER field_changes DROP DEFAULT, ALTER field_changes TYPE jsonb USING field_changes::jsonb,
        ALTER field_changes SET DEFAULT '[]'::jsonb, ALTER details TYPE jsonb USING details::jsonb`);
    await q.query(
      `ALTER TABLE record_links ALTER left_shadow TYPE jsonb USING left_shadow::jsonb, ALTER right_shadow TYPE jsonb USING right_shadow::jsonb`,
    );
  }
}
