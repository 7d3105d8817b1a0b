import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { Scope } from '@lockstep/contracts';

/**
 * An API key. The secret (`lsk_<lookup>_<secret>`) is shown once; only `lookup` (an index, not secret) and a
 * SHA-256 of the whole secret are stored, so a stolen database does not yield usable keys.
 */
@Entity({ name: 'api_keys' })
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Index()
  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  scope: Scope;

  /** When set, the key sees only this sync. */
  @Column({ name: 'sync_id', type: 'text', nullable: true })
  syncId: string | null;

  @Column({ type: 'text', unique: true })
  lookup: string;

  @Column({ name: 'secret_hash', type: 'bytea' })
  secretHash: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}
