import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A signed-in console session. The browser holds a random token in the `lockstep_session` cookie; only its
 * SHA-256 is stored (`token_hash`), so a stolen database yields no usable session. `csrf_token` is the
 * per-session token every console form carries. A session ends at sign-out (row deleted), after
 * `idle` without a request (`last_seen_at`) or at `expires_at` (absolute).
 */
@Entity({ name: 'console_sessions' })
export class ConsoleSessionEntity {
  @PrimaryColumn({ name: 'token_hash', type: 'bytea' })
  tokenHash: Buffer;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ name: 'csrf_token', type: 'text' })
  csrfToken: string;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
