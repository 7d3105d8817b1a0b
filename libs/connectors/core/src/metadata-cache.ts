/**
 * Table metadata cached per connection, keyed by table remote id (see the connector READMEs, "Metadata
 * cache").
 *
 * Reading a table's description from the catalog costs a round trip and several milliseconds, and every
 * read and write needs it; the description only changes when the schema does. An entry is used until it
 * is invalidated (this connection changed the table: createTable, createField, prepareTable,
 * unprepareTable), until it is older than the time to live (a change made elsewhere is picked up within
 * that time), or until a statement fails in a way that suggests the schema changed (the caller then loads
 * the description again and retries once: `hit.cached` says whether the value may be stale).
 *
 * Concurrent calls for a table that is not cached share one load. A failed load is not cached.
 */
export interface CacheHit<T> {
  value: T;
  /** The value was loaded by an earlier call, so it may predate a schema change. */
  cached: boolean;
}

interface Entry<T> {
  value: Promise<T>;
  loadedAt: number;
}

export class MetadataCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The cached value for `key`, or the value `load` returns (then cached). */
  async get(key: string, load: () => Promise<T>): Promise<CacheHit<T>> {
    const entry = this.entries.get(key);
    if (entry && this.clock() - entry.loadedAt < this.ttlMs)
      return { value: await entry.value, cached: true };
    return { value: await this.refresh(key, load), cached: false };
  }

  /** Loads `key` anew (whatever is cached) and caches the result. */
  refresh(key: string, load: () => Promise<T>): Promise<T> {
    const entry: Entry<T> = { value: load(), loadedAt: this.clock() };
    this.entries.set(key, entry);
    entry.value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return entry.value;
  }

  invalidate(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
