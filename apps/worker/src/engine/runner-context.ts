/**
 * What a sync runner and a range runner both build for the engine: the sides' sessions, the check before every
 * app write, and the `EngineContext`. Only the fence differs (the sync's lease or the range's), so each runner
 * passes its own.
 */
import type { DataSource } from 'typeorm';
import type { SideName } from '@lockstep/domain';
import {
  type CredentialCipher,
  type Db,
  type SyncEntity,
  type SyncSideEntity,
  syncState,
} from '@lockstep/persistence';
import { type EngineContext, StopSync } from './context';
import type { SyncPlan } from './plan';
import { SideSession } from './side-session';
import type { RunnerSettings } from './sync-runner';

/** A side's session with the runner's egress, coordination, connector settings and token renewal. */
export function openSideSession(
  syncId: string,
  entity: SyncSideEntity,
  cipher: CredentialCipher,
  settings: RunnerSettings,
  db: DataSource,
): SideSession {
  return new SideSession(
    syncId,
    entity.side,
    entity,
    cipher,
    settings.egress,
    settings.shared,
    settings.connectorSettings,
    { db, oauthClient: (type) => settings.oauthClient?.(type) },
  );
}

/**
 * Pause (or any change of status or mappings) stops writes: checked before every write call, against the
 * store at most every 100 ms. A change stops the runner (`stop`) and throws `StopSync`.
 */
export class WriteGuard {
  private lastCheck = 0;

  constructor(
    private readonly db: DataSource,
    private readonly syncId: string,
    private readonly stopped: () => boolean,
    private readonly stop: () => void,
  ) {}

  async assertCanWrite(revision: number): Promise<void> {
    if (this.stopped()) throw new StopSync('stopping');
    if (Date.now() - this.lastCheck < 100) return;
    const row = await syncState(this.db, this.syncId);
    if (!row || row.deleted_at || row.status !== 'active' || row.mappings_revision !== revision) {
      this.stop();
      throw new StopSync('the sync was paused or changed');
    }
    this.lastCheck = Date.now();
  }
}

/** The engine's context for one runner's round: the sync as loaded, its plan, sides, guard and fence. */
export function engineContext(input: {
  sync: SyncEntity;
  db: DataSource;
  plan: SyncPlan;
  sides: Record<SideName, SideSession>;
  settings: RunnerSettings;
  guard: WriteGuard;
  fenced: <T>(work: (tx: Db) => Promise<T>) => Promise<T>;
}): EngineContext {
  const { sync, settings } = input;
  return {
    syncId: sync.id,
    accountId: sync.accountId,
    deleteApproval: sync.deleteApproval,
    db: input.db,
    plan: input.plan,
    sides: input.sides,
    publicUrl: settings.publicUrl,
    pageSize: settings.pageSize,
    writeBatch: settings.writeBatch,
    ranges: settings.ranges,
    assertCanWrite: () => input.guard.assertCanWrite(sync.mappingsRevision),
    fenced: input.fenced,
  };
}
