import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An initial sync's creates stored a page at a time (`operation_batches`): one row holds the `created`
 * operations of one page on one side of one table pair, which the API reads back as one operation per record.
 * An `operations` row costs the store a heap row and four index entries per record; a batch row costs one
 * compressed row and two index entries per page.
 *
 * - `id` is the base of its operations' ids: `op_` and 16 characters, then the record's position in the batch
 *   as 4 base-36 characters makes the operation's `op_` id (20 characters, like every other).
 * - `seq` comes from the operations' sequence, so batches and operations share one order (`occurred_at`, `seq`;
 *   inside a batch, the position).
 * - `records` is `[[record_id, record_remote_id, record_name], ...]` and `field_changes` the records'
 *   `field_changes` in the same order, in a column of its own so the list form never reads it.
 * - `record_links.created_op` is the id of the operation that created a record's copy when it is in a batch:
 *   the filter by record finds it through the link.
 * - `operation_log` shows both as one table, one row per operation, for SQL readers (operators and tests);
 *   `operation_entry_id(batch id, position)` and `operation_entry_position(operation id)` convert between an
 *   operation's id and its place in a batch.
 */
export class OperationBatches1764800000000 implements MigrationInterface {
  name = 'OperationBatches1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE operation_batches (
        id text PRIMARY KEY,
        seq bigint NOT NULL DEFAULT nextval('operations_seq_seq'),
        sync_id text NOT NULL,
        table_pair integer NOT NULL,
        side text NOT NULL CHECK (side IN ('left', 'right')),
        table_id text NOT NULL,
        table_name text NOT NULL,
        action text NOT NULL,
        trigger text NOT NULL CHECK (trigger IN ('push', 'poll')),
        size integer NOT NULL CHECK (size > 0),
        records json NOT NULL,
        field_changes json NOT NULL,
        occurred_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX operation_batches_sync ON operation_batches (sync_id, occurred_at DESC, seq DESC)`,
    );
    await q.query(
      `CREATE INDEX operation_batches_table ON operation_batches (sync_id, table_id, occurred_at DESC, seq DESC)`,
    );
    await q.query(`ALTER TABLE record_links ADD COLUMN created_op text`);
    await q.query(`
      CREATE OR REPLACE FUNCTION delete_sync_rows() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM record_links WHERE sync_id IN (SELECT id FROM gone);
        DELETE FROM operations WHERE sync_id IN (SELECT id FROM gone);
        DELETE FROM operation_batches WHERE sync_id IN (SELECT id FROM gone);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION operation_entry_id(base text, n bigint) RETURNS text
      LANGUAGE sql IMMUTABLE AS $$
        SELECT base || string_agg(substr('0123456789abcdefghijklmnopqrstuvwxyz',
                                         (n / (36 ^ (3 - d))::bigint % 36)::int + 1, 1), '' ORDER BY d)
          FROM generate_series(0, 3) AS d
      $$`);
    await q.query(`
      CREATE FUNCTION operation_entry_position(id text) RETURNS integer
      LANGUAGE sql IMMUTABLE AS $$
        SELECT sum((strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(id, 19 + d, 1)) - 1)
                   * (36 ^ (4 - d))::integer)::integer
          FROM generate_series(1, 4) AS d
      $$`);
    await q.query(`
      CREATE VIEW operation_log AS
      SELECT id, seq, 0::bigint AS batch_position, sync_id, record_id, table_pair, side, table_id, table_name,
             record_remote_id, record_name, action, trigger, field_changes, details, occurred_at
        FROM operations
      UNION ALL
      SELECT operation_entry_id(b.id, e.n - 1), b.seq, e.n - 1, b.sync_id, e.record ->> 0,
             b.table_pair, b.side, b.table_id, b.table_name, e.record ->> 1, e.record ->> 2, b.action, b.trigger,
             e.changes, NULL::json, b.occurred_at
        FROM operation_batches b,
             ROWS FROM (json_array_elements(b.records), json_array_elements(b.field_changes))
               WITH ORDINALITY AS e(record, changes, n)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP VIEW operation_log`);
    await q.query(`DROP FUNCTION operation_entry_position(text)`);
    await q.query(`DROP FUNCTION operation_entry_id(text, bigint)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION delete_sync_rows() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM record_links WHERE sync_id IN (SELECT id FROM gone);
        DELETE FROM operations WHERE sync_id IN (SELECT id FROM gone);
        RETURN NULL;
      END $$`);
    await q.query(`ALTER TABLE record_links DROP COLUMN created_op`);
    await q.query(`DROP TABLE operation_batches`);
  }
}
