import { createHash, randomUUID } from 'node:crypto';
import { runIds } from './initial-progress';
import { createdBySync, initialServiceId } from './service-ids';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('derived service ids of an initial sync', () => {
  it('are version-8 UUIDs, the same for the same run, pair, side and record, different otherwise', () => {
    const id = initialServiceId('sync_a', 'run1', 0, 'left', '42');
    expect(id).toMatch(UUID);
    expect(initialServiceId('sync_a', 'run1', 0, 'left', '42')).toBe(id);
    const others = [
      initialServiceId('sync_a', 'run2', 0, 'left', '42'),
      initialServiceId('sync_a', 'run1', 1, 'left', '42'),
      initialServiceId('sync_a', 'run1', 0, 'right', '42'),
      initialServiceId('sync_a', 'run1', 0, 'left', '43'),
      initialServiceId('sync_b', 'run1', 0, 'left', '42'),
    ];
    for (const other of others) expect(other).not.toBe(id);
    expect(
      new Set(
        Array.from({ length: 5000 }, (_, index) =>
          initialServiceId('sync_a', 'run1', 0, 'left', String(index)),
        ),
      ).size,
    ).toBe(5000);
  });

  describe('scheme 2 (ordered)', () => {
    const ordered = (
      remoteId: string,
      side: 'left' | 'right' = 'left',
      run = 'run1',
      pair = 0,
      sync = 'sync_a',
    ) => initialServiceId(sync, run, pair, side, remoteId, 2);

    it('are version-8 UUIDs of this sync, the same for the same run, pair, side and record, different otherwise', () => {
      for (const remoteId of ['42', '0', '9999999999999', 'abc', '007', '-3', '10000000000000', 'ü x']) {
        const id = ordered(remoteId);
        expect(id).toMatch(UUID);
        expect(createdBySync('sync_a', id)).toBe(true);
        expect(createdBySync('sync_b', id)).toBe(false);
        expect(ordered(remoteId)).toBe(id);
        const others = [
          ordered(remoteId, 'left', 'run2'),
          ordered(remoteId, 'left', 'run1', 1),
          ordered(remoteId, 'right'),
          ordered(remoteId, 'left', 'run1', 0, 'sync_b'),
          initialServiceId('sync_a', 'run1', 0, 'left', remoteId),
        ];
        for (const other of others) expect(other).not.toBe(id);
      }
    });

    it('follow the order of plain integer remote ids within a pass', () => {
      const ids = [0, 1, 2, 9, 10, 99, 100, 65535, 65536, 123456789, 9_999_999_999_999].map((n) =>
        ordered(String(n)),
      );
      expect([...ids].sort()).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
      // The integer form (variant a) shares the pass's prefix; other remote ids take the hashed form (variant 8 or 9).
      expect(ordered('42')[19]).toBe('a');
      for (const remoteId of ['007', '-1', '1.5', '10000000000000', 'abc', ''])
        expect(['8', '9']).toContain(ordered(remoteId)[19]);
      expect(ordered('42').slice(0, 18)).toBe(ordered('abc').slice(0, 18));
    });

    it('never meet between the two sides of a run, nor between the two forms', () => {
      const all = new Set<string>();
      for (const side of ['left', 'right'] as const) {
        for (let index = 0; index < 3000; index += 1) {
          all.add(ordered(String(index), side));
          all.add(ordered(`k${index}`, side));
        }
      }
      expect(all.size).toBe(12000);
    });
  });

  it('scheme 1 is what runs prepared by earlier releases derived (a resumed run replays the same ids)', () => {
    expect(initialServiceId('sync_a', 'run1', 0, 'left', '42')).toBe(
      initialServiceId('sync_a', 'run1', 0, 'left', '42', 1),
    );
    expect(createHash('sha1').update('run1\u00000\u0000left\u000042').digest('hex').slice(0, 3)).toBe(
      initialServiceId('sync_a', 'run1', 0, 'left', '42').slice(15, 18),
    );
  });

  it('a run keeps its scheme: 2 when prepared with it, 1 when prepared before schemes were recorded', () => {
    expect(runIds({ run: 'r', id_scheme: 2, pairs: [] })).toEqual({ initialRun: 'r', initialIdScheme: 2 });
    expect(runIds({ run: 'r', pairs: [] })).toEqual({ initialRun: 'r', initialIdScheme: 1 });
    expect(runIds({ pairs: [] })).toEqual({});
  });

  it('tell the sync that derived them from every other id', () => {
    const id = initialServiceId('sync_a', 'run1', 0, 'left', '42');
    expect(createdBySync('sync_a', id)).toBe(true);
    expect(createdBySync('sync_a', id.toUpperCase())).toBe(true);
    expect(createdBySync('sync_a', initialServiceId('sync_a', 'another run', 3, 'right', 'x'))).toBe(true);
    expect(createdBySync('sync_b', id)).toBe(false);
    for (let index = 0; index < 1000; index += 1) expect(createdBySync('sync_a', randomUUID())).toBe(false);
    expect(createdBySync('sync_a', null)).toBe(false);
    expect(createdBySync('sync_a', undefined)).toBe(false);
    expect(createdBySync('sync_a', 'not a uuid')).toBe(false);
  });
});
