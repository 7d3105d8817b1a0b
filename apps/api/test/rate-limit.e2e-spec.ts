import { randomBytes } from 'node:crypto';
import { bearer, createTestApp, type TestApp } from './support/test-app';

async function until<T>(probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('rate limit (spec section 8)', () => {
  // Two API instances sharing one Redis: the budget is per key across instances. A short window keeps the test fast.
  const prefix = `${process.env.QUEUE_PREFIX}-rl-${randomBytes(3).toString('hex')}`;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp({ RATE_LIMIT_PER_MINUTE: 4, RATE_LIMIT_WINDOW_SECONDS: 3, QUEUE_PREFIX: prefix });
    b = await createTestApp({ RATE_LIMIT_PER_MINUTE: 4, RATE_LIMIT_WINDOW_SECONDS: 3, QUEUE_PREFIX: prefix });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('shows the budget on every response, refuses with 429 and Retry-After past it, and recovers', async () => {
    const key = await a.key((await a.account()).id, 'read');
    // Start at the beginning of a window so the four requests fall in one.
    await until(
      async () => Date.now() % 3000,
      (ms) => ms < 1500,
      4000,
    );
    const first = await a.http().get('/v1/test-probe/read').set(bearer(key));
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-limit']).toBe('4');
    expect(first.headers['ratelimit-remaining']).toBe('3');
    expect(first.headers['ratelimit-policy']).toBe('"default";q=4;w=3');
    expect(first.headers['ratelimit']).toMatch(/^"default";r=3;t=\d+$/);
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    // Errors count and carry the headers too; the other instance shares the budget.
    const second = await b.http().post('/v1/test-probe/operate').set(bearer(key));
    expect(second.status).toBe(403);
    expect(second.headers['ratelimit-remaining']).toBe('2');
    await b.http().get('/v1/test-probe/read').set(bearer(key)).expect(200);
    await a.http().get('/v1/test-probe/read').set(bearer(key)).expect(200);
    const limited = await b.http().get('/v1/test-probe/read').set(bearer(key));
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    // Another key has its own budget.
    const other = await a.key((await a.account()).id, 'read');
    await a.http().get('/v1/test-probe/read').set(bearer(other)).expect(200);
    // Recovery once the window has passed.
    const recovered = await until(
      () => a.http().get('/v1/test-probe/read').set(bearer(key)),
      (r) => r.status === 200,
      8000,
    );
    expect(recovered.status).toBe(200);
  });
});
