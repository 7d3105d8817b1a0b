import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The sync engine's state (see libs/../shared engine design and apps/worker/src/engine/README.md):
 * record links with per-side shadows, the per-record queue, the operations log, pending-delete history, the
 * initial sync's staged match keys, and one lease per sync (owner + fencing token).
 */
export class Engine1763900000000 implements MigrationInterface {
  name = 'Engine1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE record_links (
        id text PRIMARY KEY,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        table_pair integer NOT NULL,
        service_id uuid NOT NULL,
        name text,
        left_remote_id text,
        right_remote_id text,
        left_shadow jsonb,
        right_shadow jsonb,
        left_hash text,
        right_hash text,
        left_seen_at timestamptz,
        right_seen_at timestamptz,
        left_deleted boolean NOT NULL DEFAULT false,
        right_deleted boolean NOT NULL DEFAULT false,
        left_filtered boolean NOT NULL DEFAULT false,
        right_filtered boolean NOT NULL DEFAULT false,
        left_sync_disabled boolean NOT NULL DEFAULT false,
        right_sync_disabled boolean NOT NULL DEFAULT false,
        dead boolean NOT NULL DEFAULT false,
        create_pending text CHECK (create_pending IN ('left', 'right')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    // One link per remote record and side: a second link for the same record is impossible (NULLs are distinct).
    await q.query(
      `CREATE UNIQUE INDEX record_links_left ON record_links (sync_id, table_pair, left_remote_id)`,
    );
    await q.query(
      `CREATE UNIQUE INDEX record_links_right ON record_links (sync_id, table_pair, right_remote_id)`,
    );
    await q.query(
      `CREATE UNIQUE INDEX record_links_service ON record_links (sync_id, table_pair, service_id)`,
    );
    await q.query(
      `CREATE INDEX record_links_pending ON record_links (sync_id, table_pair) WHERE create_pending IS NOT NULL`,
    );

    await q.query(`
      CREATE TABLE record_queue (
        id bigserial PRIMARY KEY,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        record_id text NOT NULL REFERENCES record_links(id) ON DELETE CASCADE,
        type text NOT NULL CHECK (type IN ('push', 'refetch', 'verify_delete')),
        side text CHECK (side IN ('left', 'right')),
        attempts integer NOT NULL DEFAULT 0,
        not_before timestamptz NOT NULL DEFAULT now(),
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX record_queue_due ON record_queue (sync_id, not_before, id)`);
    await q.query(`CREATE INDEX record_queue_record ON record_queue (record_id, id)`);

    await q.query(`
      CREATE TABLE operations (
        id text PRIMARY KEY,
        seq bigserial NOT NULL,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        record_id text,
        table_pair integer,
        side text CHECK (side IN ('left', 'right')),
        table_id text,
        table_name text,
        record_remote_id text,
        record_name text,
        action text NOT NULL,
        trigger text NOT NULL CHECK (trigger IN ('push', 'poll')),
        field_changes jsonb NOT NULL DEFAULT '[]',
        details jsonb,
        occurred_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX operations_sync ON operations (sync_id, occurred_at DESC, seq DESC)`);
    await q.query(
      `CREATE INDEX operations_record ON operations (sync_id, record_id, occurred_at DESC, seq DESC)`,
    );
    await q.query(
      `CREATE INDEX operations_table ON operations (sync_id, table_id, occurred_at DESC, seq DESC)`,
    );
    await q.query(`CREATE INDEX operations_remote ON operations (sync_id, record_remote_id)`);

    await q.query(
      `ALTER TABLE pending_deletes ADD COLUMN requested_action text CHECK (requested_action IN ('approve', 'restore'))`,
    );
    await q.query(`ALTER TABLE pending_deletes ADD COLUMN applied_at timestamptz`);
    await q.query(
      `CREATE UNIQUE INDEX pending_deletes_open ON pending_deletes (sync_id, record_id) WHERE state IN ('awaiting_review', 'ignored')`,
    );
    await q.query(
      `CREATE INDEX pending_deletes_requested ON pending_deletes (sync_id) WHERE requested_action IS NOT NULL AND applied_at IS NULL`,
    );
    await q.query(`
      CREATE TABLE pending_delete_events (
        id bigserial PRIMARY KEY,
        pending_delete_id text NOT NULL REFERENCES pending_deletes(id) ON DELETE CASCADE,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        record_id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('detected', 'approved', 'ignored', 'restored', 'closed')),
        actor text,
        at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX pending_delete_events_record ON pending_delete_events (sync_id, record_id, at DESC)`,
    );

    // Match keys staged by the initial sync's preview (bounded memory: the join runs in the store).
    await q.query(`
      CREATE TABLE initial_sync_keys (
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        table_pair integer NOT NULL,
        side text NOT NULL CHECK (side IN ('left', 'right')),
        remote_id text NOT NULL,
        match_key text,
        PRIMARY KEY (sync_id, table_pair, side, remote_id)
      )`);
    await q.query(
      `CREATE INDEX initial_sync_keys_match ON initial_sync_keys (sync_id, table_pair, side, match_key)`,
    );

    await q.query(`
      CREATE TABLE sync_leases (
        sync_id text PRIMARY KEY REFERENCES syncs(id) ON DELETE CASCADE,
        owner text NOT NULL,
        token bigint NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sync_leases`);
    await q.query(`DROP TABLE initial_sync_keys`);
    await q.query(`DROP TABLE pending_delete_events`);
    await q.query(`DROP INDEX pending_deletes_requested`);
    await q.query(`DROP INDEX pending_deletes_open`);
    await q.query(`ALTER TABLE pending_deletes DROP COLUMN applied_at, DROP COLUMN requested_action`);
    await q.query(`DROP TABLE operations`);
    await q.query(`DROP TABLE record_queue`);
    await q.query(`DROP TABLE record_links`);
  }
}
