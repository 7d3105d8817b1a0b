/**
 * When a request is sent again, and after how long. Reads (and writes the caller marks idempotent) are
 * retried on 5xx, 408 and network errors, with exponential backoff and jitter. A 429 is retried for every
 * request: the app refused it without doing it, so sending it again cannot duplicate anything; the wait
 * is the app's `Retry-After` (or its documented penalty), shared by every user of the budget key.
 */

export interface RetryPolicy {
  /** Attempts in all for 5xx, 408 and network errors (1 = no retry). */
  attempts: number;
  /** Attempts in all for 429 answers (each waits for the key's pause, not for a backoff). */
  rateLimitedAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  attempts: 4,
  rateLimitedAttempts: 6,
  baseDelayMs: 250,
  maxDelayMs: 8000,
});

/**
 * The wait before attempt `attempt + 1` ("equal jitter"): half of the exponential step, plus a random share
 * of the other half, so clients that failed together do not come back together.
 */
export function backoffDelay(
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return step / 2 + random() * (step / 2);
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** True when sending the request twice has the effect of sending it once. */
export function isIdempotent(method: string, declared: boolean | undefined): boolean {
  return declared ?? IDEMPOTENT_METHODS.has(method.toUpperCase());
}

/** Statuses after which the same request may succeed (for requests that may be sent again). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status >= 500;
}

/**
 * `Retry-After` in milliseconds from now: delta seconds or an HTTP date; undefined when absent or unreadable.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
