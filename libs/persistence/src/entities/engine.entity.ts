import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import type { SideName } from './sync-side.entity';

/** Values of the mapped fields exactly as one side last showed them (field remote id -> canonical value). */
export type Shadow = Record<string, unknown>;

/**
 * One synced pair of records for life (`rec_<id>`): the remote id on each side (null while that side has no
 * copy), a per-side shadow and per-side state. Written by the engine (raw SQL in the worker); read by the
 * API.
 */
@Entity({ name: 'record_links' })
export class RecordLinkEntity {
  @PrimaryColumn({ type: 'text' }) id: string;
  @Column({ name: 'sync_id', type: 'text' }) syncId: string;
  @Column({ name: 'table_pair', type: 'integer' }) tablePair: number;
  @Column({ name: 'service_id', type: 'uuid' }) serviceId: string;
  @Column({ type: 'text', nullable: true }) name: string | null;
  @Column({ name: 'left_remote_id', type: 'text', nullable: true }) leftRemoteId: string | null;
  @Column({ name: 'right_remote_id', type: 'text', nullable: true }) rightRemoteId: string | null;
  @Column({ name: 'left_shadow', type: 'json', nullable: true }) leftShadow: Shadow | null;
  /**
   * The JSON string `"="` means "the same as the left shadow" (the engine's `SAME_AS_LEFT`): read it through
   * the engine's store.
   */
  @Column({ name: 'right_shadow', type: 'json', nullable: true }) rightShadow: Shadow | '=' | null;
  @Column({ name: 'left_deleted', type: 'boolean' }) leftDeleted: boolean;
  @Column({ name: 'right_deleted', type: 'boolean' }) rightDeleted: boolean;
  @Column({ name: 'left_filtered', type: 'boolean' }) leftFiltered: boolean;
  @Column({ name: 'right_filtered', type: 'boolean' }) rightFiltered: boolean;
  @Column({ name: 'left_sync_disabled', type: 'boolean' }) leftSyncDisabled: boolean;
  @Column({ name: 'right_sync_disabled', type: 'boolean' }) rightSyncDisabled: boolean;
  @Column({ type: 'boolean' }) dead: boolean;
  @Column({ name: 'create_pending', type: 'text', nullable: true }) createPending: SideName | null;
  /**
   * When a side's change that the other side has not taken yet (a refused or dropped write) was seen; null
   * when none.
   */
  @Column({ name: 'left_changed_at', type: 'timestamptz', nullable: true }) leftChangedAt: Date | null;
  @Column({ name: 'right_changed_at', type: 'timestamptz', nullable: true }) rightChangedAt: Date | null;
  @Column({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

export type QueuedOperationType = 'push' | 'refetch' | 'verify_delete';

/** The per-record queue (spec 3.3): operations on one record run in id order. */
@Entity({ name: 'record_queue' })
export class RecordQueueEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column({ name: 'sync_id', type: 'text' }) syncId: string;
  @Column({ name: 'record_id', type: 'text' }) recordId: string;
  @Column({ type: 'text' }) type: QueuedOperationType;
  /**
   * push: the side written; refetch: the side read (null = both); verify_delete: the side whose copy went
   * missing.
   */
  @Column({ type: 'text', nullable: true }) side: SideName | null;
  @Column({ type: 'integer' }) attempts: number;
  @Column({ name: 'not_before', type: 'timestamptz' }) notBefore: Date;
  @Column({ name: 'last_error', type: 'text', nullable: true }) lastError: string | null;
  @Column({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

/** A record-level change-log entry (spec 2.10). */
@Entity({ name: 'operations' })
export class OperationEntity {
  @PrimaryColumn({ type: 'text' }) id: string;
  @Column({ type: 'bigint' }) seq: string;
  @Column({ name: 'sync_id', type: 'text' }) syncId: string;
  @Column({ name: 'record_id', type: 'text', nullable: true }) recordId: string | null;
  @Column({ name: 'table_pair', type: 'integer', nullable: true }) tablePair: number | null;
  @Column({ type: 'text', nullable: true }) side: SideName | null;
  @Column({ name: 'table_id', type: 'text', nullable: true }) tableId: string | null;
  @Column({ name: 'table_name', type: 'text', nullable: true }) tableName: string | null;
  @Column({ name: 'record_remote_id', type: 'text', nullable: true }) recordRemoteId: string | null;
  @Column({ name: 'record_name', type: 'text', nullable: true }) recordName: string | null;
  @Column({ type: 'text' }) action: string;
  @Column({ type: 'text' }) trigger: 'push' | 'poll';
  @Column({ name: 'field_changes', type: 'json' }) fieldChanges: FieldChange[];
  @Column({ type: 'json', nullable: true }) details: Record<string, unknown> | null;
  @Column({ name: 'occurred_at', type: 'timestamptz' }) occurredAt: Date;
}

/** History of a held delete (spec 2.12 `pending_delete_events`). */
@Entity({ name: 'pending_delete_events' })
export class PendingDeleteEventEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column({ name: 'pending_delete_id', type: 'text' }) pendingDeleteId: string;
  @Column({ name: 'sync_id', type: 'text' }) syncId: string;
  @Column({ name: 'record_id', type: 'text' }) recordId: string;
  @Column({ type: 'text' }) kind: 'detected' | 'approved' | 'ignored' | 'restored' | 'closed';
  @Column({ type: 'text', nullable: true }) actor: string | null;
  @Column({ type: 'timestamptz' }) at: Date;
}
