import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One `Idempotency-Key` use, per account and endpoint, kept 24 hours. `state` is `in_progress` while the
 * first request runs and `completed` once its response is stored; a failed request deletes its row.
 */
@Entity({ name: 'idempotency_records' })
export class IdempotencyRecordEntity {
  @PrimaryColumn({ name: 'account_id', type: 'text' })
  accountId: string;

  /** `METHOD route-pattern` with the concrete path (for example `PUT /v1/sync/syncs/sync_x/mappings`). */
  @PrimaryColumn({ type: 'text' })
  endpoint: string;

  @PrimaryColumn({ type: 'text' })
  key: string;

  /** SHA-256 of the canonical request body. */
  @Column({ type: 'text' })
  fingerprint: string;

  @Column({ type: 'text' })
  state: 'in_progress' | 'completed';

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'response_body', type: 'jsonb', nullable: true })
  responseBody: unknown;

  @Column({ name: 'response_headers', type: 'jsonb', nullable: true })
  responseHeaders: Record<string, string> | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
