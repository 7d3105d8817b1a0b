/**
 * One sync, owned by this worker under a lease: a loop that prepares and runs the initial sync, then keeps
 * both sides equal (change feed, per-record queue, held-delete decisions, periodic full scans), sleeping
 * until the change hub or the scheduler wakes it. Every write to an app is preceded by a check that the
 * sync is still active and still ours; every commit to the store checks the lease's fencing token.
 */
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  type ConnectorCoordination,
  isConnectorError,
  type OAuthClientRegistration,
} from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import type { SideName } from '@lockstep/domain';
import {
  type CredentialCipher,
  markCredentialRejected,
  SyncEntity,
  SyncSideEntity,
} from '@lockstep/persistence';
import type { ChangeHub } from './change-hub';
import { type EngineContext, StopSync } from './context';
import { type Checkpoints, fullScanStep, loadCheckpoints, pollChanges, type ScanState } from './continuous';
import { prepareInitialSync } from './initial-prepare';
import type { InitialProgress } from './initial-progress';
import { finishInitialSync, runInitialSyncStep } from './initial-sync';
import { buildPlan, sideEnd, type SyncPlan } from './plan';
import { applyDecisions, processQueue } from './records';
import { isRetryableWriteError } from './reconcile';
import { engineContext, openSideSession, WriteGuard } from './runner-context';
import type { EgressSettings, SideSession } from './side-session';
import {
  type Db,
  holdsLease,
  markFullScan,
  markPollingIdle,
  openSideIssue,
  resolveSideIssue,
  storeNow,
  untilNextQueueEntry,
} from '@lockstep/persistence';

/** Bounds how many syncs of one worker do a round at once (and so how many app connections are open). */
export class Rounds {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  get contended(): boolean {
    return this.waiting.length > 0;
  }

  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active -= 1;
  }
}

export interface RunnerSettings {
  owner: string;
  egress: EgressSettings;
  /** The rate budgets and locks shared through Redis (`ConnectContext.shared`). */
  shared?: ConnectorCoordination;
  /** The service's settings connectors read (`ConnectContext.settings`: base URLs). */
  connectorSettings?: Readonly<Record<string, string | undefined>>;
  /** The OAuth client registration of a connector (`OAUTH_CLIENTS`): a signed-in side renews with it. */
  oauthClient?: (type: string) => OAuthClientRegistration | undefined;
  publicUrl: string;
  pageSize: number;
  writeBatch: number;
  /** `ENGINE_RANGE_MIN_ROWS`, `ENGINE_RANGES`. */
  ranges: { minRows: number; count: number };
  fullScanMs: number;
  safetyPollMs: number;
  rounds: Rounds;
}

const SIDES: SideName[] = ['left', 'right'];

export class SyncRunner {
  private readonly logger = new Logger('SyncRunner');
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private sessions: Record<SideName, SideSession> | null = null;
  private plan: SyncPlan | null = null;
  private checkpoints: Checkpoints | null = null;
  private unsubscribe: (() => void)[] = [];
  /** Subscribed to the change hub for the current plan (from the continuous sync on). */
  private subscribed = false;
  private scan: ScanState | null = null;
  private scanQueue: ScanState[] = [];
  private nextScanAt = 0;
  private failures = 0;
  /**
   * Sides that may have an open `unreachable` issue (both at start: a previous owner may have opened one).
   */
  private failedSides = new Set<string>(['left', 'right']);
  private readonly guard: WriteGuard;
  readonly done: Promise<void>;

