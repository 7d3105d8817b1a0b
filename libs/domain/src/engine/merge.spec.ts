import type { SideName } from '../mappings/schema';
import type { CanonicalValue } from '../types/type-class';
import {
  canonicalEqual,
  type FieldOutcome,
  type MergeFieldSpec,
  type MergeSide,
  mergeRecord,
  sideChanged,
  type Values,
} from './merge';

type Way = 'two_way' | 'left_to_right' | 'right_to_left' | 'neither';

const spec = (key: string, way: Way): MergeFieldSpec => ({
  key,
  leftToRight: way === 'two_way' || way === 'left_to_right',
  rightToLeft: way === 'two_way' || way === 'right_to_left',
});

const side = (current: Values | null, shadow: Values | null, changedAt: string | null = null): MergeSide => ({
  current,
  shadow,
  changedAt,
});

const equal = (_key: string, left: CanonicalValue, right: CanonicalValue) => canonicalEqual(left, right);

/** Shorthand for the expected outcome of field `f`. */
const unchanged = { outcome: 'unchanged' } as const;
const converged = { outcome: 'converged' } as const;
const held = (s: SideName) => ({ outcome: 'held', side: s }) as const;
const push = (from: SideName) =>
  ({ outcome: 'push', from, to: from === 'left' ? 'right' : 'left', conflict: null }) as const;
const wins = (winner: SideName, reason: 'later_change' | 'preferred_side' | 'direction') =>
  ({
    outcome: 'push',
    from: winner,
    to: winner === 'left' ? 'right' : 'left',
    conflict: { winner, reason },
  }) as const;

const T1 = '2024-05-01T10:00:00Z';
const T2 = '2024-05-01T10:00:01Z';

// One field `f`: [name, field pair way, left shadow, left now, right shadow, right now, left changedAt, right changedAt, preferred, outcome]
type Row = [
  string,
  Way,
  CanonicalValue,
  CanonicalValue,
  CanonicalValue,
  CanonicalValue,
  string | null,
  string | null,
  SideName,
  Omit<FieldOutcome, 'key'>,
];

