/**
 * The worker's live export consumer (queue `live-export`):
 * - job `run` `{runId}`: carries out one run (run-executor.ts); up to `LIVE_EXPORT_CONCURRENCY` at once;
 * - job `release-captures` `{liveExportId}`: the export was deleted; removes its change capture from the
 *   source;
 * - job `tick` `{}`: a Bull repeatable job every 15 s (registered at boot by every worker; Bull keeps one
 *   schedule per name and interval), queuing scheduled runs (scheduler.ts);
 * - every few seconds, orphan recovery: a running run whose heartbeat is older than
 *   `LIVE_EXPORT_STALE_SECONDS` (its worker died) is re-queued once, then failed; a queued run without a job
 *   gets one again.
 *
 * With `ENGINE_ACCOUNT_ID` set (tests, a dedicated worker), the tick and the recovery only look at that
 * account's exports. With `LIVE_EXPORT_TEST_CLOCK=1` (tests only) the tick's "now" is read from the Redis key
 * `<QUEUE_PREFIX>:live-export:clock` (milliseconds since the epoch) when it is set.
 */
import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Job, Queue } from 'bull';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { DEFAULT_JOB_OPTIONS, type JobMap, LIVE_EXPORT_JOBS, QUEUES } from '@lockstep/jobs';
import { CredentialCipher } from '@lockstep/persistence';
import { ConnectorCoordinationProvider } from '../connector-coordination';
import { RunExecutor } from './run-executor';
import { LiveExportScheduler, type TickResult } from './scheduler';

export const TICK_EVERY_MS = 15_000;
export const TEST_CLOCK_KEY = 'live-export:clock';
/** A queued run older than this without a Bull job gets one again. */
const LOST_JOB_SECONDS = 30;
/** Released change captures older than this without a live job get one again. */
const LOST_RELEASE_SECONDS = 600;

@Injectable()
export class LiveExportProcessor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('LiveExport');
  private readonly executor: RunExecutor;
  private readonly scheduler: LiveExportScheduler;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping = false;

  constructor(
    @InjectQueue(QUEUES.liveExport) private readonly queue: Queue,
    @InjectDataSource() dataSource: DataSource,
    cipher: CredentialCipher,
    private readonly config: AppConfig,
    coordination: ConnectorCoordinationProvider,
  ) {
    this.executor = new RunExecutor(dataSource, cipher, config, coordination.shared);
    this.scheduler = new LiveExportScheduler(dataSource);
  }

  async onApplicationBootstrap(): Promise<void> {
    void this.queue.process(
      LIVE_EXPORT_JOBS.run,
      this.config.LIVE_EXPORT_CONCURRENCY,
      (job: Job<JobMap['live-export']['run']>) => this.run(job.data.runId),
    );
    void this.queue.process(LIVE_EXPORT_JOBS.tick, 1, () => this.tick());
    void this.queue.process(
      LIVE_EXPORT_JOBS.releaseCaptures,
      1,
      (job: Job<JobMap['live-export']['release-captures']>) => this.releaseCaptures(job),
    );
    await this.queue.add(
      LIVE_EXPORT_JOBS.tick,
      {},
      { repeat: { every: TICK_EVERY_MS }, removeOnComplete: 10, removeOnFail: 10 },
    );
    const every = Math.max(1000, Math.min(5000, (this.config.LIVE_EXPORT_STALE_SECONDS * 1000) / 3));
    this.sweepTimer = setInterval(() => void this.sweep(), every);
    this.sweepTimer.unref();
  }

  onApplicationShutdown(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }

  async run(runId: string): Promise<{ state: string | null }> {
    return { state: await this.executor.execute(runId) };
  }

  async releaseCaptures(job: Job<JobMap['live-export']['release-captures']>): Promise<{ removed: number }> {
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const removed = await this.executor.releaseCaptures(job.data.liveExportId, lastAttempt);
    if (removed > 0)
      this.logger.log(
        { liveExportId: job.data.liveExportId, removed },
        'removed the change capture of a deleted live export',
      );
    return { removed };
  }

  /** "Now" for the scheduler: the test clock when enabled and set, else the real time. */
  async now(): Promise<Date> {
    if (this.config.LIVE_EXPORT_TEST_CLOCK) {
      const value = await this.queue.client.get(`${this.config.QUEUE_PREFIX}:${TEST_CLOCK_KEY}`);
      if (value !== null && /^\d+$/.test(value)) return new Date(Number(value));
    }
    return new Date();
  }

  async tick(): Promise<TickResult> {
    const result = await this.scheduler.tick(await this.now(), this.config.ENGINE_ACCOUNT_ID);
    for (const queued of result.queued) await this.enqueue(queued.runId, `run:${queued.runId}`);
    if (result.queued.length + result.skipped.length > 0) {
      this.logger.log(
        { queued: result.queued.map((item) => item.runId), skipped: result.skipped.length },
        'live export schedule tick',
      );
    }
    return result;
  }

  private async enqueue(runId: string, jobId: string): Promise<void> {
    await this.queue.add(LIVE_EXPORT_JOBS.run, { runId }, { ...DEFAULT_JOB_OPTIONS, jobId });
  }

  /** Orphan recovery and lost jobs (see the file comment). */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const accountId = this.config.ENGINE_ACCOUNT_ID;
      const { requeued, failed } = await this.executor.store.recoverOrphans(
        this.config.LIVE_EXPORT_STALE_SECONDS,
        accountId,
      );
      // A new job id: the dead worker's job may still be in Redis under `run:<id>`.
      for (const runId of requeued) await this.enqueue(runId, `run:${runId}:requeued`);
      if (requeued.length + failed.length > 0)
        this.logger.warn({ requeued, failed }, 'recovered live export runs of a stopped worker');
      // Released captures whose job never arrived (Redis was down at the delete) get one.
      for (const liveExportId of await this.executor.captureStore.staleReleases(
        LOST_RELEASE_SECONDS,
        accountId ?? null,
      )) {
        const job = await this.queue.getJob(`release:${liveExportId}`);
        if (!job || (await job.isCompleted()) || (await job.isFailed())) {
          await this.queue.add(
            LIVE_EXPORT_JOBS.releaseCaptures,
            { liveExportId },
            { ...DEFAULT_JOB_OPTIONS, jobId: `release:${liveExportId}:${Date.now()}` },
          );
        }
      }
      for (const runId of await this.executor.store.staleQueued(LOST_JOB_SECONDS, accountId)) {
        const jobs = await Promise.all([
          this.queue.getJob(`run:${runId}`),
          this.queue.getJob(`run:${runId}:requeued`),
        ]);
        const alive = await Promise.all(
          jobs.map(async (job) => (job ? !(await job.isCompleted()) && !(await job.isFailed()) : false)),
        );
        if (!alive.includes(true)) await this.enqueue(runId, `run:${runId}:${Date.now()}`);
      }
    } catch (error) {
      this.logger.warn(
        { error: error instanceof Error ? error.message : String(error) },
        'live export recovery sweep failed; retrying',
      );
    } finally {
      this.sweeping = false;
    }
  }
}
