/**
 * One key range of a large pair's initial sync pass, claimed by this worker under the range's own lease
 * (`initial_sync_ranges`), whichever worker owns the sync: it loads the sync's plan and opens its two sides,
 * then runs the range step by step until it is finished, the sync leaves the running phase, or the range is
 * lost. Every commit checks the range's fencing token (a worker that lost the range cannot commit); every app
 * write is preceded by a check that the sync is still active with the same mappings. A failure releases the
 * range: whoever claims it next (token above 1) looks links up and adopts what this one wrote but did not
 * commit.
 */
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { SideName } from '@lockstep/domain';
import {
  type ClaimedRange,
  type CredentialCipher,
  type Db,
  holdsRange,
  releaseRange,
  SyncEntity,
  SyncSideEntity,
} from '@lockstep/persistence';
import { type EngineContext, StopSync } from './context';
import type { InitialProgress } from './initial-progress';
import { runRangeStep } from './initial-sync';
import { buildPlan } from './plan';
import type { RunnerSettings } from './sync-runner';
import { engineContext, openSideSession, WriteGuard } from './runner-context';
import type { SideSession } from './side-session';

export class RangeRunner {
  private readonly logger = new Logger('RangeRunner');
  private stopped = false;
  private sessions: Record<SideName, SideSession> | null = null;
  private readonly guard: WriteGuard;
  /** The run is over and the range released. */
  ended = false;
  /** The run ended with an error (not a stop): the scheduler waits before it claims again. */
  failed = false;
  readonly done: Promise<void>;

  constructor(
    readonly range: ClaimedRange,
    private readonly db: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly settings: RunnerSettings,
  ) {
    this.guard = new WriteGuard(
      db,
      range.syncId,
      () => this.stopped,
      () => this.stop(),
    );
    this.done = this.run();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
  }

  private async run(): Promise<void> {
    try {
      const loaded = await this.load();
      if (!loaded) return;
      while (!this.stopped) {
        const cursor = await runRangeStep(loaded.ctx, loaded.progress, this.range);
        if (cursor === null) break;
      }
    } catch (error) {
      this.failed = !(error instanceof StopSync);
      if (this.failed)
        this.logger.warn(
          { syncId: this.range.syncId, range: this.range.index, error: String(error) },
          'range step failed; the range is released',
        );
    } finally {
      this.stopped = true;
      for (const session of Object.values(this.sessions ?? {})) await session.close();
      await releaseRange(this.db, this.range, this.settings.owner, this.range.token).catch(() => undefined);
      this.ended = true;
    }
  }

  /** The sync as the range needs it: its plan, its progress (run id, ranged pass) and both sides open. */
  private async load(): Promise<{ ctx: EngineContext; progress: InitialProgress } | null> {
    const { syncId } = this.range;
    const sync = await this.db.getRepository(SyncEntity).findOneBy({ id: syncId });
    if (!sync || sync.deletedAt || sync.status !== 'active' || sync.initialSyncPhase !== 'running')
      return null;
    const sides = await this.db.getRepository(SyncSideEntity).findBy({ syncId });
    const left = sides.find((side) => side.side === 'left');
    const right = sides.find((side) => side.side === 'right');
    // A side whose credentials the app rejects is the sync owner's to handle.
    if (!left || !right || left.authStatus !== 'ok' || right.authStatus !== 'ok') return null;
    const open = (entity: SyncSideEntity) =>
      openSideSession(syncId, entity, this.cipher, this.settings, this.db);
    this.sessions = { left: open(left), right: open(right) };
    const plan = await buildPlan(this.db, sync);
    const progress = (sync.initialSyncProgress ?? { pairs: [] }) as unknown as InitialProgress;
    const ctx = engineContext({
      sync,
      db: this.db,
      plan,
      sides: this.sessions,
      settings: this.settings,
      guard: this.guard,
      fenced: (work) => this.fenced(work),
    });
    return { ctx, progress };
  }

  private async fenced<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction(async (manager) => {
      if (!(await holdsRange(manager, this.range, this.settings.owner, this.range.token))) {
        this.stop();
        throw new StopSync('range lost');
      }
      return work(manager);
    });
  }
}
