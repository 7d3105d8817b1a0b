/**
 * Hands syncs to runners. Every second: claim the lease of active syncs nobody owns (or whose owner's lease
 * expired), renew the leases this worker holds (one statement), stop runners whose sync was paused, deleted
 * or taken over, and wake runners that have due queue entries, a person's pending-delete decision or a
 * retried connection issue (`sync_leases.wake_requested_at`, set by the API). A lease is a row with an owner,
 * an expiry and a fencing token that grows with every change of owner; the engine's commits check the token,
 * so a worker that lost its lease (stalled, partitioned) can no longer commit.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import {
  activeSyncIds,
  claimLease,
  claimRange,
  CredentialCipher,
  leasableSyncs,
  releaseLease,
  releaseLeasesOf,
  releaseRangesOf,
  renewLeases,
  renewRanges,
  syncsWithDueWork,
  takeWakeRequests,
} from '@lockstep/persistence';
import { ConnectorCoordinationProvider } from '../connector-coordination';
import { ChangeHub } from './change-hub';
import { RangeRunner } from './range-runner';
import { Rounds, type RunnerSettings, SyncRunner } from './sync-runner';
import { configureStageTimes } from './stage-times';

@Injectable()
export class EngineScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Engine');
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly runners = new Map<string, SyncRunner>();
  /**
   * Key ranges of large initial syncs this worker runs, whoever owns their sync: one at a time, since one
   * range's pipelined pass already keeps about a core busy; a deployment adds throughput with workers.
   */
  private rangeRunner: RangeRunner | null = null;
  /** Range runs that failed in a row, and until when no range is claimed (jittered backoff, as a runner's). */
  private rangeFailures = 0;
  private rangeBackoffUntil = 0;
  private readonly hub = new ChangeHub();
  private readonly rounds: Rounds;
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  /** A wake-up came while a tick was running: tick again when it ends. */
  private again = false;
  private stopping = false;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly config: AppConfig,
    private readonly coordination: ConnectorCoordinationProvider,
  ) {
    this.rounds = new Rounds(config.ENGINE_CONCURRENCY);
    configureStageTimes(config.ENGINE_STAGE_TIMES_FILE);
  }

  onApplicationBootstrap(): void {
    if (!this.config.ENGINE_ENABLED) return;
    this.timer = setInterval(() => void this.tick(), 1000);
    void this.tick();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    for (const runner of this.runners.values()) runner.stop();
    this.rangeRunner?.stop();
    await Promise.all([...this.runners.values()].map((runner) => runner.done));
    await this.rangeRunner?.done;
    // Released by expiring, not deleting: the next owner's fencing token continues from this one.
    await releaseLeasesOf(this.db, this.owner).catch(() => undefined);
    await releaseRangesOf(this.db, this.owner).catch(() => undefined);
    await this.hub.close();
  }

  /** For tests and the status of this worker. */
  get owned(): string[] {
    return [...this.runners.keys()];
  }

  /**
   * Looks for syncs to run now rather than at the next tick (a sync was just started or activated). A tick
   * already running is followed by another one, since it may have looked before the sync was started. The
   * runner this worker already has for `syncId` is woken too: a sync paused and started again before a tick
   * saw the pause keeps its runner, which would otherwise sleep until its safety poll before it reads the new
   * phase.
   */
  wake(syncId?: string): void {
    if (!this.timer || this.stopping) return;
    if (syncId) this.runners.get(syncId)?.wake();
    if (this.ticking) this.again = true;
    else void this.tick();
  }

  async tick(): Promise<void> {
    if (this.ticking || this.stopping) return;
    this.ticking = true;
    this.again = false;
    try {
      await this.checkRunners();
      await this.pickUpSyncs();
      await this.pickUpRange();
    } catch (error) {
      this.logger.error(
        { error: error instanceof Error ? error.message : String(error) },
        'engine tick failed',
      );
    } finally {
      this.ticking = false;
      if (this.again) void this.tick();
    }
  }

  /**
   * The runners this worker has: forgets the ones that ended by themselves, renews their leases, stops the
   * ones whose sync was paused, deleted or taken over, and wakes the ones with work waiting.
   */
  private async checkRunners(): Promise<void> {
    // Forget runners that ended by themselves (paused, lease lost).
    for (const [id, runner] of this.runners) {
      if (runner.isStopped) {
        this.runners.delete(id);
        await releaseLease(this.db, id, this.owner, runner.token);
      }
    }
    const mine = [...this.runners.keys()];
    if (mine.length === 0) return;
    const kept = new Set(await renewLeases(this.db, this.owner, mine, this.config.ENGINE_LEASE_SECONDS));
    for (const id of mine) if (!kept.has(id)) this.runners.get(id)?.stop();
    const still = new Set(await activeSyncIds(this.db, mine));
    for (const id of mine) if (!still.has(id)) this.runners.get(id)?.stop();
    for (const id of await syncsWithDueWork(this.db, mine)) this.runners.get(id)?.wake();
    // A person retried a connection issue (`POST /sync/issues/{id}/retry`): try again now, not after the
    // failure backoff.
    for (const id of await takeWakeRequests(this.db, this.owner, mine)) this.runners.get(id)?.wake();
  }

  /**
   * Claims the leases of active syncs nobody runs, as many as this worker has room for, and starts their
   * runners.
   */
  private async pickUpSyncs(): Promise<void> {
    const room = this.config.ENGINE_MAX_SYNCS - this.runners.size;
    if (room <= 0) return;
    const ttl = this.config.ENGINE_LEASE_SECONDS;
    const candidates = await leasableSyncs(this.db, {
      exclude: [...this.runners.keys()],
      limit: room,
      accountId: this.config.ENGINE_ACCOUNT_ID ?? null,
    });
    for (const id of candidates) {
      const token = await claimLease(this.db, id, this.owner, ttl);
      if (token === null) continue;
      const runner = new SyncRunner(id, token, this.db, this.cipher, this.hub, this.runnerSettings());
      this.runners.set(id, runner);
      this.logger.log({ syncId: id, token }, 'sync picked up');
    }
  }

  /**
   * Renews the lease of the range this worker runs, or claims a free one (of any sync in its initial sync's
   * running phase, `FOR UPDATE SKIP LOCKED`) when it runs none.
   */
  private async pickUpRange(): Promise<void> {
    const ttl = this.config.ENGINE_LEASE_SECONDS;
    if (this.rangeRunner && !this.rangeRunner.ended) {
      // A runner told to stop ends within a step, then releases its range itself.
      if (!this.rangeRunner.isStopped) await renewRanges(this.db, this.owner, ttl);
      return;
    }
    if (this.rangeRunner) this.rangeFailed(this.rangeRunner.failed);
    this.rangeRunner = null;
    if (Date.now() < this.rangeBackoffUntil) return;
    const range = await claimRange(this.db, {
      owner: this.owner,
      ttlSeconds: ttl,
      accountId: this.config.ENGINE_ACCOUNT_ID ?? null,
    });
    if (!range) return;
    const runner = new RangeRunner(range, this.db, this.cipher, this.runnerSettings());
    this.rangeRunner = runner;
    // The next range is claimed at once rather than at the next tick, and the sync's runner (when this worker
    // owns it) sees a last range finished without waiting out its one-second look.
    void runner.done.then(() => {
      this.runners.get(range.syncId)?.wake();
      this.wake();
    });
    this.logger.log(
      { syncId: range.syncId, pair: range.pair, side: range.side, range: range.index },
      'range picked up',
    );
  }

  /**
   * A range run that failed (an app unreachable, a store error) makes the next claim wait, longer each time in a
   * row, so a side that is down is not hammered every second; the range itself is free for any worker.
   */
  private rangeFailed(failed: boolean): void {
    this.rangeFailures = failed ? this.rangeFailures + 1 : 0;
    if (!failed) return;
    const backoff = Math.min(30_000, 500 * 2 ** Math.min(this.rangeFailures, 6));
    this.rangeBackoffUntil = Date.now() + backoff * (0.75 + Math.random() * 0.5);
  }

  private runnerSettings(): RunnerSettings {
    return {
      owner: this.owner,
      egress: {
        allowPrivate: this.config.EGRESS_ALLOW_PRIVATE,
        allowLoopback: this.config.EGRESS_ALLOW_LOOPBACK,
      },
      shared: this.coordination.shared,
      connectorSettings: this.config.connectorSettings,
      oauthClient: (type) => this.config.connectorOAuthClient(type),
      publicUrl: this.config.publicUrl,
      pageSize: this.config.ENGINE_PAGE_SIZE,
      writeBatch: this.config.ENGINE_WRITE_BATCH,
      ranges: { minRows: this.config.ENGINE_RANGE_MIN_ROWS, count: this.config.ENGINE_RANGES },
      fullScanMs: this.config.ENGINE_FULL_SCAN_SECONDS * 1000,
      safetyPollMs: 120_000,
      rounds: this.rounds,
    };
  }
}
