import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { ConnectorError, type RateRule } from '@lockstep/connectors-core';
import { RedisCoordination } from './budget';
import { HttpClient, type HttpClientOptions } from './client';
import {
  busiestWindow,
  dropPrefix,
  json,
  type Loopback,
  redisConnection,
  startLoopback,
  uniquePrefix,
} from './test/loopback';

const EGRESS = { allowPrivate: true, allowLoopback: true };
// The User-Agent names the version of the repository's package.json.
const PACKAGE_VERSION: string = JSON.parse(
  readFileSync(join(__dirname, '../../../../package.json'), 'utf8'),
).version;
const FAST_RETRY = { baseDelayMs: 20, maxDelayMs: 100 };

async function failure(promise: Promise<unknown>): Promise<ConnectorError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ConnectorError) return error;
    throw error;
  }
  throw new Error('expected the request to fail');
}

// Two Redis connections stand for two worker processes sharing one Redis.
const connections: Redis[] = [redisConnection(), redisConnection()];
const prefixes: string[] = [];
const servers: Loopback[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

afterAll(async () => {
  for (const prefix of prefixes) await dropPrefix(connections[0]!, prefix);
  for (const connection of connections) connection.disconnect();
});

/** Two clients of one budget key, each with its own Redis connection. */
function twoClients(
  server: Loopback,
  rule: RateRule,
  extra: Partial<HttpClientOptions> = {},
): [HttpClient, HttpClient] {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  return connections.map(
    (redis) =>
      new HttpClient({
        baseUrl: server.url,
        egress: EGRESS,
        shared: new RedisCoordination(redis, prefix),
        rules: [rule],
        retry: FAST_RETRY,
        ...extra,
      }),
  ) as [HttpClient, HttpClient];
}

async function serve(handler: Parameters<typeof startLoopback>[0]): Promise<Loopback> {
  const server = await startLoopback(handler);
  servers.push(server);
  return server;
}

describe('the rate budget shared through Redis', () => {
  it('two clients of one key together stay within the rate, and the app never answers 429', async () => {
    const limit = 10;
    // The app's own limit: a sliding second, with a margin of two for loopback timing.
    const server = await serve((_req, res, arrival) => {
      const recent = server.arrivals.filter((other) => arrival.at - other.at < 1000).length;
      if (recent > limit + 2) json(res, 429, { error: 'RATE_LIMIT_REACHED' });
      else json(res, 200, { ok: true });
    });
    const [one, two] = twoClients(server, { key: 'base:shared', ratePerSecond: limit, burst: 1 });
    const started = Date.now();
    await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? one : two).get('/v0/records')));
    const elapsed = Date.now() - started;
    expect(one.stats.rateLimited + two.stats.rateLimited).toBe(0);
    expect(server.arrivals).toHaveLength(24);
    expect(busiestWindow(server.arrivals, 1000)).toBeLessThanOrEqual(limit + 2);
    // 24 requests at 10/s, one at a time: at least 23 intervals, whichever client sent them.
    expect(elapsed).toBeGreaterThanOrEqual(2300 * 0.9);
  });

  it.each([
    ['Retry-After', { 'retry-after': '1' }, undefined, 1000],
    ["the connector's documented penalty", {}, 1200, 1200],
  ])('a 429 with %s pauses the key for both clients', async (_name, headers, penaltyMs, pauseMs) => {
    const server = await serve((_req, res) => {
      if (server.arrivals.length === 1)
        json(res, 429, { error: 'RATE_LIMIT_REACHED' }, headers as Record<string, string>);
      else json(res, 200, { ok: true });
    });
    const [one, two] = twoClients(server, { key: 'base:paused', ratePerSecond: 50, burst: 5, penaltyMs });
    const first = one.get('/v0/a');
    while (one.stats.rateLimited === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const limitedAt = server.arrivals[0]!.at;
    await Promise.all([first, two.get('/v0/b'), two.get('/v0/c')]);
    const after = server.arrivals.slice(1);
    expect(after).toHaveLength(3);
    // Nobody sent during the pause: the read that got the 429 and the other client's reads alike.
    for (const arrival of after) expect(arrival.at - limitedAt).toBeGreaterThanOrEqual(pauseMs - 50);
    expect(one.stats.rateLimited + two.stats.rateLimited).toBe(1);
  });
});