// Engine design section 3, one row per line.
const rows: Row[] = [
  // two-way field pairs
  ['no change', 'two_way', 'a', 'a', 'a', 'a', T1, T2, 'left', unchanged],
  ['left only changed: push left to right', 'two_way', 'a', 'b', 'a', 'a', T2, T1, 'right', push('left')],
  ['right only changed: push right to left', 'two_way', 'a', 'a', 'a', 'b', T2, T1, 'left', push('right')],
  ['left cleared a value: push the null', 'two_way', 'a', null, 'a', 'a', null, null, 'right', push('left')],
  ['left filled an empty value', 'two_way', null, 'a', null, null, null, null, 'right', push('left')],
  ['both changed to equal values: converge', 'two_way', 'a', 'b', 'a', 'b', T1, T2, 'left', converged],
  [
    'one side changed to what the other already shows: converge',
    'two_way',
    'x',
    'y',
    'y',
    'y',
    T1,
    T1,
    'right',
    converged,
  ],
  [
    'both changed, left later: left wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    T2,
    T1,
    'right',
    wins('left', 'later_change'),
  ],
  [
    'both changed, right later: right wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    T1,
    T2,
    'left',
    wins('right', 'later_change'),
  ],
  [
    'later change wins over the preferred side',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    '2024-05-01T10:00:00.001Z',
    T1,
    'right',
    wins('left', 'later_change'),
  ],
  [
    'times compare as instants, not as text',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    '2024-05-01T12:00:00+02:00',
    '2024-05-01T10:30:00Z',
    'left',
    wins('right', 'later_change'),
  ],
  ['tie: preferred left wins', 'two_way', 'a', 'b', 'a', 'c', T1, T1, 'left', wins('left', 'preferred_side')],
  [
    'tie: preferred right wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    T1,
    T1,
    'right',
    wins('right', 'preferred_side'),
  ],
  [
    'tie written differently is still a tie',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    '2024-05-01T10:00:00.000Z',
    T1,
    'right',
    wins('right', 'preferred_side'),
  ],
  [
    'left time unknown: preferred wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    null,
    T1,
    'left',
    wins('left', 'preferred_side'),
  ],
  [
    'right time unknown: preferred wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    T2,
    null,
    'right',
    wins('right', 'preferred_side'),
  ],
  [
    'both times unknown: preferred wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    null,
    null,
    'right',
    wins('right', 'preferred_side'),
  ],
  [
    'unreadable time: preferred wins',
    'two_way',
    'a',
    'b',
    'a',
    'c',
    'yesterday',
    T1,
    'left',
    wins('left', 'preferred_side'),
  ],
  [
    'objects changed in key order only: no change',
    'two_way',
    { a: 1, b: 2 },
    { b: 2, a: 1 },
    'x',
    'x',
    null,
    null,
    'left',
    unchanged,
  ],
  // one-way left_to_right
  ['one-way: no change', 'left_to_right', 'a', 'a', 'a', 'a', null, null, 'left', unchanged],
  ['one-way: source changed, push', 'left_to_right', 'a', 'b', 'a', 'a', T1, T2, 'right', push('left')],
  ['one-way: destination changed, held', 'left_to_right', 'a', 'a', 'a', 'b', T1, T2, 'right', held('right')],
  [
    'one-way: destination changed to the source value, converge',
    'left_to_right',
    'x',
    'y',
    'x',
    'y',
    T1,
    T2,
    'right',
    converged,
  ],
  [
    'one-way: destination catches up with a stale shadow, converge',
    'left_to_right',
    'y',
    'y',
    'x',
    'y',
    null,
    T2,
    'right',
    converged,
  ],
  [
    'one-way conflict: source wins though the destination is later and preferred',
    'left_to_right',
    'a',
    'b',
    'a',
    'c',
    T1,
    T2,
    'right',
    wins('left', 'direction'),
  ],
  [
    'one-way conflict with unknown times: source wins',
    'left_to_right',
    'a',
    'b',
    'a',
    'c',
    null,
    null,
    'right',
    wins('left', 'direction'),
  ],
  [
    'one-way: both changed to equal values, converge',
    'left_to_right',
    'a',
    'b',
    'a',
    'b',
    T1,
    T2,
    'right',
    converged,
  ],
  // one-way right_to_left
  [
    'reverse one-way: source changed, push',
    'right_to_left',
    'a',
    'a',
    'a',
    'b',
    T2,
    T1,
    'left',
    push('right'),
  ],
  [
    'reverse one-way: destination changed, held',
    'right_to_left',
    'a',
    'b',
    'a',
    'a',
    T2,
    T1,
    'left',
    held('left'),
  ],
  [
    'reverse one-way conflict: source wins',
    'right_to_left',
    'a',
    'b',
    'a',
    'c',
    T2,
    T1,
    'left',
    wins('right', 'direction'),
  ],
  // neither way carried
  ['neither way: no change', 'neither', 'a', 'a', 'a', 'a', null, null, 'left', unchanged],
  ['neither way: left changed, held', 'neither', 'a', 'b', 'a', 'a', T2, T1, 'left', held('left')],
  ['neither way: right changed, held', 'neither', 'a', 'a', 'a', 'b', T1, T2, 'right', held('right')],
  [
    'neither way: both changed differently, both shadows take their value',
    'neither',
    'a',
    'b',
    'a',
    'c',
    T1,
    T2,
    'left',
    converged,
  ],
  ['neither way: both changed to equal values', 'neither', 'a', 'b', 'a', 'b', T1, T2, 'left', converged],
];

describe('mergeRecord: the three-way merge table (engine design 3)', () => {
  it.each(rows)(
    '%s',
    (_name, way, leftShadow, leftNow, rightShadow, rightNow, leftAt, rightAt, preferred, expected) => {
      const outcomes = mergeRecord({
        fields: [spec('f', way)],
        left: side({ f: leftNow }, { f: leftShadow }, leftAt),
        right: side({ f: rightNow }, { f: rightShadow }, rightAt),
        preferred,
        sameValue: equal,
      });
      expect(outcomes).toEqual([{ key: 'f', ...expected }]);
    },
  );
});

