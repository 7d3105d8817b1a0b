import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Syncs, their two sides (encrypted credentials), the cached schema of each side, the mappings document,
 * and the issue and pending-delete tables the sync object counts.
 */
export class SyncResources1763800000000 implements MigrationInterface {
  name = 'SyncResources1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE syncs (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL,
        status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused')),
        activating boolean NOT NULL DEFAULT false,
        initial_sync_phase text NOT NULL DEFAULT 'not_started'
          CHECK (initial_sync_phase IN ('not_started', 'preparing', 'running', 'done')),
        initial_sync_started_at timestamptz,
        initial_sync_finished_at timestamptz,
        initial_sync_progress jsonb,
        delete_approval text NOT NULL DEFAULT 'review_required' CHECK (delete_approval IN ('review_required', 'auto_approve')),
        mappings jsonb NOT NULL DEFAULT '{"tables": []}',
        mappings_revision integer NOT NULL DEFAULT 1,
        reviewed_revision integer,
        start_options jsonb,
        started_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      )`);
    await q.query(
      `CREATE INDEX syncs_account_created ON syncs (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL`,
    );
    await q.query(`
      CREATE TABLE sync_sides (
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        side text NOT NULL CHECK (side IN ('left', 'right')),
        connector text NOT NULL,
        auth_method text NOT NULL CHECK (auth_method IN ('api_key', 'oauth')),
        base_id text,
        base_name text,
        credentials bytea,
        credential_fingerprint text,
        connected_via text CHECK (connected_via IN ('api', 'console', 'cli')),
        auth_status text NOT NULL DEFAULT 'pending' CHECK (auth_status IN ('pending', 'ok', 'error')),
        auth_error text,
        connected_at timestamptz,
        tables_fetched_at timestamptz,
        change_detection text,
        polling_state text NOT NULL DEFAULT 'idle',
        last_polled_at timestamptz,
        last_change_detected_at timestamptz,
        checkpoint jsonb,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (sync_id, side)
      )`);
    await q.query(`
      CREATE TABLE sync_tables (
        id text PRIMARY KEY,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        side text NOT NULL CHECK (side IN ('left', 'right')),
        remote_id text NOT NULL,
        name text NOT NULL,
        views jsonb,
        read_only boolean NOT NULL DEFAULT false,
        orphaned boolean NOT NULL DEFAULT false,
        position integer NOT NULL DEFAULT 0,
        fields_fetched_at timestamptz,
        prepared_at timestamptz,
        UNIQUE (sync_id, side, remote_id)
      )`);
    await q.query(`
      CREATE TABLE sync_fields (
        id text PRIMARY KEY,
        table_id text NOT NULL REFERENCES sync_tables(id) ON DELETE CASCADE,
        remote_id text NOT NULL,
        name text NOT NULL,
        type text NOT NULL,
        type_class text NOT NULL,
        read boolean NOT NULL,
        write boolean NOT NULL,
        required boolean NOT NULL,
        is_primary boolean NOT NULL,
        type_details jsonb,
        orphaned boolean NOT NULL DEFAULT false,
        position integer NOT NULL DEFAULT 0,
        UNIQUE (table_id, remote_id)
      )`);
    await q.query(`
      CREATE TABLE sync_issues (
        id text PRIMARY KEY,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        type text NOT NULL CHECK (type IN ('connection', 'record', 'webhook', 'sync_preview', 'other')),
        code text NOT NULL,
        side text CHECK (side IN ('left', 'right')),
        connector text NOT NULL,
        message text NOT NULL,
        remediation jsonb NOT NULL,
        dedupe_key text NOT NULL,
        table_id text,
        table_name text,
        record_id text,
        record_remote_id text,
        record_name text,
        record_url text,
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now(),
        occurrence_count integer NOT NULL DEFAULT 1,
        resolved_at timestamptz
      )`);
    await q.query(
      `CREATE UNIQUE INDEX sync_issues_open_dedupe ON sync_issues (sync_id, dedupe_key) WHERE resolved_at IS NULL`,
    );
    await q.query(
      `CREATE INDEX sync_issues_open_list ON sync_issues (sync_id, last_seen_at DESC, id DESC) WHERE resolved_at IS NULL`,
    );
    await q.query(`
      CREATE TABLE pending_deletes (
        id text PRIMARY KEY,
        sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
        record_id text NOT NULL,
        table_pair integer NOT NULL,
        missing_side text NOT NULL CHECK (missing_side IN ('left', 'right')),
        delete_from_side text NOT NULL CHECK (delete_from_side IN ('left', 'right')),
        state text NOT NULL DEFAULT 'awaiting_review' CHECK (state IN ('awaiting_review', 'ignored', 'approved', 'closed')),
        pending_since timestamptz NOT NULL DEFAULT now(),
        ignored_at timestamptz,
        decided_at timestamptz
      )`);
    await q.query(
      `CREATE INDEX pending_deletes_sync_state ON pending_deletes (sync_id, state, pending_since DESC, id DESC)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE pending_deletes`);
    await q.query(`DROP TABLE sync_issues`);
    await q.query(`DROP TABLE sync_fields`);
    await q.query(`DROP TABLE sync_tables`);
    await q.query(`DROP TABLE sync_sides`);
    await q.query(`DROP TABLE syncs`);
  }
}
