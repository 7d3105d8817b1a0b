import type { AccountEntity, ApiKeyEntity } from '@lockstep/persistence';

/** Bounds the memory of one process; past it the cache starts over. */
const MAX_ENTRIES = 10_000;

export interface CachedKey {
  key: ApiKeyEntity;
  account: AccountEntity;
  /** The key generation read before the store was. */
  generation: string;
  expiresAt: number;
  /** When this process last wrote the key's `last_used_at`. */
  touchedAt: number;
}

/**
 * Keys this process verified against the store, by the SHA-256 of their secret (never the secret). An entry
 * is used only while its generation is the current one and it is younger than `ttlMs`
 * (API_KEY_CACHE_SECONDS): a change made through Lockstep applies on the next request, one made directly in
 * the store within the time limit.
 */
export class KeyCache {
  private readonly entries = new Map<string, CachedKey>();

  constructor(private readonly ttlMs: number) {}

  get(secretHash: string, now = Date.now()): CachedKey | null {
    const entry = this.entries.get(secretHash);
    if (!entry) return null;
    if (entry.expiresAt > now) return entry;
    this.entries.delete(secretHash);
    return null;
  }

  set(secretHash: string, entry: Omit<CachedKey, 'expiresAt' | 'touchedAt'>, now = Date.now()): void {
    if (this.ttlMs === 0) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(secretHash, { ...entry, expiresAt: now + this.ttlMs, touchedAt: now });
  }

  delete(secretHash: string): void {
    this.entries.delete(secretHash);
  }
}
