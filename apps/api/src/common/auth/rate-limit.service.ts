import { Injectable, Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { AppConfig } from '@lockstep/config';
import { keyGenerationKey } from '../../api-keys/key-generation';
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
 * A counted request: the budget, and the key generation read in the same round trip (see `KeyGeneration`).
 */
export interface Consumed {
  state: RateLimitState;
  generation: string;
}

/**
 * Counts one request and reads the key generation in one round trip: INCR and PEXPIRE of the window's counter
 * (exactly what MULTI did before), then GET of the generation.
 */
const CONSUME_SCRIPT = `
local used = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {used, redis.call('GET', KEYS[2]) or '0'}`;

type ScriptedRedis = Redis & {
  lockstepConsume(counter: string, generation: string, ttlMs: number): Promise<[number, string]>;
};

/**
 * Per-key request budget (spec section 8): RATE_LIMIT_PER_MINUTE requests per window, counted in Redis so
 * every API instance shares one budget. Fixed windows aligned to the clock; every request counts.
 */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger('RateLimit');
  private readonly client: ScriptedRedis;
  private readonly generationKey: string;

  constructor(
    private readonly config: AppConfig,
    redis: RedisClient,
  ) {
    this.client = redis.client as ScriptedRedis;
    // ioredis sends EVALSHA and falls back to EVAL once when Redis does not know the script yet.
    this.client.defineCommand('lockstepConsume', { numberOfKeys: 2, lua: CONSUME_SCRIPT });
    this.generationKey = keyGenerationKey(config);
  }

  /** Null when Redis is unreachable: the request is served (never refuse everyone), `/healthz` reports it. */
  async consume(keyId: string, now = Date.now()): Promise<Consumed | null> {
    const windowMs = this.config.RATE_LIMIT_WINDOW_SECONDS * 1000;
    const limit = this.config.RATE_LIMIT_PER_MINUTE;
    const windowIndex = Math.floor(now / windowMs);
    const counter = `${this.config.QUEUE_PREFIX}:ratelimit:${keyId}:${windowIndex}`;
    try {
      const [used, generation] = await this.client.lockstepConsume(counter, this.generationKey, windowMs * 2);
      const reset = Math.max(1, Math.ceil(((windowIndex + 1) * windowMs - now) / 1000));
      const state = {
        limit,
        remaining: Math.max(0, limit - used),
        reset,
        window: this.config.RATE_LIMIT_WINDOW_SECONDS,
        exceeded: used > limit,
      };
      return { state, generation };
    } catch (error) {
      this.logger.warn({ err: error }, 'rate limit counter unavailable');
      return null;
    }
  }

  /**
   * `RateLimit-Policy` / `RateLimit` (IETF httpapi draft) and the `RateLimit-Limit/-Remaining/-Reset` trio.
   */
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
