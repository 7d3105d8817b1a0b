import { backoffDelay, DEFAULT_RETRY, isIdempotent, isRetryableStatus, retryAfterMs } from './retry';

describe('retry decisions', () => {
  it('backs off exponentially with jitter inside [step/2, step], capped', () => {
    const policy = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(attempt, policy, () => 0))).toEqual([
      50, 100, 200, 400, 500,
    ]);
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(attempt, policy, () => 1))).toEqual([
      100, 200, 400, 800, 1000,
    ]);
    const delays = new Set(Array.from({ length: 20 }, () => backoffDelay(3, policy)));
    expect(delays.size).toBeGreaterThan(1);
  });

  it.each([
    ['GET', undefined, true],
    ['DELETE', undefined, true],
    ['PUT', undefined, true],
    ['POST', undefined, false],
    ['PATCH', undefined, false],
    ['POST', true, true],
    ['GET', false, false],
  ] as const)('%s declared %s is idempotent: %s', (method, declared, expected) => {
    expect(isIdempotent(method, declared)).toBe(expected);
  });

  it.each([
    [500, true],
    [503, true],
    [408, true],
    [429, false],
    [404, false],
    [422, false],
  ])('status %s is retried: %s', (status, expected) => {
    expect(isRetryableStatus(status)).toBe(expected);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('30', now)).toBe(30_000);
    expect(retryAfterMs('0.5', now)).toBe(500);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
  });
});
