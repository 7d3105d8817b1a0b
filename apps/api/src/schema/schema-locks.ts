import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';
import type { SideName } from '@lockstep/persistence';
import { RedisClient } from '../common/redis/redis.module';

/** A lock is held at most this long (a crashed loader frees it by expiry). */
export const SCHEMA_LOCK_TTL_MS = 60_000;
/** How long an internal caller (mappings) waits for another loader before loading anyway. */
const WAIT_MS = 15_000;
const POLL_MS = 200;

/**
 * Deletes the key only while it still holds our token: never frees a lock another loader took after expiry.
 */
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

export const BUSY = Symbol('schema-busy');
export type Busy = typeof BUSY;

/** What to do when another request holds the lock: answer "loading" (HTTP 202) or wait for it. */
export type WhenBusy = 'busy' | 'wait';

/**
 * Redis locks that let one request at a time load a side's table list or a table's field list from the app
 * (`SET key token NX PX`), shared by every API instance. They only spare the app duplicate loads: the
 * writes are kept consistent by row locks in the store either way. When Redis is unreachable the load goes
 * ahead unlocked.
 */
@Injectable()
export class SchemaLocks {
  private readonly logger = new Logger('SchemaLocks');

  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisClient,
  ) {}

  tablesKey(syncId: string, side: SideName): string {
    return `${this.config.QUEUE_PREFIX}:schema-load:tables:${syncId}:${side}`;
  }

  fieldsKey(tableId: string): string {
    return `${this.config.QUEUE_PREFIX}:schema-load:fields:${tableId}`;
  }

  /**
   * Runs `work` holding the lock `key`. When another holder has it: returns BUSY (`busy`), or polls until it
   * is free and takes it (`wait`), running `work` unlocked once the wait exceeds 15 s.
   */
  async run<T>(key: string, whenBusy: WhenBusy, work: () => Promise<T>): Promise<T | Busy> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const token = await this.acquire(key);
      if (token !== null) {
        try {
          return await work();
        } finally {
          await this.release(key, token);
        }
      }
      if (whenBusy === 'busy') return BUSY;
      if (Date.now() >= deadline) return work();
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** The token now holding the lock, or null when another holder has it ('' when Redis is unreachable). */
  private async acquire(key: string): Promise<string | null> {
    const token = randomUUID();
    try {
      return (await this.redis.client.set(key, token, 'PX', SCHEMA_LOCK_TTL_MS, 'NX')) === 'OK'
        ? token
        : null;
    } catch (error) {
      this.logger.warn({ err: error, key }, 'schema lock unavailable; loading without it');
      return '';
    }
  }

  private async release(key: string, token: string): Promise<void> {
    if (token === '') return;
    await this.redis.client
      .eval(RELEASE_SCRIPT, 1, key, token)
      .catch((error: unknown) =>
        this.logger.warn({ err: error, key }, 'schema lock release failed; it expires'),
      );
  }
}
