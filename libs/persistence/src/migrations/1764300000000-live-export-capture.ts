import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live export change capture (`live_export_captures`): one row per exported source table whose source database
 * carries the export's change capture (triggers writing changed keys to a log in the source database). The
 * row says which installation the run relied on (`token`), where its next read starts (`checkpoint`), the plan
 * fingerprint the destination rows were written with (`salt`), and when everything was last compared in full.
 *
 * When the export is deleted (or a table leaves its plan), the row is `released`: it then carries the source
 * connector, base and sealed credentials (AES-256-GCM, bound to the export's source as before, so only this
 * service can open them) until the worker has removed the capture from the source database, and is deleted.
 */
export class LiveExportCapture1764300000000 implements MigrationInterface {
  name = 'LiveExportCapture1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE live_export_captures (
      live_export_id text NOT NULL,
      account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      source_table text NOT NULL,
      destination_table text NOT NULL,
      token text NOT NULL,
      checkpoint text NOT NULL,
      salt text NOT NULL,
      checkpoint_at timestamptz NOT NULL,
      full_compare_at timestamptz NOT NULL,
      released_at timestamptz,
      connector text,
      base text,
      credentials bytea,
      PRIMARY KEY (live_export_id, source_table)
    )`);
    await q.query(
      `CREATE INDEX live_export_captures_released ON live_export_captures (released_at) WHERE released_at IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE live_export_captures`);
  }
}
