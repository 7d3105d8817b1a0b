import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Foundation1763700000000 implements MigrationInterface {
  name = 'Foundation1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE accounts (
        id text PRIMARY KEY,
        email text NOT NULL UNIQUE,
        password_hash text NOT NULL,
        plan text NOT NULL DEFAULT 'free',
        api_enabled boolean NOT NULL DEFAULT true,
        subscription text NOT NULL DEFAULT 'active' CHECK (subscription IN ('active', 'none')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL,
        scope text NOT NULL CHECK (scope IN ('read', 'operate', 'readwrite')),
        sync_id text,
        lookup text NOT NULL UNIQUE,
        secret_hash bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      )`);
    await q.query(`CREATE INDEX api_keys_account_created ON api_keys (account_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE idempotency_records (
        account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        endpoint text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        state text NOT NULL CHECK (state IN ('in_progress', 'completed')),
        response_status integer,
        response_body jsonb,
        response_headers jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (account_id, endpoint, key)
      )`);
    await q.query(`CREATE INDEX idempotency_records_expires ON idempotency_records (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_records`);
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE accounts`);
  }
}
