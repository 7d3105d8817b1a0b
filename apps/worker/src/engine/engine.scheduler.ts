/**
 * Hands syncs to runners. Every second: claim the lease of active syncs nobody owns (or whose owner's lease
 * expired), renew the leases this worker holds (one statement), stop runners whose sync was paused, deleted
 * or taken over, and wake runners that have due queue entries, a person's pending-delete decision or a retried
 * connection issue (`sync_leases.wake_requested_at`, set by the API). A lease is a row with an owner, an expiry
 * and a fencing token that grows with every change of owner; the engine's commits check the token, so a worker
 * that lost its lease (stalled, partitioned) can no longer commit.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { CredentialCipher } from '@lockstep/persistence';
import { ConnectorCoordinationProvider } from '../connector-coordination';
import { ChangeHub } from './change-hub';
import { returnedRows } from './store';
import { Rounds, SyncRunner } from './sync-runner';

@Injectable()
export class EngineScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Engine');
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly runners = new Map<string, SyncRunner>();
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
    await Promise.all([...this.runners.values()].map((runner) => runner.done));
    // Released by expiring, not deleting: the next owner's fencing token continues from this one.
    await this.db.query(`UPDATE sync_leases SET expires_at = now() - interval '1 second' WHERE owner = $1`, [this.owner]).catch(() => undefined);
    await this.hub.close();
  }

  /** For tests and the status of this worker. */
  get owned(): string[] {
    return [...this.runners.keys()];
  }

  /**
   * Looks for syncs to run now rather than at the next tick (a sync was just started or activated). A tick already
   * running is followed by another one, since it may have looked before the sync was started. The runner this
   * worker already has for `syncId` is woken too: a sync paused and started again before a tick saw the pause
   * keeps its runner, which would otherwise sleep until its safety poll before it reads the new phase.
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
      const ttl = this.config.ENGINE_LEASE_SECONDS;
      // Forget runners that ended by themselves (paused, lease lost).
      for (const [id, runner] of this.runners) {
        if (runner.isStopped) {
          this.runners.delete(id);
          await this.db.query(`UPDATE sync_leases SET expires_at = now() - interval '1 second' WHERE sync_id = $1 AND owner = $2 AND token = $3`, [id, this.owner, runner.token]);
        }
      }
      const mine = [...this.runners.keys()];
      if (mine.length > 0) {
        const renewed = returnedRows<{ sync_id: string }>(
          await this.db.query(`UPDATE sync_leases SET expires_at = now() + make_interval(secs => $3) WHERE owner = $1 AND sync_id = ANY($2::text[]) RETURNING sync_id`, [this.owner, mine, ttl]),
        );
        const kept = new Set(renewed.map((row) => row.sync_id));
        for (const id of mine) if (!kept.has(id)) this.runners.get(id)?.stop();
        const active: { id: string }[] = await this.db.query(`SELECT id FROM syncs WHERE id = ANY($1::text[]) AND status = 'active' AND deleted_at IS NULL`, [mine]);
        const still = new Set(active.map((row) => row.id));
        for (const id of mine) if (!still.has(id)) this.runners.get(id)?.stop();
        const due: { sync_id: string }[] = await this.db.query(
          `SELECT DISTINCT sync_id FROM record_queue WHERE sync_id = ANY($1::text[]) AND not_before <= now() AND attempts = 0
           UNION SELECT DISTINCT sync_id FROM pending_deletes WHERE sync_id = ANY($1::text[]) AND requested_action IS NOT NULL AND applied_at IS NULL`,
          [mine],
        );
        for (const row of due) this.runners.get(row.sync_id)?.wake();
        // A person retried a connection issue (`POST /sync/issues/{id}/retry`): try again now, not after the failure backoff.
        const asked = returnedRows<{ sync_id: string }>(
          await this.db.query(`UPDATE sync_leases SET wake_requested_at = NULL WHERE owner = $1 AND sync_id = ANY($2::text[]) AND wake_requested_at IS NOT NULL RETURNING sync_id`, [this.owner, mine]),
        );
        for (const row of asked) this.runners.get(row.sync_id)?.wake();
      }
      const room = this.config.ENGINE_MAX_SYNCS - this.runners.size;
      if (room <= 0) return;
      const candidates: { id: string }[] = await this.db.query(
        `SELECT s.id FROM syncs s LEFT JOIN sync_leases l ON l.sync_id = s.id
         WHERE s.status = 'active' AND s.deleted_at IS NULL AND (l.sync_id IS NULL OR l.expires_at < now()) AND NOT (s.id = ANY($1::text[]))
           AND ($3::text IS NULL OR s.account_id = $3)
         ORDER BY s.id LIMIT $2`,
        [mine, room, this.config.ENGINE_ACCOUNT_ID ?? null],
      );
      for (const { id } of candidates) {
        const claimed: { token: string }[] = await this.db.query(
          `INSERT INTO sync_leases (sync_id, owner, token, expires_at) VALUES ($1, $2, 1, now() + make_interval(secs => $3))
           ON CONFLICT (sync_id) DO UPDATE SET owner = EXCLUDED.owner, token = sync_leases.token + 1, expires_at = EXCLUDED.expires_at
             WHERE sync_leases.expires_at < now()
           RETURNING token::text AS token`,
          [id, this.owner, ttl],
        );
        if (claimed.length === 0) continue;
        const runner = new SyncRunner(id, claimed[0]!.token, this.db, this.cipher, this.hub, {
          owner: this.owner,
          egress: { allowPrivate: this.config.EGRESS_ALLOW_PRIVATE, allowLoopback: this.config.EGRESS_ALLOW_LOOPBACK },
          shared: this.coordination.shared,
          publicUrl: this.config.publicUrl,
          pageSize: this.config.ENGINE_PAGE_SIZE,
          writeBatch: this.config.ENGINE_WRITE_BATCH,
          fullScanMs: this.config.ENGINE_FULL_SCAN_SECONDS * 1000,
          safetyPollMs: 120_000,
          rounds: this.rounds,
        });
        this.runners.set(id, runner);
        this.logger.log({ syncId: id, token: claimed[0]!.token }, 'sync picked up');
      }
    } catch (error) {
      this.logger.error({ error: error instanceof Error ? error.message : String(error) }, 'engine tick failed');
    } finally {
      this.ticking = false;
      if (this.again) void this.tick();
    }
  }
}
