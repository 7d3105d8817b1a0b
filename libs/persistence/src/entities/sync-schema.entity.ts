import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SideName } from './sync-side.entity';

export interface StoredViews {
  required: boolean;
  options: { value: string; name: string }[];
}

/** A table of one side, cached from the connected app (spec 2.7). Its `table_` id is stable per remote id. */
@Entity({ name: 'sync_tables' })
export class SyncTableEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'sync_id', type: 'text' })
  syncId: string;

  @Column({ type: 'text' })
  side: SideName;

  @Column({ name: 'remote_id', type: 'text' })
  remoteId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'jsonb', nullable: true })
  views: StoredViews | null;

  @Column({ name: 'read_only', type: 'boolean', default: false })
  readOnly: boolean;

  /** The app no longer has it (seen missing on a refresh); kept so mappings can report `orphaned_table`. */
  @Column({ type: 'boolean', default: false })
  orphaned: boolean;

  @Column({ type: 'integer', default: 0 })
  position: number;

  @Column({ name: 'fields_fetched_at', type: 'timestamptz', nullable: true })
  fieldsFetchedAt: Date | null;

  /**
   * When table setup (service id column, change capture) was done in the app; undone when the sync is
   * deleted.
   */
  @Column({ name: 'prepared_at', type: 'timestamptz', nullable: true })
  preparedAt: Date | null;
}

/** A field of a cached table. Its `field_` id is stable per remote id. */
@Entity({ name: 'sync_fields' })
export class SyncFieldEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'table_id', type: 'text' })
  tableId: string;

  @Column({ name: 'remote_id', type: 'text' })
  remoteId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  type: string;

  @Column({ name: 'type_class', type: 'text' })
  typeClass: string;

  @Column({ type: 'boolean' })
  read: boolean;

  @Column({ type: 'boolean' })
  write: boolean;

  @Column({ type: 'boolean' })
  required: boolean;

  @Column({ name: 'is_primary', type: 'boolean' })
  isPrimary: boolean;

  @Column({ name: 'type_details', type: 'jsonb', nullable: true })
  typeDetails: Record<string, unknown> | null;

  @Column({ type: 'boolean', default: false })
  orphaned: boolean;

  @Column({ type: 'integer', default: 0 })
  position: number;
}
