/** A cached schema row (table or field): stable prefixed id per remote id. */
export interface CachedRow {
  id: string;
  remoteId: string;
  orphaned: boolean;
}

export interface Reconciled<R extends CachedRow, I extends { remoteId: string }> {
  /**
   * What the app lists now, in its order (duplicates of a remote id dropped), with the id to store it under.
   */
  present: { id: string; info: I; position: number; previous: R | null }[];
  /** Cached rows the app no longer lists: to be marked orphaned (rows already orphaned included). */
  missing: R[];
}

/**
 * Matches a fresh listing from the app against the cached rows by remote id: a remote id seen before keeps
 * its id (an orphaned row that comes back is revived under the same id), a new one gets `makeId()`, and
 * cached rows absent from the listing are `missing`.
 */
export function reconcile<R extends CachedRow, I extends { remoteId: string }>(
  existing: readonly R[],
  incoming: readonly I[],
  makeId: () => string,
): Reconciled<R, I> {
  const byRemoteId = new Map(existing.map((row) => [row.remoteId, row]));
  const seen = new Set<string>();
  const present: Reconciled<R, I>['present'] = [];
  for (const info of incoming) {
    if (seen.has(info.remoteId)) continue;
    seen.add(info.remoteId);
    const previous = byRemoteId.get(info.remoteId) ?? null;
    present.push({ id: previous?.id ?? makeId(), info, position: present.length, previous });
  }
  return { present, missing: existing.filter((row) => !seen.has(row.remoteId)) };
}
