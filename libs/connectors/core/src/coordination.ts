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

/** One entry of a signal channel's log: a hint (a record id) the reader verifies, never trusts. */
export interface SignalHint {
  /** Increasing within the channel; a reader keeps the last one it read in its checkpoint. */
  position: number;
  hint: string;
}

/**
 * Wake-ups an app pushes to the service (its webhooks, received by the API's notification endpoint) for the
 * connections that read the app (in the workers): a channel per watched thing (a NocoDB table), a short log of
 * hints per channel (the ids of deleted records), and subscribers woken on every publish. A hint is only a
 * hint: the connector verifies it against the app before it reports anything.
 */
export interface ChangeSignals {
  /** Appends `hints` (possibly none) to `channel`'s log and wakes the channel's subscribers. */
  publish(channel: string, hints: readonly string[]): Promise<void>;
  /** The hints after `after` (at most `limit`, oldest first) and the channel's last position. */
  read(channel: string, after: number, limit: number): Promise<{ hints: SignalHint[]; last: number }>;
  /** Calls `onSignal` on every publish to `channel` until the returned function is called. */
  subscribe(channel: string, onSignal: () => void): Promise<() => Promise<void>>;
}

export interface ConnectorCoordination {
  budget: RateBudget;
  locks: SharedLocks;
  /** Absent in tools that receive no webhooks: app connectors then poll alone. */
  signals?: ChangeSignals;
}
