import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SideName } from './sync-side.entity';

export type IssueType = 'connection' | 'record' | 'webhook' | 'sync_preview' | 'other';

export interface Remediation {
  explanation: string;
  suggested_action: string;
  links: { name: string; url: string }[];
}

/** An issue a person may need to act on (spec 2.11), de-duplicated by `dedupe_key` while open. */
@Entity({ name: 'sync_issues' })
export class SyncIssueEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'sync_id', type: 'text' })
  syncId: string;

  @Column({ type: 'text' })
  type: IssueType;

  @Column({ type: 'text' })
  code: string;

  @Column({ type: 'text', nullable: true })
  side: SideName | null;

  @Column({ type: 'text' })
  connector: string;

  @Column({ type: 'text' })
  message: string;

  @Column({ type: 'jsonb' })
  remediation: Remediation;

  @Column({ name: 'dedupe_key', type: 'text' })
  dedupeKey: string;

  @Column({ name: 'table_id', type: 'text', nullable: true })
  tableId: string | null;

  @Column({ name: 'table_name', type: 'text', nullable: true })
  tableName: string | null;

  @Column({ name: 'record_id', type: 'text', nullable: true })
  recordId: string | null;

  @Column({ name: 'record_remote_id', type: 'text', nullable: true })
  recordRemoteId: string | null;

  @Column({ name: 'record_name', type: 'text', nullable: true })
  recordName: string | null;

  @Column({ name: 'record_url', type: 'text', nullable: true })
  recordUrl: string | null;

  @Column({ name: 'first_seen_at', type: 'timestamptz', default: () => 'now()' })
  firstSeenAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;

  @Column({ name: 'occurrence_count', type: 'integer', default: 1 })
  occurrenceCount: number;

  @Column({ name: 'resolved_at', type: 'timestamptz', nullable: true })
  resolvedAt: Date | null;
}

/** A delete held for review (spec 2.13, 3.2). */
@Entity({ name: 'pending_deletes' })
export class PendingDeleteEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'sync_id', type: 'text' })
  syncId: string;

  @Column({ name: 'record_id', type: 'text' })
  recordId: string;

  @Column({ name: 'table_pair', type: 'integer' })
  tablePair: number;

  @Column({ name: 'missing_side', type: 'text' })
  missingSide: SideName;

  @Column({ name: 'delete_from_side', type: 'text' })
  deleteFromSide: SideName;

  @Column({ type: 'text', default: 'awaiting_review' })
  state: 'awaiting_review' | 'ignored' | 'approved' | 'closed';

  @Column({ name: 'pending_since', type: 'timestamptz', default: () => 'now()' })
  pendingSince: Date;

  @Column({ name: 'ignored_at', type: 'timestamptz', nullable: true })
  ignoredAt: Date | null;

  @Column({ name: 'decided_at', type: 'timestamptz', nullable: true })
  decidedAt: Date | null;

  /**
   * A person's decision the engine has still to carry out (`approve`: delete the other copy; `restore`:
   * re-create the missing copy).
   */
  @Column({ name: 'requested_action', type: 'text', nullable: true })
  requestedAction: 'approve' | 'restore' | null;

  /** When the engine carried out `requested_action`. */
  @Column({ name: 'applied_at', type: 'timestamptz', nullable: true })
  appliedAt: Date | null;
}
