import { reconcile } from './schema-reconcile';

const row = (id: string, remoteId: string, orphaned = false) => ({ id, remoteId, orphaned });

describe('reconcile (stable ids across refreshes)', () => {
  it('keeps ids by remote id, numbers new rows, revives orphans and reports the missing', () => {
    let next = 0;
    const makeId = () => `new_${++next}`;
    const existing = [row('t1', 'a'), row('t2', 'b'), row('t3', 'c', true), row('t4', 'd', true)];
    const { present, missing } = reconcile(
      existing,
      [{ remoteId: 'c' }, { remoteId: 'e' }, { remoteId: 'a' }, { remoteId: 'e' }],
      makeId,
    );
    expect(present.map((p) => [p.id, p.info.remoteId, p.position, p.previous?.id ?? null])).toEqual([
      ['t3', 'c', 0, 't3'],
      ['new_1', 'e', 1, null],
      ['t1', 'a', 2, 't1'],
    ]);
    expect(missing.map((m) => m.id)).toEqual(['t2', 't4']);
  });

  it('gives every row a new id on the first load', () => {
    const { present, missing } = reconcile([], [{ remoteId: 'x' }, { remoteId: 'y' }], () => 'id');
    expect(present).toHaveLength(2);
    expect(missing).toEqual([]);
  });
});
