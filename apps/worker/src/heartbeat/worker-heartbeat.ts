import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { AppConfig } from '@lockstep/config';
import { recordWorkerHeartbeat, removeWorkerHeartbeat, WORKER_HEARTBEAT } from '@lockstep/jobs';

/**
 * Tells the API's `/healthz` (and the worker image's healthcheck) that this worker process is alive: a beat
 * in Redis every `WORKER_HEARTBEAT.everyMs`, under the queue prefix. The id starts with the host name, which
 * is what the healthcheck of a container matches. A clean shutdown removes the entry; a killed worker's entry
 * goes stale.
 */
@Injectable()
export class WorkerHeartbeat implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly logger = new Logger('Heartbeat');
  private readonly redis: Redis;
  private timer: NodeJS.Timeout | null = null;
  /** Logged once per outage, not on every beat. */
  private failing = false;

  constructor(private readonly config: AppConfig) {
    this.redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1 });
    this.redis.on('error', () => undefined); // a failed beat is logged below; Bull reports the outage itself
  }

  onApplicationBootstrap(): void {
    void this.beat();
    this.timer = setInterval(() => void this.beat(), WORKER_HEARTBEAT.everyMs);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await removeWorkerHeartbeat(this.redis, this.config.QUEUE_PREFIX, this.id).catch(() => undefined);
    this.redis.disconnect();
  }

  private async beat(): Promise<void> {
    try {
      await recordWorkerHeartbeat(this.redis, this.config.QUEUE_PREFIX, this.id);
      if (this.failing) this.logger.log('heartbeat recorded again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.logger.warn({ err: error }, 'heartbeat not recorded (Redis unavailable)');
      this.failing = true;
    }
  }
}
