import type Redis from 'ioredis';
import type { ConnectorCoordination } from '@lockstep/connectors-core';
import { budgetKeyOf, LocalCoordination, RedisCoordination, RequestWindows, waitForBudget } from './budget';
import { dropPrefix, redisConnection, uniquePrefix } from './test/loopback';

describe.each([
  ['Redis', true],
  ['in-process', false],
])('%s coordination', (_name, redis) => {
  // Two connections: two worker processes sharing one Redis.
  const connections: Redis[] = redis ? [redisConnection(), redisConnection()] : [];
  const prefixes: string[] = [];
  let one: ConnectorCoordination;
  let two: ConnectorCoordination;

  beforeEach(() => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    if (redis) {
      one = new RedisCoordination(connections[0]!, prefix);
      two = new RedisCoordination(connections[1]!, prefix);
    } else {
      one = two = new LocalCoordination();
    }
  });

  afterAll(async () => {
    for (const prefix of prefixes) if (connections[0]) await dropPrefix(connections[0], prefix);
    for (const connection of connections) connection.disconnect();
  });

  it('gives out the burst, then names the wait until the next token, for every holder of the key', async () => {
    const rule = { key: 'base:a', ratePerSecond: 1, burst: 2 };
    expect(await one.budget.take([rule])).toBe(0);
    expect(await two.budget.take([rule])).toBe(0);
    const wait = await one.budget.take([rule]);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);
    expect(await two.budget.take([{ ...rule, key: 'base:b' }])).toBe(0);
  });

  it('takes from several buckets all or none', async () => {
    const base = { key: 'base:c', ratePerSecond: 1, burst: 1 };
    const token = { key: 'token:c', ratePerSecond: 1, burst: 2 };
    expect(await one.budget.take([base, token])).toBe(0);
    // The base is empty: nothing is taken from the token's bucket either.
    expect(await two.budget.take([base, token])).toBeGreaterThan(0);
    expect(await two.budget.take([{ ...base, key: 'base:d' }, token])).toBe(0);
    expect(await two.budget.take([{ ...base, key: 'base:e' }, token])).toBeGreaterThan(0);
  });

  it('a pause holds the key for everyone, and a shorter pause does not shorten it', async () => {
    const rule = { key: 'base:f', ratePerSecond: 100, burst: 5 };
    await one.budget.pause(rule.key, 2000);
    await two.budget.pause(rule.key, 10);
    const wait = await two.budget.take([rule]);
    expect(wait).toBeGreaterThan(1000);
    expect(wait).toBeLessThanOrEqual(2100);
  });

  it('waitForBudget spaces requests at the rate', async () => {
    const rule = { key: 'base:g', ratePerSecond: 20, burst: 1 };
    const started = Date.now();
    await Promise.all(Array.from({ length: 6 }, (_, i) => waitForBudget((i % 2 ? one : two).budget, [rule])));
    // 6 requests at 20/s with a burst of 1: the last goes at least 5 intervals (250 ms) after the first.
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  it('a lock has one holder at a time; release frees it, and only for its holder', async () => {
    const release = await one.locks.tryAcquire('refresh:x', 5000);
    expect(release).not.toBeNull();
    expect(await two.locks.tryAcquire('refresh:x', 5000)).toBeNull();
    await release!();
    const again = await two.locks.tryAcquire('refresh:x', 5000);
    expect(again).not.toBeNull();
    await release!(); // the first holder's release does not free the second holder's lock
    expect(await one.locks.tryAcquire('refresh:x', 5000)).toBeNull();
    await again!();
  });

  it('an expired lock can be taken again', async () => {
    expect(await one.locks.tryAcquire('refresh:y', 50)).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await two.locks.tryAcquire('refresh:y', 50)).not.toBeNull();
  });
});

describe('budgetKeyOf', () => {
  it('keeps the secret part out of the key', () => {
    const key = budgetKeyOf('airtable', 'token', 'patSECRET.value');
    expect(key).toMatch(/^airtable:token:[0-9a-f]{32}$/);
    expect(key).not.toContain('SECRET');
    expect(budgetKeyOf('airtable', 'token', 'patSECRET.value')).toBe(key);
    expect(budgetKeyOf('airtable:base:app123')).toBe('airtable:base:app123');
  });
});

describe('request windows (in process)', () => {
  const rule = { key: `window:${Math.random()}`, ratePerSecond: 1000, window: { requests: 2, ms: 300 } };

  it('lets `requests` in, and the next one only `ms` after the oldest answer, however long the answers took', async () => {
    const windows = new RequestWindows();
    const started = Date.now();
    const first = await windows.enter([rule]);
    const second = await windows.enter([rule]);
    let third: (() => void) | null = null;
    const entering = windows.enter([rule]).then((leave) => (third = leave));
    // Both in flight: the third waits however long they take.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(third).toBeNull();
    first();
    const answered = Date.now();
    await entering;
    expect(Date.now() - answered).toBeGreaterThanOrEqual(295);
    expect(Date.now() - started).toBeGreaterThanOrEqual(495);
    second();
    third!();
  });

  it('takes no place for rules without a window, and every windowed key of a request at once', async () => {
    const windows = new RequestWindows();
    const other = { ...rule, key: `window:${Math.random()}`, window: { requests: 1, ms: 300 } };
    const leave = await windows.enter([rule, other]);
    const plain = await windows.enter([{ key: 'plain', ratePerSecond: 1 }]);
    plain();
    const started = Date.now();
    leave();
    const again = await windows.enter([rule, other]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(295);
    again();
  });
});
