import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { LiveExportMappingsDocument, LiveExportPlan } from '@lockstep/domain';

export type LiveExportAuthMethod = 'api_key' | 'oauth';
export type LiveExportCadence = 'manual' | 'every_10_minutes' | 'every_30_minutes' | 'hourly' | 'daily';
export type LiveExportRunState = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';
export type LiveExportRunTrigger = 'manual' | 'schedule';

/**
 * The edited live export mappings document as stored, resolved (see libs/domain/src/live-export/mappings.ts).
 */
export type StoredLiveExportMappings = LiveExportMappingsDocument;

/** bigint counters come back from pg as strings; rows counts stay far below 2^53. */
const bigintNumber = {
  to: (value: number) => value,
  from: (value: string | number | null) => (value === null ? 0 : Number(value)),
};

/**
 * A live export (spec 2.15): a source side (connector, base, credentials) and a destination side (connector,
 * location, credentials), the edited mappings document and the plan the last save provisioned. Credentials
 * are AES-256-GCM ciphertext bound to (export, side) (`liveExportOwner`); null = that side is not connected.
 * Unsaved changes: `mappingsVersion !== savedVersion`.
 */
@Entity({ name: 'live_exports' })
export class LiveExportEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'source_connector', type: 'text' })
  sourceConnector: string;

  /** The schema (PostgreSQL) or database (MySQL) the source tables are read from. */
  @Column({ name: 'source_base', type: 'text', nullable: true })
  sourceBase: string | null;

  @Column({ name: 'source_credentials', type: 'bytea', nullable: true })
  sourceCredentials: Buffer | null;

  @Column({ name: 'source_auth_method', type: 'text' })
  sourceAuthMethod: LiveExportAuthMethod;

  @Column({ name: 'source_connected_at', type: 'timestamptz', nullable: true })
  sourceConnectedAt: Date | null;

  @Column({ name: 'destination_connector', type: 'text' })
  destinationConnector: string;

  /** The destination's schema (PostgreSQL) or database (MySQL): the connection's base. */
  @Column({ name: 'destination_location', type: 'text', nullable: true })
  destinationLocation: string | null;

  @Column({ name: 'destination_credentials', type: 'bytea', nullable: true })
  destinationCredentials: Buffer | null;

  @Column({ name: 'destination_auth_method', type: 'text' })
  destinationAuthMethod: LiveExportAuthMethod;

  @Column({ name: 'destination_connected_at', type: 'timestamptz', nullable: true })
  destinationConnectedAt: Date | null;

  @Column({ type: 'jsonb', default: () => `'{"tables": []}'` })
  mappings: StoredLiveExportMappings;

  /** The ETag of the mappings document; every PUT that changes it adds one. */
  @Column({ name: 'mappings_version', type: 'integer', default: 1 })
  mappingsVersion: number;

  @Column({ name: 'saved_version', type: 'integer', nullable: true })
  savedVersion: number | null;

  @Column({ name: 'saved_at', type: 'timestamptz', nullable: true })
  savedAt: Date | null;

  /** What runs execute; written by save. Null before the first save. */
  @Column({ type: 'jsonb', nullable: true })
  plan: LiveExportPlan | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}

/** A live export's schedule; created by the first schedule PATCH (after the first save). */
@Entity({ name: 'live_export_schedules' })
export class LiveExportScheduleEntity {
  @PrimaryColumn({ name: 'live_export_id', type: 'text' })
  liveExportId: string;

  @Column({ type: 'text' })
  cadence: LiveExportCadence;

  /** "HH:MM", daily only. */
  @Column({ name: 'time_of_day', type: 'text', nullable: true })
  timeOfDay: string | null;

  /** IANA zone, daily only. */
  @Column({ type: 'text', nullable: true })
  timezone: string | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** The last slot the worker queued a run for. */
  @Column({ name: 'last_slot_at', type: 'timestamptz', nullable: true })
  lastSlotAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}

/** One run of a live export (`run_…`). At most one queued or running per export (partial unique index). */
@Entity({ name: 'live_export_runs' })
export class LiveExportRunEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'live_export_id', type: 'text' })
  liveExportId: string;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ type: 'text', default: 'queued' })
  state: LiveExportRunState;

  @Column({ type: 'text' })
  trigger: LiveExportRunTrigger;

  /** The schedule slot this run is for (scheduled runs only). */
  @Column({ name: 'slot_at', type: 'timestamptz', nullable: true })
  slotAt: Date | null;

  @Column({ type: 'boolean', default: false })
  forced: boolean;

  @Column({ name: 'rows_read', type: 'bigint', default: 0, transformer: bigintNumber })
  rowsRead: number;

  @Column({ name: 'rows_written', type: 'bigint', default: 0, transformer: bigintNumber })
  rowsWritten: number;

  @Column({ name: 'rows_removed', type: 'bigint', default: 0, transformer: bigintNumber })
  rowsRemoved: number;

  @Column({ type: 'jsonb', nullable: true })
  error: { code: string; message: string } | null;

  @Column({ name: 'cancel_requested_at', type: 'timestamptz', nullable: true })
  cancelRequestedAt: Date | null;

  @Column({ name: 'worker_token', type: 'text', nullable: true })
  workerToken: string | null;

  @Column({ name: 'heartbeat_at', type: 'timestamptz', nullable: true })
  heartbeatAt: Date | null;

  /** When the run was queued. */
  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;
}

/** The additional authenticated data of a live export side's credentials. */
export const liveExportOwner = (liveExportId: string, side: 'source' | 'destination'): string =>
  `lex:${liveExportId}:${side}`;
