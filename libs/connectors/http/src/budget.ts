/**
 * Token buckets and locks shared through Redis (`RedisCoordination`, what the API and the worker pass in
 * `ConnectContext.shared`) or kept in this process (`localCoordination()`, the fallback for tests and tools).
 *
 * A bucket is one Redis hash `{tokens, at}`: `tokens` requests are available at time `at` and it refills at
 * `ratePerSecond` up to `burst`. A pause (an app's 429) empties the bucket and moves `at` into the future, so
 * nobody takes from it before then and it refills from empty afterwards. Time is Redis' own clock (TIME), the
 * same for every process. Taking from several buckets (a base's and a token's) is all or none, in one script.
 */
import { createHash, randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import type { ConnectorCoordination, RateBudget, RateRule, SharedLocks } from '@lockstep/connectors-core';
import { ConnectorError } from '@lockstep/connectors-core';
import { LocalSignals, RedisSignals } from './signals';

const NOW_MS = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)`;

/** KEYS: one bucket per rule; ARGV: ratePerSecond and burst of each rule. Returns 0 (taken) or ms to wait. */
const TAKE_SCRIPT = `${NOW_MS}
local wait = 0
local levels = {}
local stamps = {}
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i - 1]) / 1000
  local burst = tonumber(ARGV[2 * i])
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local level = tonumber(state[1]) or burst
  local at = tonumber(state[2]) or now
  local need
  if at > now then
    need = (at - now) + math.max(0, 1 - level) / rate
  else
    level = math.min(burst, level + (now - at) * rate)
    at = now
    need = level >= 1 and 0 or (1 - level) / rate
  end
  levels[i] = level
  stamps[i] = at
  if need > wait then wait = need end
end
if wait > 0 then return math.ceil(wait) end
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i - 1]) / 1000
  local burst = tonumber(ARGV[2 * i])
  redis.call('HSET', key, 'tokens', tostring(levels[i] - 1), 'at', tostring(stamps[i]))
  redis.call('PEXPIRE', key, math.ceil(burst / rate) + 1000)
