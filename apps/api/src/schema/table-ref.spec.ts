import { type SideName, SyncTableEntity } from '@lockstep/persistence';
import { resolveTableRef } from './table-ref';

const table = (id: string, side: SideName, remoteId: string, name: string): SyncTableEntity =>
  Object.assign(new SyncTableEntity(), {
    id,
    syncId: 'sync_x',
    side,
    remoteId,
    name,
    views: null,
    readOnly: false,
    orphaned: false,
    position: 0,
    fieldsFetchedAt: null,
  });

// Left: tblA "Contacts", tblB "Deals". Right: tblC "tblA" (a name equal to a left remote id), tblB "Deals 2", tblD "Contacts".
const left = [table('table_l1', 'left', 'tblA', 'Contacts'), table('table_l2', 'left', 'tblB', 'Deals')];
const right = [
  table('table_r1', 'right', 'tblC', 'tblA'),
  table('table_r2', 'right', 'tblB', 'Deals 2'),
  table('table_r3', 'right', 'tblD', 'Contacts'),
];
const both = [...left, ...right];

describe('resolveTableRef (spec 2.1, 4.3)', () => {
  it.each<[string, string, SyncTableEntity[], string]>([
    ['a remote id on one side', 'tblD', both, 'found table_r3'],
    ['a remote id wins over a name on the other side', 'tblA', both, 'found table_l1'],
    ['the name when only the other side is searched', 'tblA', right, 'found table_r1'],
    ['a unique exact name', 'Deals', both, 'found table_l2'],
    ['a remote id on both sides', 'tblB', both, 'ambiguous remote_id table_l2,table_r2'],
    ['a remote id on both sides, one side searched', 'tblB', right, 'found table_r2'],
    ['a name on both sides', 'Contacts', both, 'ambiguous name table_l1,table_r3'],
    ['a name unique on the searched side', 'Contacts', left, 'found table_l1'],
    ['names are exact (case)', 'contacts', both, 'none'],
    ['nothing', 'tblZ', both, 'none'],
  ])('%s', (_name, ref, candidates, expected) => {
    const match = resolveTableRef(ref, candidates);
    const actual =
      match.kind === 'found'
        ? `found ${match.table.id}`
        : match.kind === 'ambiguous'
          ? `ambiguous ${match.by} ${match.tables.map((t) => t.id).join(',')}`
          : 'none';
    expect(actual).toBe(expected);
  });
});
