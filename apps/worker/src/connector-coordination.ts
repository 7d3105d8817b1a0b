import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '@lockstep/config';
import { coordinationPrefix, RedisCoordination } from '@lockstep/connectors-http';

/**
 * The rate budgets, locks and change signals this worker's connections share with the other workers and the API
 * (`ConnectContext.shared`): one Redis connection of its own, keys under `<QUEUE_PREFIX>:connectors:`.
 */
@Injectable()
export class ConnectorCoordinationProvider implements OnApplicationShutdown {
  readonly shared: RedisCoordination;
  private readonly redis: Redis;

  constructor(config: AppConfig) {
    this.redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2 });
    // A request that cannot read its budget fails as `transient` (the engine retries it); no crash.
    this.redis.on('error', () => undefined);
    this.shared = new RedisCoordination(this.redis, coordinationPrefix(config.QUEUE_PREFIX));
  }

  onApplicationShutdown(): void {
    this.shared.signals.close();
    this.redis.disconnect();
  }
}
