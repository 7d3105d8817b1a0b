/**
 * Airtable's rate limits (https://airtable.com/developers/web/api/rate-limits): 5 requests per second per base
 * and 50 per second per token, counted here over any one-second window. A request past either is answered
 * 429 `RATE_LIMIT_REACHED`, and so is every request on that base (or with that token) for the penalty (30 s).
 * No `Retry-After` header is sent.
 */
import { SimError } from './simulator-values';

interface Window {
  times: number[];
  blockedUntil: number;
}

export interface LimitOptions {
  perBasePerSecond: number;
  perTokenPerSecond: number;
  penaltyMs: number;
}

export class RateLimits {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly options: LimitOptions) {}

  /** Counts one request with `token` (on `baseId`, when the path names a base), or throws the 429. */
  take(token: string, baseId: string | null): void {
    const now = Date.now();
    const keys: [string, number][] = [[`token:${token}`, this.options.perTokenPerSecond]];
    if (baseId) keys.push([`base:${baseId}`, this.options.perBasePerSecond]);
    const windows = keys.map(([key, max]) => {
      const window = this.windows.get(key) ?? { times: [], blockedUntil: 0 };
      this.windows.set(key, window);
      window.times = window.times.filter((time) => time > now - 1000);
      return { window, max };
    });
    for (const { window, max } of windows) {
      if (window.blockedUntil > now || window.times.length >= max) {
        window.blockedUntil = Math.max(window.blockedUntil, now + this.options.penaltyMs);
        throw new SimError(429, 'RATE_LIMIT_REACHED', 'Rate limit exceeded. Please try again later');
      }
    }
    for (const { window } of windows) window.times.push(now);
  }
}

/** The base a request path spends the budget of (`/v0/{baseId}/...`, `/v0/meta/bases/{baseId}/...`, `/v0/bases/{baseId}/...`). */
export function budgetBase(parts: string[]): string | null {
  if (parts[0] !== 'v0') return null;
  if (parts[1] === 'meta') return parts[2] === 'bases' && parts[3] ? parts[3] : null;
  if (parts[1] === 'bases') return parts[2] ?? null;
  return parts[1] ?? null;
}
