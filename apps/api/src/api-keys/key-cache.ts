import type { AccountEntity, ApiKeyEntity } from '@lockstep/persistence';

/** How long a verified key is trusted without asking the store when nothing bumped the key generation. */
export const KEY_CACHE_TTL_MS = 10_000;
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
 * Keys this process verified against the store, by the SHA-256 of their secret (never the secret). An entry is
 * used only while its generation is the current one and it is younger than KEY_CACHE_TTL_MS: a change made
 * through Lockstep applies on the next request, one made directly in the store within the time limit.
 */
export class KeyCache {
  private readonly entries = new Map<string, CachedKey>();

  get(secretHash: string, now = Date.now()): CachedKey | null {
    const entry = this.entries.get(secretHash);
    if (!entry) return null;
    if (entry.expiresAt > now) return entry;
    this.entries.delete(secretHash);
    return null;
  }

  set(secretHash: string, entry: Omit<CachedKey, 'expiresAt' | 'touchedAt'>, now = Date.now()): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(secretHash, { ...entry, expiresAt: now + KEY_CACHE_TTL_MS, touchedAt: now });
  }

  delete(secretHash: string): void {
    this.entries.delete(secretHash);
  }
}
