import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { readWorkerHeartbeats, type WorkerHeartbeats } from '@lockstep/jobs';
import { StoreProbe } from '@lockstep/persistence';
import { Public } from '../common/auth/auth.decorators';
import { RedisClient } from '../common/redis/redis.module';

const TIMEOUT_MS = 2000;

async function withTimeout<T>(probe: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      probe(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), TIMEOUT_MS))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const check = (probe: () => Promise<unknown>): Promise<'ok' | 'unavailable'> =>
  withTimeout(probe).then(
    () => 'ok' as const,
    () => 'unavailable' as const,
  );

interface WorkerCheck {
  /**
   * `ok`: at least one worker beat within the stale window; `missing`: none did; `unknown`: Redis did not
   * answer.
   */
  status: 'ok' | 'missing' | 'unknown';
  alive: number;
  last_heartbeat_at: string | null;
}

function workerCheck(heartbeats: WorkerHeartbeats | null): WorkerCheck {
  if (!heartbeats) return { status: 'unknown', alive: 0, last_heartbeat_at: null };
  const { alive, lastBeatAt } = heartbeats;
  return {
    status: alive > 0 ? 'ok' : 'missing',
    alive,
    last_heartbeat_at: lastBeatAt?.toISOString() ?? null,
  };
}

/**
 * `GET /healthz`, for load balancers and people. 503 `unavailable` when the service store or Redis does not
 * answer: this API process cannot serve. A missing worker heartbeat is only reported (`degraded`, still 200):
 * the API serves every request without a worker (syncs wait until one is back), and a load balancer must not
 * take healthy API processes out of rotation while a worker restarts.
 */
@ApiExcludeController()
@Public()
@Controller('healthz')
export class HealthController {
  private readonly store: StoreProbe;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    private readonly redis: RedisClient,
    private readonly config: AppConfig,
  ) {
    this.store = new StoreProbe(dataSource.manager);
  }

  @Get()
  async health(@Res() response: Response): Promise<void> {
    // Reading the heartbeats is the Redis check too: one Redis command per probe.
    const [database, heartbeats] = await Promise.all([
      check(() => this.store.ping()),
      withTimeout(() => readWorkerHeartbeats(this.redis.client, this.config.QUEUE_PREFIX)).catch(() => null),
    ]);
    const redis = heartbeats ? 'ok' : 'unavailable';
    const worker = workerCheck(heartbeats);
    const serving = database === 'ok' && redis === 'ok';
    const status = !serving ? 'unavailable' : worker.status === 'ok' ? 'ok' : 'degraded';
    response.status(serving ? 200 : 503).json({ status, checks: { database, redis, worker } });
  }
}