// First sight: neither side has a shadow (matched records at initial sync). Changed times may be known.
// [name, field pair way, left value, right value, left changedAt, right changedAt, preferred, outcome]
type FirstSightRow = [
  string,
  Way,
  CanonicalValue,
  CanonicalValue,
  string | null,
  string | null,
  SideName,
  Omit<FieldOutcome, 'key'>,
];

const firstSight: FirstSightRow[] = [
  ['equal values converge', 'two_way', 'a', 'a', null, null, 'left', converged],
  [
    'equal objects in another key order converge',
    'two_way',
    { a: 1, b: [1, 2] },
    { b: [1, 2], a: 1 },
    null,
    null,
    'right',
    converged,
  ],
  ['both empty converge', 'two_way', null, null, null, null, 'left', converged],
  [
    'differing values: preferred left wins',
    'two_way',
    'a',
    'b',
    null,
    null,
    'left',
    wins('left', 'preferred_side'),
  ],
  [
    'differing values: preferred right wins',
    'two_way',
    'a',
    'b',
    null,
    null,
    'right',
    wins('right', 'preferred_side'),
  ],
  [
    'one side empty: the preferred side still wins',
    'two_way',
    null,
    'b',
    null,
    null,
    'left',
    wins('left', 'preferred_side'),
  ],
  [
    'known modified times do not beat the side chosen at review',
    'two_way',
    'a',
    'b',
    T1,
    T2,
    'left',
    wins('left', 'preferred_side'),
  ],
  [
    'known modified times do not beat the side chosen at review (right)',
    'two_way',
    'a',
    'b',
    T2,
    T1,
    'right',
    wins('right', 'preferred_side'),
  ],
  [
    'one-way: the source wins over the preferred destination',
    'left_to_right',
    'a',
    'b',
    null,
    null,
    'right',
    wins('left', 'direction'),
  ],
  [
    'reverse one-way: the source wins over the preferred destination',
    'right_to_left',
    'a',
    'b',
    null,
    null,
    'left',
    wins('right', 'direction'),
  ],
  ['one-way: equal values converge', 'left_to_right', 'a', 'a', null, null, 'right', converged],
  ['neither way: nothing is written', 'neither', 'a', 'b', null, null, 'left', converged],
];

describe('mergeRecord: first sight (no shadows yet)', () => {
  it.each(firstSight)('%s', (_name, way, leftValue, rightValue, leftAt, rightAt, preferred, expected) => {
    const outcomes = mergeRecord({
      fields: [spec('f', way)],
      left: side({ f: leftValue }, null, leftAt),
      right: side({ f: rightValue }, null, rightAt),
      preferred,
      sameValue: equal,
    });
    expect(outcomes).toEqual([{ key: 'f', ...expected }]);
  });
});

// Shadows and current values that lack a key: [name, left, right, preferred, outcome of field f (two-way)]
type PartialRow = [string, MergeSide, MergeSide, SideName, Omit<FieldOutcome, 'key'>];

const partial: PartialRow[] = [
  ['left has no copy', side(null, { f: 'a' }, T1), side({ f: 'b' }, { f: 'a' }, T2), 'right', unchanged],
  ['right has no copy', side({ f: 'b' }, { f: 'a' }, T2), side(null, { f: 'a' }), 'left', unchanged],
  ['left has no copy and never had', side(null, null), side({ f: 'b' }, null), 'right', unchanged],
  ['neither side has a copy', side(null, null), side(null, null), 'left', unchanged],
  [
    'a newly mapped field missing from both shadows, equal values',
    side({ f: 'a' }, { g: 1 }, T1),
    side({ f: 'a' }, { g: 1 }, T2),
    'left',
    converged,
  ],
  [
    'a newly mapped field missing from both shadows, differing values: preferred wins, not the later record change',
    side({ f: 'a' }, { g: 1 }, T1),
    side({ f: 'b' }, { g: 1 }, T2),
    'left',
    wins('left', 'preferred_side'),
  ],
  [
    'key missing only from the left shadow: left counts as changed',
    side({ f: 'b' }, { g: 1 }),
    side({ f: 'a' }, { f: 'a' }),
    'right',
    push('left'),
  ],
  [
    'key missing only from the right shadow: right counts as changed',
    side({ f: 'a' }, { f: 'a' }),
    side({ f: 'b' }, {}),
    'left',
    push('right'),
  ],
  [
    'key absent from current with a null shadow: no change',
    side({}, { f: null }),
    side({ f: null }, { f: null }),
    'left',
    unchanged,
  ],
  [
    'key absent from current with a value in the shadow: changed to null',
    side({}, { f: 'a' }),
    side({ f: 'a' }, { f: 'a' }),
    'right',
    push('left'),
  ],
];

