import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The key ranges of a large pair's initial sync pass (`initial_sync_ranges`): any worker claims a range with
 * its own fenced lease (owner, token, expiry, as `sync_leases`), and commits the range's cursor and counts
 * with each page under that token. `after` and `before` bound the range (a page checkpoint, a remote id),
 * `cursor` is where its pass stands; the counts are what the range's pages did.
 */
export class InitialSyncRanges1764700000000 implements MigrationInterface {
  name = 'InitialSyncRanges1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE initial_sync_ranges (
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        table_pair integer NOT NULL,
        side text NOT NULL,
        range_index integer NOT NULL,
        after_cursor text,
        before_key text,
        cursor text,
        done integer NOT NULL DEFAULT 0,
        created_left integer NOT NULL DEFAULT 0,
        created_right integer NOT NULL DEFAULT 0,
        updated_left integer NOT NULL DEFAULT 0,
        updated_right integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        owner text,
        token bigint NOT NULL DEFAULT 0,
        expires_at timestamptz,
        finished_at timestamptz,
        PRIMARY KEY (sync_id, table_pair, side, range_index)
      )`);
    await q.query(
      `CREATE INDEX initial_sync_ranges_open ON initial_sync_ranges (sync_id) WHERE finished_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE initial_sync_ranges`);
  }
}
