/** What the engine's steps share while one worker owns one sync. */
import type { DataSource } from 'typeorm';
import type { SideName } from '@lockstep/domain';
import type { SideSession } from './side-session';
import type { SyncPlan } from './plan';
import type { Db } from '@lockstep/persistence';

export class StopSync extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'StopSync';
  }
}

export interface EngineContext {
  syncId: string;
  accountId: string;
  deleteApproval: 'review_required' | 'auto_approve';
  db: DataSource;
  plan: SyncPlan;
  sides: Record<SideName, SideSession>;
  publicUrl: string;
  /**
   * Throws StopSync when the sync may not be written any more (paused, changed, lease lost). Called before
   * every write to an app.
   */
  assertCanWrite(): Promise<void>;
  /**
   * Runs `work` in one store transaction after checking the fencing token; throws StopSync when the lease was
   * lost.
   */
  fenced<T>(work: (tx: Db) => Promise<T>): Promise<T>;
  /** Batch sizes. */
  pageSize: number;
  writeBatch: number;
  /** A side with at least `minRows` records runs its initial sync pass as `count` key ranges. */
  ranges: { minRows: number; count: number };
}
