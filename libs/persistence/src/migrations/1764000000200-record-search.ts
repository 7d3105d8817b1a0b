import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes of the records API (spec 4.6): display-text search within a sync and a record's open issues.
 *
 * - `record_links_name`: `(sync_id, lower(name) COLLATE "C")`. The "C" collation compares bytes, so a
 *   case-insensitive prefix (`lower(name) COLLATE "C" LIKE 'ada%'`) is an index range scan, and the same index
 *   walks a sync's names in order for the substring pass (which filters while it walks and stops at the cap).
 *   A plain btree, no extension needed (pg_trgm is not assumed to be installable on every PostgreSQL).
 * - Exact remote-id lookups use the existing unique `(sync_id, table_pair, <side>_remote_id)` indexes with
 *   `table_pair = ANY(...)` over the mapped pairs.
 * - `sync_issues_open_record`: the open issues of one record (record status document).
 */
export class RecordSearch1764000000200 implements MigrationInterface {
  name = 'RecordSearch1764000000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX record_links_name ON record_links (sync_id, (lower(name) COLLATE "C")) WHERE name IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX sync_issues_open_record ON sync_issues (sync_id, record_id) WHERE resolved_at IS NULL AND record_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sync_issues_open_record`);
    await q.query(`DROP INDEX record_links_name`);
  }
}
