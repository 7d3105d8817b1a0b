import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The console's OAuth sign-ins in progress (`console_oauth_flows`). A row is created by `/app/oauth/start`
 * and consumed (deleted) by the callback, so a `state` works once. It is bound to the browser session that
 * started it (deleted with the session at sign-out), the account, the sync and side, and expires after a few
 * minutes. `handle_hash` is the SHA-256 of the `state` (stage `authorize`) or of the one-time handle of the
 * base picker (stage `choose_base`, when the signed-in account reaches several bases); the raw values are
 * never stored. `sealed` is AES-256-GCM ciphertext (the credential cipher) of the PKCE verifier and nonce,
 * and, at the base-picker stage, of the tokens.
 */
export class ConsoleOAuth1764200000600 implements MigrationInterface {
  name = 'ConsoleOAuth1764200000600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE console_oauth_flows (
      handle_hash bytea PRIMARY KEY,
      stage text NOT NULL CHECK (stage IN ('authorize', 'choose_base')),
      session_hash bytea NOT NULL REFERENCES console_sessions(token_hash) ON DELETE CASCADE,
      account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      sync_id text NOT NULL REFERENCES syncs(id) ON DELETE CASCADE,
      side text NOT NULL CHECK (side IN ('left', 'right')),
      connector text NOT NULL,
      sealed bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`);
    await q.query(`CREATE INDEX console_oauth_flows_expires ON console_oauth_flows (expires_at)`);
    await q.query(`CREATE INDEX console_oauth_flows_sync ON console_oauth_flows (sync_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE console_oauth_flows`);
  }
}