describe('a budget that cannot be read', () => {
  it('fails the request as transient without sending it', async () => {
    const server = await serve((_req, res) => json(res, 200, {}));
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    const client = new HttpClient({
      baseUrl: server.url,
      egress: EGRESS,
      shared: new RedisCoordination(down, uniquePrefix()),
      rules: [{ key: 'k', ratePerSecond: 5 }],
    });
    const error = await failure(client.get('/v0/x'));
    expect([error.kind, error.appCode]).toEqual(['transient', 'BUDGET_UNAVAILABLE']);
    expect(server.arrivals).toHaveLength(0);
    down.disconnect();
  });
});

describe('retries', () => {
  it('a read is retried on 5xx until it succeeds', async () => {
    const server = await serve((_req, res) =>
      server.arrivals.length <= 2 ? json(res, 503, { error: 'busy' }) : json(res, 200, { n: 1 }),
    );
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, retry: FAST_RETRY });
    expect(await client.get('/v0/x')).toEqual({ n: 1 });
    expect(server.arrivals).toHaveLength(3);
    expect(client.stats.retries).toBe(2);
  });

  it('a read that times out is retried; a lasting failure ends transient', async () => {
    const server = await serve((_req, res) => {
      if (server.arrivals.length > 1) json(res, 200, { late: false });
      // The first request gets no answer at all.
    });
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, timeoutMs: 300, retry: FAST_RETRY });
    expect(await client.get('/v0/slow')).toEqual({ late: false });
    expect(server.arrivals).toHaveLength(2);

    const down = await serve((_req, res) => json(res, 500, { error: 'down' }));
    const failing = new HttpClient({
      baseUrl: down.url,
      egress: EGRESS,
      retry: { ...FAST_RETRY, attempts: 3 },
    });
    const error = await failure(failing.get('/v0/x'));
    expect([error.kind, error.appCode, down.arrivals.length]).toEqual(['transient', '500', 3]);
  });

  it('a read whose answer stalls half way is timed out and sent again', async () => {
    const server = await serve((_req, res) => {
      if (server.arrivals.length > 1) return json(res, 200, { whole: true });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"whole":');
    });
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, timeoutMs: 300, retry: FAST_RETRY });
    expect(await client.get('/v0/stalls')).toEqual({ whole: true });
    expect(server.arrivals).toHaveLength(2);
  });

  it('an answer past the size limit is not read again', async () => {
    const server = await serve((_req, res) => json(res, 200, { filler: 'x'.repeat(10_000) }));
    const client = new HttpClient({
      baseUrl: server.url,
      egress: EGRESS,
      maxBodyBytes: 1000,
      retry: FAST_RETRY,
    });
    const error = await failure(client.get('/v0/big'));
    expect([error.kind, error.appCode]).toEqual(['unsupported', 'RESPONSE_TOO_LARGE']);
    expect(server.arrivals).toHaveLength(1);
  });

  it.each([
    ['a 503', (res: Parameters<typeof json>[0]) => json(res, 503, { error: 'busy' })],
    ['a timeout', () => undefined],
  ])('a write that is not idempotent is sent once after %s', async (_name, fail) => {
    const server = await serve((_req, res) => fail(res));
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, timeoutMs: 300, retry: FAST_RETRY });
    const error = await failure(
      client.request({ method: 'POST', path: '/v0/records', json: { fields: {} } }),
    );
    expect(error.kind).toBe('transient');
    expect(server.arrivals).toHaveLength(1);
  });

  it('a write marked idempotent (a create carrying its service id) is retried', async () => {
    const server = await serve((_req, res) =>
      server.arrivals.length === 1 ? json(res, 502, {}) : json(res, 200, { id: 'rec1' }),
    );
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, retry: FAST_RETRY });
    const response = await client.request({
      method: 'PATCH',
      path: '/v0/records',
      json: { performUpsert: {} },
      idempotent: true,
    });
    expect(response.data).toEqual({ id: 'rec1' });
    expect(server.arrivals).toHaveLength(2);
  });

  it('a write refused with 429 is sent again after the pause (the app did nothing)', async () => {
    const server = await serve((_req, res) =>
      server.arrivals.length === 1
        ? json(res, 429, {}, { 'retry-after': '0.2' })
        : json(res, 200, { id: 'rec2' }),
    );
    const client = new HttpClient({
      baseUrl: server.url,
      egress: EGRESS,
      rules: [{ key: 'k', ratePerSecond: 100 }],
    });
    expect((await client.request({ method: 'POST', path: '/v0/records', json: {} })).data).toEqual({
      id: 'rec2',
    });
    expect(server.arrivals).toHaveLength(2);
  });

  it('the last 429 fails at once, with the Retry-After hint, instead of waiting it out', async () => {
    const server = await serve((_req, res) => json(res, 429, {}, { 'retry-after': '20' }));
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, retry: { rateLimitedAttempts: 1 } });
    const started = Date.now();
    const error = await failure(client.get('/v0/x'));
    expect([error.kind, error.retryAfterSeconds]).toEqual(['rate_limited', 20]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a 4xx is not retried and keeps its kind', async () => {
    const server = await serve((_req, res) => json(res, 404, { error: 'NOT_FOUND' }));
    const client = new HttpClient({ baseUrl: server.url, egress: EGRESS, retry: FAST_RETRY });
    expect((await failure(client.get('/v0/nothing'))).kind).toBe('not_found');
    expect(server.arrivals).toHaveLength(1);
  });

  it('a 401 is sent once more after onUnauthorized renewed the credentials', async () => {
    let token = 'old';
    const server = await serve((req, res) =>
      req.headers.authorization === 'Bearer new' ? json(res, 200, { ok: 1 }) : json(res, 401, {}),
    );
    const client = new HttpClient({
      baseUrl: server.url,
      egress: EGRESS,
      headers: () => ({ authorization: `Bearer ${token}` }),
      onUnauthorized: async () => {
        token = 'new';
        return true;
      },
    });
    expect(await client.get('/v0/me')).toEqual({ ok: 1 });
    expect(server.arrivals.map((arrival) => arrival.headers.authorization)).toEqual([
      'Bearer old',
      'Bearer new',
    ]);
  });
});