  constructor(
    readonly syncId: string,
    readonly token: string,
    private readonly db: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly hub: ChangeHub,
    private readonly settings: RunnerSettings,
  ) {
    this.guard = new WriteGuard(
      db,
      syncId,
      () => this.stopped,
      () => this.stop(),
    );
    this.done = this.loop();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    this.wake();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken || this.stopped) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = null;
        finish();
      };
    }).then(() => {
      this.woken = false;
    });
  }

  private async loop(): Promise<void> {
    try {
      while (!this.stopped) {
        let idleMs = 0;
        await this.settings.rounds.acquire();
        try {
          idleMs = await this.cycle();
          this.failures = 0;
        } catch (error) {
          if (error instanceof StopSync) {
            this.logger.debug({ syncId: this.syncId, reason: error.message }, 'runner stops');
            break;
          }
          idleMs = await this.handleFailure(error);
        } finally {
          // Other syncs waiting for a round, or a long sleep ahead: hand the app connections back.
          if (this.settings.rounds.contended || idleMs >= 2000 || this.stopped)
            for (const session of Object.values(this.sessions ?? {})) await session.close();
          this.settings.rounds.release();
        }
        if (this.stopped) break;
        if (idleMs > 0) await this.sleep(idleMs);
      }
    } finally {
      for (const unsubscribe of this.unsubscribe) unsubscribe();
      for (const session of Object.values(this.sessions ?? {})) await session.close();
      this.stopped = true;
    }
  }

  /** One round of work; returns how long to sleep (0: more work waiting). */
  private async cycle(): Promise<number> {
    const sync = await this.db.getRepository(SyncEntity).findOneBy({ id: this.syncId });
    if (!sync || sync.deletedAt || sync.status !== 'active') throw new StopSync('sync is no longer active');
    const sides = await this.db.getRepository(SyncSideEntity).findBy({ syncId: this.syncId });
    const bySide = Object.fromEntries(sides.map((side) => [side.side, side])) as Partial<
      Record<SideName, SyncSideEntity>
    >;
    if (!bySide.left || !bySide.right) throw new StopSync('a side is missing');
    // A side whose credentials the app rejects is not touched until a person fixes them; then we catch up.
    if (bySide.left.authStatus !== 'ok' || bySide.right.authStatus !== 'ok') return 2000;
    await this.useSides({ left: bySide.left, right: bySide.right });
    if (!this.plan || this.plan.revision !== sync.mappingsRevision) {
      this.plan = await buildPlan(this.db, sync);
      this.checkpoints = null;
      this.subscribed = false;
    }
    const ctx = this.context(sync);
    if (sync.initialSyncPhase === 'preparing' || sync.initialSyncPhase === 'not_started') {
      await prepareInitialSync(ctx);
      await this.recovered();
      return 0;
    }
    if (sync.initialSyncPhase === 'running') {
      const progress = (sync.initialSyncProgress ?? { pairs: [] }) as unknown as InitialProgress;
      const step = await runInitialSyncStep(ctx, progress);
      if (step === 'done') {
        await finishInitialSync(ctx, progress);
        this.nextScanAt = Date.now() + this.settings.fullScanMs;
      }
      await this.recovered();
      // Key ranges run by range runners (this worker's and others'): look at them again in a second.
      return step === 'waiting' ? 1000 : 0;
    }
    // Continuous sync. Wake-ups are subscribed to from here on: during the initial sync the runner never
    // idles, and an app's checkpoint probes would take from the rate budget the initial sync writes with
    // (Airtable: 4%).
    if (!this.subscribed) {
      this.subscribe();
      this.subscribed = true;
    }
    this.checkpoints ??= await loadCheckpoints(ctx);
    let work = await pollChanges(ctx, this.checkpoints);
    work += await processQueue(ctx);
    work += await applyDecisions(ctx);
    work += await this.fullScanStep(ctx);
    await this.recovered();
    return work > 0 ? 0 : this.idleDelay();
  }

  /** Opens the two sides' sessions on the first round; later rounds refresh them from the stored sides. */
  private async useSides(bySide: Record<SideName, SyncSideEntity>): Promise<void> {
    if (this.sessions) {
      await this.sessions.left.refresh(bySide.left);
      await this.sessions.right.refresh(bySide.right);
      return;
    }
    const open = (side: SideName) =>
      openSideSession(this.syncId, bySide[side], this.cipher, this.settings, this.db);
    this.sessions = { left: open('left'), right: open('right') };
  }

  /**
   * One step of the periodic full scan (every pair, each side in turn), starting one when it is due.
   * Returns 1 when it did a step, else 0.
   */
  private async fullScanStep(ctx: EngineContext): Promise<number> {
    if (this.nextScanAt === 0) this.nextScanAt = Date.now() + this.settings.fullScanMs;
    if (!this.scan && Date.now() >= this.nextScanAt) {
      const startedAt = await storeNow(this.db);
      this.scanQueue = ctx.plan.pairs.flatMap((pair) =>
        SIDES.map((side) => ({ pair: pair.index, side, cursor: null, startedAt })),
      );
      this.scan = this.scanQueue.shift() ?? null;
      await markFullScan(this.db, this.syncId);
    }
    if (!this.scan) return 0;
    this.scan = await fullScanStep(ctx, this.scan);
    if (!this.scan) this.scan = this.scanQueue.shift() ?? null;
    if (!this.scan) {
      this.nextScanAt = Date.now() + this.settings.fullScanMs;
      await markPollingIdle(this.db, this.syncId);
    }
    return 1;
  }

  /** With nothing to do: sleep until the next queue entry is due or the scan, at most the safety poll. */
  private async idleDelay(): Promise<number> {
    const queued = await untilNextQueueEntry(this.db, this.syncId);
    const untilScan = Math.max(0, this.nextScanAt - Date.now());
    return Math.max(
      50,
      Math.min(this.settings.safetyPollMs, untilScan, queued === null ? Infinity : Math.max(50, queued)),
    );
  }

  private subscribe(): void {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    this.unsubscribe = [];
    if (!this.plan || !this.sessions) return;
    for (const side of SIDES) {
      const session = this.sessions[side];
      const tables = this.plan.pairs.map((pair) => sideEnd(pair, side).remoteId);
      this.unsubscribe.push(
        this.hub.subscribe(
          session.fingerprint,
          () => session.connect(),
          tables,
          () => this.wake(),
        ),
      );
    }
  }

  private context(sync: SyncEntity): EngineContext {
    return engineContext({
      sync,
      db: this.db,
      plan: this.plan!,
      sides: this.sessions!,
      settings: this.settings,
      guard: this.guard,
      fenced: (work) => this.fenced(work),
    });
  }

  private async fenced<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction(async (manager) => {
      if (!(await holdsLease(manager, this.syncId, this.settings.owner, this.token))) {
        this.stop();
        throw new StopSync('lease lost');
      }
      return work(manager);
    });
  }

  /** After a successful round: side-wide connection issues opened by earlier failures are resolved. */
  private async recovered(): Promise<void> {
    if (this.failedSides.size === 0) return;
    for (const side of this.failedSides)
      await resolveSideIssue(this.db, this.syncId, side as SideName, 'unreachable');
    this.failedSides.clear();
  }

  private async handleFailure(error: unknown): Promise<number> {
    this.failures += 1;
    const backoff = Math.min(30_000, 500 * 2 ** Math.min(this.failures, 6)) * (0.75 + Math.random() * 0.5);
    const side = sideOf(error);
    const kind = isConnectorError(error)
      ? error.kind
      : isRetryableWriteError(error)
        ? error.connectorKind
        : null;
    const message = error instanceof Error ? error.message : String(error);
    if (side && kind === 'auth') {
      const entity =
        (await this.db.getRepository(SyncSideEntity).findOneBy({ syncId: this.syncId, side })) ?? null;
      const declaration = entity ? findConnector(entity.connector) : undefined;
      await markCredentialRejected(this.db, {
        syncId: this.syncId,
        side,
        connector: entity?.connector ?? 'unknown',
        connectorName: declaration?.displayName ?? entity?.connector ?? 'The app',
        reason: message,
        reconnectUrl: `${this.settings.publicUrl}/app/syncs/${this.syncId}/connect/${side}`,
      });
      this.logger.warn({ syncId: this.syncId, side }, 'credentials rejected; side paused until reconnected');
      return 2000;
    }
    if (side && (kind === 'transient' || kind === 'rate_limited' || kind === 'permission' || kind === null)) {
      const connector = this.sessions?.[side].connector ?? 'unknown';
      await openSideIssue(this.db, {
        syncId: this.syncId,
        side,
        connector,
        code: 'connection_error',
        cause: 'unreachable',
        message: `The ${side} app could not be reached: ${message}`,
        remediation: {
          explanation:
            `Lockstep could not read from or write to the ${side} side (${connector}): ${message}. ` +
            `Nothing is lost: changes wait at their checkpoint and are applied when the app answers ` +
            `again.`,
          suggested_action:
            `Check that the ${side} database or app is up and reachable from Lockstep; the sync retries ` +
            `with backoff by itself and this issue clears once it succeeds.`,
          links: [],
        },
      }).catch(() => undefined);
      this.failedSides.add(side);
    } else {
      this.logger.error(
        { syncId: this.syncId, error: message, stack: error instanceof Error ? error.stack : undefined },
        'sync round failed',
      );
    }
    return backoff;
  }
}

function sideOf(error: unknown): SideName | null {
  if (typeof error === 'object' && error !== null && 'side' in error) {
    const side = (error as { side: unknown }).side;
    if (side === 'left' || side === 'right') return side;
  }
  return null;
}
