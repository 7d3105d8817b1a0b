import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The console's sign-in sessions (`console_sessions`): the SHA-256 of the cookie token (never the token),
 * the account, the per-session CSRF token, and the idle (`last_seen_at`) and absolute (`expires_at`) limits.
 * Signing out deletes the row; expired rows are deleted when met and on each sign-in.
 */
export class Console1764200000500 implements MigrationInterface {
  name = 'Console1764200000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE console_sessions (
      token_hash bytea PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      csrf_token text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`);
    await q.query(`CREATE INDEX console_sessions_account ON console_sessions (account_id)`);
    await q.query(`CREATE INDEX console_sessions_expires ON console_sessions (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE console_sessions`);
  }
}
