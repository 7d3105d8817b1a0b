import { Column, Entity, PrimaryColumn } from 'typeorm';

export type SyncStatus = 'draft' | 'active' | 'paused';
export type InitialSyncPhase = 'not_started' | 'preparing' | 'running' | 'done';
export type DeleteApproval = 'review_required' | 'auto_approve';

/** The stored mappings document (normalised, references by prefixed id); see libs/domain mappings. */
export type StoredMappings = { tables: unknown[] } & Record<string, unknown>;

/** What a person chose when starting the sync (match fields per table pair, preferred side). */
export interface StartOptions {
  match?: { tablePair: number; leftField: string; rightField: string }[];
  prefer?: 'left' | 'right';
}

/** A sync: two sides, a mappings document and its lifecycle (spec 2.3, 3.1). */
@Entity({ name: 'syncs' })
export class SyncEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', default: 'draft' })
  status: SyncStatus;

  /** Set by activate; the worker clears it when it has picked the sync up again. */
  @Column({ type: 'boolean', default: false })
  activating: boolean;

  @Column({ name: 'initial_sync_phase', type: 'text', default: 'not_started' })
  initialSyncPhase: InitialSyncPhase;

  @Column({ name: 'initial_sync_started_at', type: 'timestamptz', nullable: true })
  initialSyncStartedAt: Date | null;

  @Column({ name: 'initial_sync_finished_at', type: 'timestamptz', nullable: true })
  initialSyncFinishedAt: Date | null;

  /** Engine-owned progress of the initial sync (per table pair counts). */
  @Column({ name: 'initial_sync_progress', type: 'jsonb', nullable: true })
  initialSyncProgress: Record<string, unknown> | null;

  @Column({ name: 'delete_approval', type: 'text', default: 'review_required' })
  deleteApproval: DeleteApproval;

  @Column({ type: 'jsonb', default: () => `'{"tables": []}'` })
  mappings: StoredMappings;

  @Column({ name: 'mappings_revision', type: 'integer', default: 1 })
  mappingsRevision: number;

  /** The mappings revision a person reviewed and started; null until the first start. */
  @Column({ name: 'reviewed_revision', type: 'integer', nullable: true })
  reviewedRevision: number | null;

  @Column({ name: 'start_options', type: 'jsonb', nullable: true })
  startOptions: StartOptions | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt: Date | null;
}
