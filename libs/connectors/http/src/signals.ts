/**
 * `ChangeSignals` (libs/connectors/core/src/coordination.ts): an app's webhooks, received by the API, wake the
 * connections that read the app in the workers. In Redis: a channel is a pub/sub channel plus a sorted set of
 * hints scored by an increasing position (kept to the last `MAX_HINTS` and 7 days), so several readers of one
 * channel each read the hints after their own checkpoint. In this process (`LocalSignals`): the same in memory.
 */
import { EventEmitter } from 'node:events';
import type { ChangeSignals, SignalHint } from '@lockstep/connectors-core';
import type Redis from 'ioredis';

/** Hints a channel keeps; a reader further behind relies on the engine's full scan for what it missed. */
export const MAX_HINTS = 10_000;
const KEEP_SECONDS = 7 * 86_400;

// KEYS: position counter, hint log. ARGV: max hints, keep seconds, hints... Returns the last position.
const PUBLISH_SCRIPT = `
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
for i = 3, #ARGV do
  last = redis.call('INCR', KEYS[1])
  redis.call('ZADD', KEYS[2], last, last .. ':' .. ARGV[i])
end
if #ARGV > 2 then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[1]) - 1)
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
end
return last
`;

type ScriptedRedis = Redis & {
  lockstepSignalPublish(counter: string, log: string, ...args: (string | number)[]): Promise<number>;
};

function parseHints(entries: string[]): SignalHint[] {
  return entries.map((entry) => {
    const at = entry.indexOf(':');
    return { position: Number(entry.slice(0, at)), hint: entry.slice(at + 1) };
  });
}

export class RedisSignals implements ChangeSignals {
  private readonly client: ScriptedRedis;
  private subscriber: Redis | null = null;
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    this.client = redis as ScriptedRedis;
    this.client.defineCommand('lockstepSignalPublish', { numberOfKeys: 2, lua: PUBLISH_SCRIPT });
  }

  private key(channel: string, part: 'n' | 'log' | 'wake'): string {
    return `${this.prefix}:signal:${channel}:${part}`;
  }

  async publish(channel: string, hints: readonly string[]): Promise<void> {
    if (hints.length > 0) {
      await this.client.lockstepSignalPublish(
        this.key(channel, 'n'),
        this.key(channel, 'log'),
        MAX_HINTS,
        KEEP_SECONDS,
        ...hints,
      );
    }
    await this.client.publish(this.key(channel, 'wake'), '1');
  }

  async read(channel: string, after: number, limit: number): Promise<{ hints: SignalHint[]; last: number }> {
    const [entries, last] = await Promise.all([
      this.client.zrangebyscore(this.key(channel, 'log'), `(${after}`, '+inf', 'LIMIT', 0, limit),
      this.client.get(this.key(channel, 'n')),
    ]);
    return { hints: parseHints(entries), last: Number(last ?? 0) };
  }

  async subscribe(channel: string, onSignal: () => void): Promise<() => Promise<void>> {
    const name = this.key(channel, 'wake');
    if (!this.subscriber) {
      const subscriber = this.client.duplicate();
      subscriber.on('error', () => undefined);
      subscriber.on('message', (from: string) => this.listeners.get(from)?.forEach((listener) => listener()));
      this.subscriber = subscriber;
    }
    let set = this.listeners.get(name);
    if (!set) {
      set = new Set();
      this.listeners.set(name, set);
      await this.subscriber.subscribe(name);
    }
    set.add(onSignal);
    return async () => {
      const current = this.listeners.get(name);
      if (!current?.delete(onSignal) || current.size > 0) return;
      this.listeners.delete(name);
      await this.subscriber?.unsubscribe(name).catch(() => undefined);
    };
  }

  /** Closes the subscriber connection (the caller's own connection stays open). */
  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = null;
    this.listeners.clear();
  }
}

export class LocalSignals implements ChangeSignals {
  private readonly events = new EventEmitter().setMaxListeners(0);
  private readonly logs = new Map<string, { last: number; hints: SignalHint[] }>();

  async publish(channel: string, hints: readonly string[]): Promise<void> {
    const log = this.logs.get(channel) ?? { last: 0, hints: [] };
    for (const hint of hints) log.hints.push({ position: ++log.last, hint });
    if (log.hints.length > MAX_HINTS) log.hints.splice(0, log.hints.length - MAX_HINTS);
    this.logs.set(channel, log);
    this.events.emit(channel);
  }

  async read(channel: string, after: number, limit: number): Promise<{ hints: SignalHint[]; last: number }> {
    const log = this.logs.get(channel) ?? { last: 0, hints: [] };
    return { hints: log.hints.filter((entry) => entry.position > after).slice(0, limit), last: log.last };
  }

  async subscribe(channel: string, onSignal: () => void): Promise<() => Promise<void>> {
    this.events.on(channel, onSignal);
    return async () => void this.events.off(channel, onSignal);
  }
}
