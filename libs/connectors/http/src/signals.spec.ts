import type Redis from 'ioredis';
import type { ChangeSignals } from '@lockstep/connectors-core';
import { hookHints, hookSignature } from './hooks';
import { LocalSignals, MAX_HINTS, RedisSignals } from './signals';
import { dropPrefix, redisConnection, uniquePrefix } from './test/loopback';

describe.each([
  ['Redis', true],
  ['in-process', false],
])('%s change signals', (_name, redis) => {
  // Two connections: the API that receives a webhook and a worker that reads the app.
  const connections: Redis[] = redis ? [redisConnection(), redisConnection()] : [];
  const prefixes: string[] = [];
  const closers: RedisSignals[] = [];
  let api: ChangeSignals;
  let worker: ChangeSignals;

  beforeEach(() => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    if (redis) {
      const [a, b] = [new RedisSignals(connections[0]!, prefix), new RedisSignals(connections[1]!, prefix)];
      closers.push(a, b);
      [api, worker] = [a, b];
    } else {
      api = worker = new LocalSignals();
    }
  });

  afterAll(async () => {
    closers.forEach((signals) => signals.close());
    for (const prefix of prefixes) if (connections[0]) await dropPrefix(connections[0], prefix);
    for (const connection of connections) connection.disconnect();
  });

  it('wakes the subscribers of a channel, not of another, until they unsubscribe', async () => {
    let woken = 0;
    let other = 0;
    const stop = await worker.subscribe('nocodb:a', () => (woken += 1));
    await worker.subscribe('nocodb:b', () => (other += 1));
    await api.publish('nocodb:a', []);
    await waitFor(() => woken === 1);
    await stop();
    await api.publish('nocodb:a', []);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([woken, other]).toEqual([1, 0]);
  });

  it('keeps hints in order for every reader from its own position', async () => {
    await api.publish('nocodb:c', ['1', '2']);
    await api.publish('nocodb:c', []);
    await api.publish('nocodb:c', ['3']);
    const all = await worker.read('nocodb:c', 0, 10);
    expect(all.hints.map((entry) => entry.hint)).toEqual(['1', '2', '3']);
    expect(all.last).toBe(3);
    const later = await worker.read('nocodb:c', all.hints[0]!.position, 1);
    expect(later.hints.map((entry) => entry.hint)).toEqual(['2']);
    expect((await worker.read('nocodb:none', 0, 10)).last).toBe(0);
  });

  it(`keeps the last ${MAX_HINTS} hints of a channel`, async () => {
    const many = Array.from({ length: MAX_HINTS + 5 }, (_, index) => String(index));
    await api.publish('nocodb:d', many);
    const read = await worker.read('nocodb:d', 0, 3);
    expect(read.hints.map((entry) => entry.hint)).toEqual(['5', '6', '7']);
    expect(read.last).toBe(MAX_HINTS + 5);
  });
});

describe('webhook notifications', () => {
  it('signs a channel with a key (HMAC-SHA256, hex)', () => {
    expect(hookSignature('key', 'abc')).toMatch(/^[0-9a-f]{64}$/);
    expect(hookSignature('key', 'abc')).not.toBe(hookSignature('other', 'abc'));
  });

  it.each([
    [{ type: 'records.after.delete', ids: ['1', 2] }, ['1', '2']],
    [{ type: 'records.after.update', ids: ['1'] }, []],
    [{ type: 'records.after.delete', ids: ['a,b', '(x)', '', 'x'.repeat(101), { id: 1 }, '7'] }, ['7']],
    ['not json', []],
    [null, []],
  ])('takes the hints of %j as %j', (body, hints) => {
    expect(hookHints(body)).toEqual(hints);
  });
});

async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