end
return 0`;

/** KEYS[1]: the bucket; ARGV[1]: pause in ms. A later resume already set stays. */
const PAUSE_SCRIPT = `${NOW_MS}
local resume = now + tonumber(ARGV[1])
local at = tonumber(redis.call('HGET', KEYS[1], 'at')) or 0
if resume > at then
  redis.call('HSET', KEYS[1], 'tokens', '0', 'at', tostring(resume))
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) + 60000)
end
return 0`;

/** KEYS[1]: the lock; ARGV[1]: the holder's token. Deletes the lock only if this holder still has it. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

type ScriptedRedis = Redis & {
  lockstepBudgetTake(...keysAndArgs: (string | number)[]): Promise<number>;
  lockstepBudgetPause(key: string, ms: number): Promise<number>;
  lockstepLockRelease(key: string, token: string): Promise<number>;
};

const DEFAULT_BURST = 1;

function checkRules(rules: readonly RateRule[]): void {
  for (const rule of rules) {
    if (!(rule.ratePerSecond > 0) || !((rule.burst ?? DEFAULT_BURST) >= 1)) {
      throw new ConnectorError(
        'unsupported',
        `Rate budget "${rule.key}" needs a positive rate and a burst of at least 1`,
      );
    }
  }
}

/** Budget and locks in Redis, shared by every process using the same Redis and `prefix`. */
export class RedisCoordination implements ConnectorCoordination {
  readonly budget: RateBudget;
  readonly locks: SharedLocks;
  readonly signals: RedisSignals;

  constructor(redis: Redis, prefix: string) {
    const client = redis as ScriptedRedis;
    // ioredis sends EVALSHA and falls back to EVAL once when Redis does not know the script yet.
    client.defineCommand('lockstepBudgetTake', { lua: TAKE_SCRIPT });
    client.defineCommand('lockstepBudgetPause', { numberOfKeys: 1, lua: PAUSE_SCRIPT });
    client.defineCommand('lockstepLockRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
    const bucket = (key: string) => `${prefix}:budget:${key}`;
    const lock = (key: string) => `${prefix}:lock:${key}`;
    this.signals = new RedisSignals(redis, prefix);
    this.budget = {
      async take(rules) {
        if (rules.length === 0) return 0;
        checkRules(rules);
        const args = rules.flatMap((rule) => [rule.ratePerSecond, rule.burst ?? DEFAULT_BURST]);
        return Number(
          await client.lockstepBudgetTake(rules.length, ...rules.map((rule) => bucket(rule.key)), ...args),
        );
      },
      async pause(key, ms) {
        await client.lockstepBudgetPause(bucket(key), Math.max(0, Math.ceil(ms)));
      },
    };
    this.locks = {
      async tryAcquire(key, ttlMs) {
        const token = randomUUID();
        const taken = await client.set(lock(key), token, 'PX', Math.ceil(ttlMs), 'NX');
        if (taken !== 'OK') return null;
        return async () => {
          await client.lockstepLockRelease(lock(key), token);
        };
      },
    };
  }
}

/** The key prefix of the service's connector budgets and locks, the same in the API and the worker. */
export function coordinationPrefix(queuePrefix: string): string {
  return `${queuePrefix}:connectors`;
}

interface LocalBucket {
  tokens: number;
  at: number;
}

/** The same buckets and locks in this process' memory (tests, tools, a connection without `shared`). */
export class LocalCoordination implements ConnectorCoordination {
  private readonly buckets = new Map<string, LocalBucket>();
  private readonly held = new Map<string, { token: string; until: number }>();
  readonly budget: RateBudget = {
    take: async (rules) => this.take(rules, Date.now()),
    pause: async (key, ms) => this.pause(key, Date.now() + ms),
  };
  readonly locks: SharedLocks = { tryAcquire: async (key, ttlMs) => this.tryAcquire(key, ttlMs) };
  readonly signals = new LocalSignals();

  private take(rules: readonly RateRule[], now: number): number {
    checkRules(rules);
    let wait = 0;
    const next: LocalBucket[] = [];
    for (const rule of rules) {
      const rate = rule.ratePerSecond / 1000;
      const burst = rule.burst ?? DEFAULT_BURST;
      const state = this.buckets.get(rule.key) ?? { tokens: burst, at: now };
      let need: number;
      let bucket: LocalBucket;
      if (state.at > now) {
        bucket = state;
        need = state.at - now + Math.max(0, 1 - state.tokens) / rate;
      } else {
        bucket = { tokens: Math.min(burst, state.tokens + (now - state.at) * rate), at: now };
        need = bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / rate;
      }
      next.push(bucket);
      wait = Math.max(wait, need);
    }
    if (wait > 0) return Math.ceil(wait);
    rules.forEach((rule, i) => this.buckets.set(rule.key, { tokens: next[i]!.tokens - 1, at: next[i]!.at }));
    return 0;
  }

  private pause(key: string, resume: number): void {
    const state = this.buckets.get(key);
    if (!state || state.at < resume) this.buckets.set(key, { tokens: 0, at: resume });
  }

  private tryAcquire(key: string, ttlMs: number): (() => Promise<void>) | null {
    const now = Date.now();
    const current = this.held.get(key);
    if (current && current.until > now) return null;
    const token = randomUUID();
    this.held.set(key, { token, until: now + ttlMs });
    return async () => {
      if (this.held.get(key)?.token === token) this.held.delete(key);
    };
  }
}

let local: LocalCoordination | null = null;

/** One in-process coordination for every connection of this process that was given no `shared`. */
export function localCoordination(): LocalCoordination {
  local ??= new LocalCoordination();
  return local;
}

/**
 * A budget key from parts that may be secret (a token: Airtable's 50 requests/s per token), so that no secret
 * reaches Redis: `budgetKeyOf('airtable', 'token', apiKey)` -> `airtable:token:<sha256 prefix>`.
 */
export function budgetKeyOf(...parts: [string, ...string[]]): string {
  const [head, ...rest] = parts;
  if (rest.length === 0) return head;
  const last = rest.pop()!;
  const digest = createHash('sha256').update(last).digest('hex').slice(0, 32);
  return [head, ...rest, digest].join(':');
}

/** Resolves after `ms`, or rejects when `signal` aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Waits until one request may go under every rule, then takes it. Waiters ask again after the wait Redis
 * named plus at most 2 ms of jitter, so processes that wait for the same refill do not ask in the same
 * millisecond. The jitter stays that small because it is lost: a bucket of burst 1 holds no more than one
 * request, so a request sent late does not let the next one go earlier (25 ms of jitter cost about 5% of an
 * Airtable base's 4.75 requests/s; a burst a little over 1, as Airtable's base budget has, gives a few
 * milliseconds of lateness back).
 */
export async function waitForBudget(
  budget: RateBudget,
  rules: readonly RateRule[],
  signal?: AbortSignal,
): Promise<void> {
  for (;;) {
    const wait = await budget.take(rules);
    if (wait <= 0) return;
    await sleep(wait + Math.random() * Math.min(2, wait / 4), signal);
  }
}

interface WindowState {
  /** Requests sent and not answered yet. */
  inFlight: number;
  /** When each answered request stops counting (its answer + `ms`), oldest first. */
  until: number[];
}

/**
 * The rules' windows (`RateRule.window`) for every connection of this process: a request enters when each of its
 * keys has fewer than `requests` requests in flight or answered less than `ms` ago, and the function `enter`
 * resolves with is called once its answer (or failure) is in. A bucket paces requests when they leave; a window
 * also covers their way to the app: a request that arrived late still counts until `ms` after its answer, so
 * requests that bunched on the way never make more than `requests` in any window the app counts.
 */
export class RequestWindows {
  private readonly states = new Map<string, WindowState>();

  async enter(rules: readonly RateRule[], signal?: AbortSignal): Promise<() => void> {
    const windowed = rules.filter((rule) => rule.window);
    if (windowed.length === 0) return () => undefined;
    this.forgetIdle(Date.now());
    for (;;) {
      const now = Date.now();
      let wait = 0;
      for (const rule of windowed) {
        const state = this.state(rule.key, now);
        if (state.inFlight + state.until.length < rule.window!.requests) continue;
        // Full: the oldest answered request frees a place at its time; with all in flight, look again soon.
        wait = Math.max(wait, state.until.length > 0 ? state.until[0]! - now : 5);
      }
      if (wait <= 0) {
        for (const rule of windowed) this.state(rule.key, now).inFlight += 1;
        let left = false;
        return () => {
          if (left) return;
          left = true;
          const done = Date.now();
          for (const rule of windowed) {
            const state = this.state(rule.key, done);
            state.inFlight -= 1;
            state.until.push(done + rule.window!.ms);
          }
        };
      }
      await sleep(Math.max(1, wait), signal);
    }
  }

  /** Drops the keys nobody uses now (a process that met many bases keeps no state for them). */
  private forgetIdle(now: number): void {
    for (const [key, state] of this.states)
      if (state.inFlight === 0 && state.until.every((until) => until <= now)) this.states.delete(key);
  }

  private state(key: string, now: number): WindowState {
    let state = this.states.get(key);
    if (!state) {
      state = { inFlight: 0, until: [] };
      this.states.set(key, state);
    }
    while (state.until.length > 0 && state.until[0]! <= now) state.until.shift();
    return state;
  }
}

let windows: RequestWindows | null = null;

/** The one `RequestWindows` of this process. */
export function requestWindows(): RequestWindows {
  windows ??= new RequestWindows();
  return windows;
}