describe('egress and secrets', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data', EGRESS],
    ['http://[fe80::1]/', EGRESS],
    ['http://metadata.google.internal/', EGRESS],
    ['http://10.1.2.3/', { allowPrivate: false, allowLoopback: true }],
  ])('%s is refused before any connection', async (baseUrl, egress) => {
    const client = new HttpClient({ baseUrl, egress, retry: FAST_RETRY });
    const error = await failure(client.get('/'));
    expect(error.kind).toBe('permission');
    expect(client.stats.requests).toBe(0);
  });

  it('a loopback app is refused when the policy does not allow loopback', async () => {
    const server = await serve((_req, res) => json(res, 200, {}));
    const client = new HttpClient({
      baseUrl: server.url,
      egress: { allowPrivate: true, allowLoopback: false },
    });
    expect((await failure(client.get('/'))).kind).toBe('permission');
    expect(server.arrivals).toHaveLength(0);
  });

  it('connects to the address the policy checked, not to a second answer of the name', async () => {
    const server = await serve((_req, res) => json(res, 200, { reached: true }));
    const answers = [['127.0.0.1'], ['169.254.169.254']];
    let lookups = 0;
    const lookup = async () => answers[Math.min(lookups++, 1)]!;
    const client = new HttpClient({
      baseUrl: `http://app.lockstep.invalid:${server.port}`,
      egress: EGRESS,
      lookup,
    });
    // The system resolver cannot resolve this name: only the checked address reaches the server.
    expect(await client.get('/v0/x')).toEqual({ reached: true });
    expect(server.arrivals[0]!.headers.host).toBe(`app.lockstep.invalid:${server.port}`);
    expect(server.arrivals[0]!.headers['user-agent']).toBe(`Lockstep/${PACKAGE_VERSION}`);
    // The next request is checked again, and the rebound answer is refused.
    expect((await failure(client.get('/v0/x'))).kind).toBe('permission');
    expect(server.arrivals).toHaveLength(1);
  });

  it('no secret appears in an error message', async () => {
    const secret = 'patSECRETvalue.0123456789abcdef';
    const server = await serve((_req, res) => json(res, 401, `the token ${secret} is not valid`));
    const client = new HttpClient({
      baseUrl: server.url,
      egress: EGRESS,
      headers: () => ({ authorization: `Bearer ${secret}` }),
      secrets: () => [secret],
    });
    const error = await failure(client.request({ path: '/v0/meta/bases', query: { api_key: secret } }));
    expect(error.kind).toBe('auth');
    expect(error.message).not.toContain(secret);
    expect(error.message).toContain('GET /v0/meta/bases: HTTP 401');
    const unreachable = new HttpClient({
      baseUrl: `http://127.0.0.1:1`,
      egress: EGRESS,
      retry: { attempts: 1 },
      secrets: () => [secret],
    });
    const refused = await failure(unreachable.request({ path: '/x', query: { api_key: secret } }));
    expect([refused.kind, refused.message.includes(secret)]).toEqual(['transient', false]);
  });
});