describe('mergeRecord: missing copies and missing keys', () => {
  it.each(partial)('%s', (_name, left, right, preferred, expected) => {
    const outcomes = mergeRecord({
      fields: [spec('f', 'two_way')],
      left,
      right,
      preferred,
      sameValue: equal,
    });
    expect(outcomes).toEqual([{ key: 'f', ...expected }]);
  });
});

describe('mergeRecord: several fields', () => {
  it('decides each field pair on its own, in field order', () => {
    const outcomes = mergeRecord({
      fields: [
        spec('name', 'two_way'),
        spec('price', 'two_way'),
        spec('notes', 'left_to_right'),
        spec('status', 'two_way'),
        spec('code', 'right_to_left'),
      ],
      left: side(
        { name: 'Ann', price: 10, notes: 'n', status: 'open', code: 'L' },
        { name: 'Ann', price: 9, notes: 'n', status: 'new', code: 'K' },
        T1,
      ),
      right: side(
        { name: 'Anne', price: 9, notes: 'edited', status: 'done', code: 'K' },
        { name: 'Ann', price: 9, notes: 'n', status: 'new', code: 'K' },
        T2,
      ),
      preferred: 'left',
      sameValue: equal,
    });
    expect(outcomes).toEqual([
      { key: 'name', ...push('right') },
      { key: 'price', ...push('left') },
      { key: 'notes', ...held('right') },
      { key: 'status', ...wins('right', 'later_change') },
      { key: 'code', ...held('left') },
    ]);
  });

  it('returns nothing for no field pairs', () => {
    expect(
      mergeRecord({
        fields: [],
        left: side({}, {}),
        right: side({}, {}),
        preferred: 'left',
        sameValue: equal,
      }),
    ).toEqual([]);
  });

  it('compares each side with its own shadow: a side storing values differently is not a change', () => {
    // Left keeps the exact decimal text, right a float; after our write both shadows hold what each side showed.
    const numeric = (_key: string, a: CanonicalValue, b: CanonicalValue) => Number(a) === Number(b);
    const settled = mergeRecord({
      fields: [spec('amount', 'two_way')],
      left: side({ amount: '2.50' }, { amount: '2.50' }),
      right: side({ amount: 2.5 }, { amount: 2.5 }),
      preferred: 'left',
      sameValue: numeric,
    });
    expect(settled).toEqual([{ key: 'amount', outcome: 'unchanged' }]);

    const edited = mergeRecord({
      fields: [spec('amount', 'two_way')],
      left: side({ amount: '2.50' }, { amount: '2.50' }),
      right: side({ amount: 3 }, { amount: 2.5 }),
      preferred: 'left',
      sameValue: numeric,
    });
    expect(edited).toEqual([{ key: 'amount', ...push('right') }]);
  });

  it('uses sameValue (the converted comparison) to decide convergence, with the field key', () => {
    const seen: [string, CanonicalValue, CanonicalValue][] = [];
    const numeric = (key: string, a: CanonicalValue, b: CanonicalValue) => {
      seen.push([key, a, b]);
      return Number(a) === Number(b);
    };
    const outcomes = mergeRecord({
      fields: [spec('amount', 'two_way')],
      left: side({ amount: '3.00' }, { amount: '2.50' }, T1),
      right: side({ amount: 3 }, { amount: 2.5 }, T2),
      preferred: 'left',
      sameValue: numeric,
    });
    expect(outcomes).toEqual([{ key: 'amount', outcome: 'converged' }]);
    expect(seen).toEqual([['amount', '3.00', 3]]);
  });
});

