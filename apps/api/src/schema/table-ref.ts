import type { SyncTableEntity } from '@lockstep/persistence';

export type TableRefMatch =
  | { kind: 'found'; table: SyncTableEntity }
  | { kind: 'ambiguous'; by: 'remote_id' | 'name'; tables: SyncTableEntity[] }
  | { kind: 'none' };

/**
 * Resolves a bare table reference (not a prefixed `table_` id) among candidate tables (spec 2.1, 4.3): a
 * remote id wins over a name; an exact name counts only when it is unique among the candidates. Pass the
 * tables of one side to restrict resolution to it, or of both sides: a remote id (or name) found on both
 * is ambiguous (`table_ambiguous`).
 */
export function resolveTableRef(ref: string, candidates: readonly SyncTableEntity[]): TableRefMatch {
  for (const [by, matches] of [
    ['remote_id', candidates.filter((table) => table.remoteId === ref)],
    ['name', candidates.filter((table) => table.name === ref)],
  ] as const) {
    if (matches.length === 1) return { kind: 'found', table: matches[0] };
    if (matches.length > 1) return { kind: 'ambiguous', by, tables: matches };
  }
  return { kind: 'none' };
}
