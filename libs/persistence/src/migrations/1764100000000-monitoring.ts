import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The monitoring API (`GET /sync/operations`, `GET /sync/issues`, `POST /sync/issues/{id}/retry`).
 *
 * Operations are already index-backed for every filter by the engine migration, each index in the list's
 * keyset order `(occurred_at DESC, seq DESC)`: `operations_sync` (sync, also with `since`), `operations_table`
 * (sync + table) and `operations_record` (sync + record). Issues add the `type` filter next to the unfiltered
 * open list `sync_issues_open_list`, in the same order `(last_seen_at DESC, id DESC)`.
 *
 * `sync_leases.wake_requested_at`: a person retried a connection issue; the owning worker's scheduler wakes the
 * sync's runner at its next tick (instead of after the failure backoff) and clears the flag.
 */
export class Monitoring1764100000000 implements MigrationInterface {
  name = 'Monitoring1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX sync_issues_open_type ON sync_issues (sync_id, type, last_seen_at DESC, id DESC) WHERE resolved_at IS NULL`,
    );
    await q.query(`ALTER TABLE sync_leases ADD COLUMN wake_requested_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sync_leases DROP COLUMN wake_requested_at`);
    await q.query(`DROP INDEX sync_issues_open_type`);
  }
}
