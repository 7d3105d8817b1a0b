import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live export (spec 2.15, 3.4, 4.8): the exports with their two sides (encrypted credentials, the source's base,
 * the destination's location), the edited mappings document and the plan the last save provisioned
 * (`mappings_version` is the ETag; unsaved changes = `mappings_version <> saved_version`), one optional schedule
 * per export, and the runs.
 *
 * Runs: the partial unique index `live_export_runs_one_active` keeps at most one queued or running run per export
 * (a trigger that collides with it is `run_in_progress`); `live_export_runs_slot` keeps a scheduled slot from
 * running twice when several workers tick at once.
 */
export class LiveExport1764200000000 implements MigrationInterface {
  name = 'LiveExport1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE live_exports (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL,
        source_connector text NOT NULL,
        source_base text,
        source_credentials bytea,
        source_auth_method text NOT NULL CHECK (source_auth_method IN ('api_key', 'oauth')),
        source_connected_at timestamptz,
        destination_connector text NOT NULL,
        destination_location text,
        destination_credentials bytea,
        destination_auth_method text NOT NULL CHECK (destination_auth_method IN ('api_key', 'oauth')),
        destination_connected_at timestamptz,
        mappings jsonb NOT NULL DEFAULT '{"tables": []}',
        mappings_version integer NOT NULL DEFAULT 1,
        saved_version integer,
        saved_at timestamptz,
        plan jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX live_exports_account_created ON live_exports (account_id, created_at DESC, id DESC)`,
    );
    await q.query(`
      CREATE TABLE live_export_schedules (
        live_export_id text PRIMARY KEY REFERENCES live_exports(id) ON DELETE CASCADE,
        cadence text NOT NULL CHECK (cadence IN ('manual', 'every_10_minutes', 'every_30_minutes', 'hourly', 'daily')),
        time_of_day text,
        timezone text,
        enabled boolean NOT NULL DEFAULT true,
        last_slot_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE live_export_runs (
        id text PRIMARY KEY,
        live_export_id text NOT NULL REFERENCES live_exports(id) ON DELETE CASCADE,
        account_id text NOT NULL,
        state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
        trigger text NOT NULL CHECK (trigger IN ('manual', 'schedule')),
        slot_at timestamptz,
        forced boolean NOT NULL DEFAULT false,
        rows_read bigint NOT NULL DEFAULT 0,
        rows_written bigint NOT NULL DEFAULT 0,
        rows_removed bigint NOT NULL DEFAULT 0,
        error jsonb,
        cancel_requested_at timestamptz,
        worker_token text,
        heartbeat_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz
      )`);
    await q.query(
      `CREATE UNIQUE INDEX live_export_runs_one_active ON live_export_runs (live_export_id) WHERE state IN ('queued', 'running')`,
    );
    await q.query(
      `CREATE UNIQUE INDEX live_export_runs_slot ON live_export_runs (live_export_id, slot_at) WHERE slot_at IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX live_export_runs_list ON live_export_runs (live_export_id, created_at DESC, id DESC)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE live_export_runs`);
    await q.query(`DROP TABLE live_export_schedules`);
    await q.query(`DROP TABLE live_exports`);
  }
}
