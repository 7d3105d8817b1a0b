/**
 * What the connections of one app share across syncs, live exports and worker processes: the app's rate
 * budget and locks (an OAuth token refresh by one holder at a time). The service passes a Redis-backed
 * implementation in `ConnectContext.shared`; `@lockstep/connectors-http` implements both (Redis and
 * in-process) and is what an app connector uses. Database connectors ignore it.
 */

/** One token bucket: `ratePerSecond` requests per second, at most `burst` at once. */
export interface RateRule {
  /**
   * The budget key (an Airtable base, a Notion integration). Every holder of the same key shares one bucket.
   * Never a secret: key a token by its hash (`budgetKeyOf` in `@lockstep/connectors-http`).
   */
  key: string;
  ratePerSecond: number;
  /** Requests that may go at once after an idle spell (default 1: evenly spaced requests). */
  burst?: number;
  /** How long the app blocks the key after a 429 that names no `Retry-After` (Airtable: 30 s). */
  penaltyMs?: number;
  /**
   * An app that counts requests in any window of `ms` (Airtable: 5 a second per base): this process sends at
   * most `requests` of the key whose time from leaving to `ms` after their answer overlaps. The app saw each
   * request somewhere between those two moments, so however late a request arrived, the app never counts more
   * than `requests` of this process in one window. Kept in the process (`@lockstep/connectors-http`); the
   * bucket above paces the processes sharing the key. Optional: without it, the bucket alone.
   */
  window?: { requests: number; ms: number };
}

export interface RateBudget {
  /**
   * Takes one request from every bucket of `rules`, all or none. Returns 0 when taken, otherwise the
   * milliseconds to wait before asking again (nothing was taken).
   */
  take(rules: readonly RateRule[]): Promise<number>;
  /** Nobody holding `key` sends for `ms` from now (an app's 429); a longer pause already set stays. */
  pause(key: string, ms: number): Promise<void>;
}

export interface SharedLocks {
  /**
   * Takes the lock `key` for at most `ttlMs` if nobody holds it; returns the function that releases it
   * (only this holder's lock), or null when someone else holds it.
   */
  tryAcquire(key: string, ttlMs: number): Promise<(() => Promise<void>) | null>;
}

export interface ConnectorCoordination {
  budget: RateBudget;
  locks: SharedLocks;
}