// [name, a, b, equal]
const equality: [string, CanonicalValue | undefined, CanonicalValue | undefined, boolean][] = [
  ['same strings', 'a', 'a', true],
  ['different strings', 'a', 'b', false],
  ['same numbers', 1.5, 1.5, true],
  ['a number and its text', 1, '1', false],
  ['true and 1', true, 1, false],
  ['false and 0', false, 0, false],
  ['null and null', null, null, true],
  ['undefined and undefined', undefined, undefined, true],
  ['null and undefined', null, undefined, false],
  ['undefined and null', undefined, null, false],
  ['null and empty text', null, '', false],
  ['null and an empty object', null, {}, false],
  ['empty arrays', [], [], true],
  ['same arrays', [1, 'a', null], [1, 'a', null], true],
  ['arrays in another order', [1, 2], [2, 1], false],
  ['arrays of different length', [1], [1, 1], false],
  ['[null] and []', [null], [], false],
  ['a text and an array holding it', 'a', ['a'], false],
  ['an array and an object with index keys', ['x'], { '0': 'x' }, false],
  ['an empty array and an empty object', [], {}, false],
  ['objects in another key order', { a: 1, b: 2 }, { b: 2, a: 1 }, true],
  ['objects with another value', { a: 1, b: 2 }, { a: 1, b: 3 }, false],
  ['an extra null key', { a: 1 }, { a: 1, b: null }, false],
  ['a null key and a missing key', { a: null }, {}, false],
  ['same key count, other keys', { a: 1 }, { b: 1 }, false],
  [
    'nested objects and arrays in another key order',
    { a: { b: [1, { c: null, d: 'x' }] }, e: true },
    { e: true, a: { b: [1, { d: 'x', c: null }] } },
    true,
  ],
  ['nested difference deep down', { a: { b: [1, { c: null }] } }, { a: { b: [1, { c: 0 }] } }, false],
  ['nested arrays', [[1, 2], [3]], [[1, 2], [3]], true],
  ['nested arrays in another order', [[1, 2], [3]], [[3], [1, 2]], false],
];

describe('canonicalEqual', () => {
  it.each(equality)('%s', (_name, a, b, expected) => {
    expect(canonicalEqual(a, b)).toBe(expected);
    expect(canonicalEqual(b, a)).toBe(expected);
  });
});

// [name, side, changed] for key `f`
const changes: [string, MergeSide, boolean][] = [
  ['no copy', side(null, { f: 'a' }), false],
  ['no copy and no shadow', side(null, null), false],
  ['no shadow yet (first sight)', side({ f: 'a' }, null), true],
  ['key missing from the shadow', side({ f: 'a' }, { g: 'a' }), true],
  ['same as the shadow', side({ f: 'a' }, { f: 'a' }), false],
  ['differs from the shadow', side({ f: 'b' }, { f: 'a' }), true],
  ['object in another key order', side({ f: { x: 1, y: 2 } }, { f: { y: 2, x: 1 } }), false],
  ['array in another order', side({ f: ['x', 'y'] }, { f: ['y', 'x'] }), true],
  ['absent from current, null in the shadow', side({}, { f: null }), false],
  ['absent from current, a value in the shadow', side({}, { f: 'a' }), true],
  ['null now, a value in the shadow', side({ f: null }, { f: 'a' }), true],
  ['a value now, null in the shadow', side({ f: 'a' }, { f: null }), true],
  ['number now, its text in the shadow', side({ f: 1 }, { f: '1' }), true],
];

describe('sideChanged', () => {
  it.each(changes)('%s', (_name, s, expected) => {
    expect(sideChanged(s, 'f')).toBe(expected);
  });
});
