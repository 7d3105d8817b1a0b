import { Column, Entity, PrimaryColumn } from 'typeorm';

export type SideName = 'left' | 'right';
export type AuthStatus = 'pending' | 'ok' | 'error';

/**
 * One side of a sync. `auth_status = 'pending'` is a side chosen at create but not connected yet (the API
 * shows it as null plus a `user_authorization` pending action). Credentials are AES-256-GCM ciphertext bound
 * to (sync, side) (see `CredentialCipher`); they never leave the service.
 */
@Entity({ name: 'sync_sides' })
export class SyncSideEntity {
  @PrimaryColumn({ name: 'sync_id', type: 'text' })
  syncId: string;

  @PrimaryColumn({ type: 'text' })
  side: SideName;

  @Column({ type: 'text' })
  connector: string;

  @Column({ name: 'auth_method', type: 'text' })
  authMethod: 'api_key' | 'oauth';

  @Column({ name: 'base_id', type: 'text', nullable: true })
  baseId: string | null;

  @Column({ name: 'base_name', type: 'text', nullable: true })
  baseName: string | null;

  @Column({ type: 'bytea', nullable: true })
  credentials: Buffer | null;

  /**
   * HMAC of the canonical credentials (keyed from the master key): detects `base_conflict` without
   * decrypting.
   */
  @Column({ name: 'credential_fingerprint', type: 'text', nullable: true })
  credentialFingerprint: string | null;

  @Column({ name: 'connected_via', type: 'text', nullable: true })
  connectedVia: 'api' | 'console' | 'cli' | null;

  @Column({ name: 'auth_status', type: 'text', default: 'pending' })
  authStatus: AuthStatus;

  @Column({ name: 'auth_error', type: 'text', nullable: true })
  authError: string | null;

  @Column({ name: 'connected_at', type: 'timestamptz', nullable: true })
  connectedAt: Date | null;

  @Column({ name: 'tables_fetched_at', type: 'timestamptz', nullable: true })
  tablesFetchedAt: Date | null;

  /** Engine-owned: the change detection mode in use, polling state and the last change seen. */
  @Column({ name: 'change_detection', type: 'text', nullable: true })
  changeDetection: string | null;

  @Column({ name: 'polling_state', type: 'text', default: 'idle' })
  pollingState: string;

  @Column({ name: 'last_polled_at', type: 'timestamptz', nullable: true })
  lastPolledAt: Date | null;

  @Column({ name: 'last_change_detected_at', type: 'timestamptz', nullable: true })
  lastChangeDetectedAt: Date | null;

  @Column({ type: 'jsonb', nullable: true })
  checkpoint: Record<string, unknown> | null;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
