import { Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '@lockstep/config';

/** One shared ioredis client (rate limit counters, health). Bull keeps its own connections. */
@Injectable()
export class RedisClient implements OnApplicationShutdown {
  readonly client: Redis;

  constructor(@Inject(AppConfig) config: AppConfig) {
    this.client = new Redis(config.REDIS_URL, {
      lazyConnect: false,
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
    });
    // Reported through /healthz and failing requests, not as crashes.
    this.client.on('error', () => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    this.client.disconnect();
  }
}

@Global()
@Module({ providers: [RedisClient], exports: [RedisClient] })
export class RedisModule {}
