import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';
import { RedisClient } from '../common/redis/redis.module';

/** The Redis key of the key generation (one counter per QUEUE_PREFIX, shared by every API process). */
export const keyGenerationKey = (config: AppConfig): string => `${config.QUEUE_PREFIX}:api-keys:generation`;

/**
 * The key generation: a counter in Redis bumped after every change that can refuse a key (a revocation, an
 * account's plan, API admission or subscription). Every API process caches verified keys tagged with the
 * generation read before the store was; the rate limit reads the generation on every request in its round
 * trip, so a bump anywhere (API, console, operator CLI) makes every process ask the store again on its next
 * request with any key.
 */
@Injectable()
export class KeyGeneration {
  private readonly logger = new Logger('KeyGeneration');
  private readonly key: string;

  constructor(
    config: AppConfig,
    private readonly redis: RedisClient,
  ) {
    this.key = keyGenerationKey(config);
  }

  /** Null when Redis is unreachable (nothing may be cached then). */
  async current(): Promise<string | null> {
    try {
      return (await this.redis.client.get(this.key)) ?? '0';
    } catch {
      return null;
    }
  }

  /**
   * Called after the change is committed. Unreachable Redis: the cache's time limit still bounds the change.
   */
  async bump(): Promise<void> {
    try {
      await this.redis.client.incr(this.key);
    } catch (error) {
      this.logger.warn(
        { err: error },
        'key generation not bumped; cached keys refresh within their time limit',
      );
    }
  }
}
