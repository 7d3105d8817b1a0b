import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';
import { RedisClient } from '../redis/redis.module';

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Seconds until the budget refills. */
  reset: number;
  window: number;
  exceeded: boolean;
}

/**
 * Per-key request budget (spec section 8): RATE_LIMIT_PER_MINUTE requests per window, counted in Redis so
 * every API instance shares one budget. Fixed windows aligned to the clock; every request counts.
 */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger('RateLimit');

  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisClient,
  ) {}

  async consume(keyId: string, now = Date.now()): Promise<RateLimitState | null> {
    const windowMs = this.config.RATE_LIMIT_WINDOW_SECONDS * 1000;
    const limit = this.config.RATE_LIMIT_PER_MINUTE;
    const windowIndex = Math.floor(now / windowMs);
    const counter = `${this.config.QUEUE_PREFIX}:ratelimit:${keyId}:${windowIndex}`;
    try {
      const result = await this.redis.client.multi().incr(counter).pexpire(counter, windowMs * 2).exec();
      const used = Number(result?.[0]?.[1] ?? 0);
      const reset = Math.max(1, Math.ceil(((windowIndex + 1) * windowMs - now) / 1000));
      return { limit, remaining: Math.max(0, limit - used), reset, window: this.config.RATE_LIMIT_WINDOW_SECONDS, exceeded: used > limit };
    } catch (error) {
      // Redis unreachable: serve the request rather than refuse everyone; /healthz reports the outage.
      this.logger.warn({ err: error }, 'rate limit counter unavailable');
      return null;
    }
  }

  /** `RateLimit-Policy` / `RateLimit` (IETF httpapi draft) and the `RateLimit-Limit/-Remaining/-Reset` trio. */
  static headers(state: RateLimitState): Record<string, string> {
    return {
      'RateLimit-Policy': `"default";q=${state.limit};w=${state.window}`,
      RateLimit: `"default";r=${state.remaining};t=${state.reset}`,
      'RateLimit-Limit': String(state.limit),
      'RateLimit-Remaining': String(state.remaining),
      'RateLimit-Reset': String(state.reset),
    };
  }
}
