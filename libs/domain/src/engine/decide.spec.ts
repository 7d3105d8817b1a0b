import { conversionFor } from '../conversion/conversion';
import type { SideName } from '../mappings/schema';
import type { TypeClass } from '../types/type-class';
import { type DecideInput, decideRecord, type RecordState } from './decide';
import type { FilterGroup, SyncEnabledField } from './filters';
import type { Values } from './merge';
import type { PairField, PairRules } from './pair-rules';

type Way = 'two_way' | 'left_to_right' | 'right_to_left';

function field(
  key: string,
  name: string,
  way: Way,
  left: TypeClass,
  right: TypeClass,
  relationPair: number | null = null,
): PairField {
  const info = (typeClass: TypeClass) => ({ typeClass, typeDetails: null });
  return {
    key,
    left: { id: `fl_${name}`, remoteId: `l_${name}`, name, typeClass: left },
    right: { id: `fr_${name}`, remoteId: `r_${name}`, name, typeClass: right },
    leftToRight: way !== 'right_to_left',
    rightToLeft: way !== 'left_to_right',
    toRight: conversionFor(info(left), info(right)),
    toLeft: conversionFor(info(right), info(left)),
    relationPair,
  };
}

/** name: text <-> text, qty: text (left) <-> integer (right), active: boolean <-> boolean; all two-way. */
const FIELDS = [
  field('0', 'name', 'two_way', 'text', 'text'),
  field('1', 'qty', 'two_way', 'text', 'integer'),
  field('2', 'active', 'two_way', 'boolean', 'boolean'),
];

interface PairOptions {
  fields?: PairField[];
  preferred?: SideName;
  filter?: FilterGroup;
  syncEnabled?: SyncEnabledField;
  rightReadOnly?: boolean;
}

function pair(options: PairOptions = {}): PairRules {
  return {
    direction: 'two_way',
    left: { readOnly: false },
    right: { readOnly: options.rightReadOnly ?? false },
    fields: options.fields ?? FIELDS,
    filter: options.filter ?? null,
    syncEnabled: options.syncEnabled ?? null,
    preferred: options.preferred ?? 'left',
  };
}

const LEFT: Values = { l_name: 'Ada', l_qty: '5', l_active: true };
const RIGHT: Values = { r_name: 'Ada', r_qty: 5, r_active: true };
const T1 = '2024-05-01T10:00:00Z';
const T2 = '2024-05-01T10:00:01Z';
const T3 = '2024-05-01T10:00:02Z';
const NOW = '2024-05-01T12:00:00Z';

/** A linked record, in sync on both sides (shadows equal to the values), both sides observed without a time. */
function linked(changes: Partial<RecordState> = {}): RecordState {
  return {
    current: { left: LEFT, right: RIGHT },
    at: { left: null, right: null },
    shadows: { left: LEFT, right: RIGHT },
    changedAt: { left: null, right: null },
    linked: { left: true, right: true },
    deleted: { left: false, right: false },
    dead: false,
    wasFiltered: false,
    orphan: false,
    ...changes,
  };
}

/** A record seen for the first time on the left only. */
function fresh(left: Values, changes: Partial<RecordState> = {}): RecordState {
  return linked({
    current: { left, right: null },
    shadows: { left: null, right: null },
    linked: { left: true, right: false },
    ...changes,
  });
}

const both = (left: Values, right: Values) => ({ left: { ...LEFT, ...left }, right: { ...RIGHT, ...right } });
const poll = (side: SideName, changes: { field: string; before: unknown; after: unknown }[]) => ({
  side,
  action: 'updated',
  trigger: 'poll',
  changes,
  details: null,
});
const update = (values: Values, keys: string[]) => ({ values, keys, create: false });
const nothingWritten = { writes: { left: null, right: null } };

const FILTER: FilterGroup = {
  match: 'all',
  conditions: [{ side: 'left', field: 'name', operator: 'not_equals', value: 'Hidden' }],
};
const ENABLED: SyncEnabledField = { side: 'left', field: 'active' };
/** rel: a relation to pair 1, whose record l7 has the copy r70 on the right (l8 has none yet). */
const RELATION = [
  field('0', 'name', 'two_way', 'text', 'text'),
  field('1', 'rel', 'two_way', 'relation', 'relation', 1),
];
const TARGETS = new Map([['l7', 'r70']]);

interface Row {
  pair?: PairOptions;
  record: RecordState;
  initial?: boolean;
  expected: Record<string, unknown>;
}

// Engine design sections 3 (merge), 5 (deletes as they reach a merge) and 7 (filters, operations).
const rows: [string, Row][] = [
  [
    'no copy on either side: nothing',
    {
      record: linked({ current: { left: null, right: null } }),
      expected: { ...nothingWritten, operations: [], gate: null },
    },
  ],
  [
    'nothing changed: nothing written or recorded',
    {
      record: linked(),
      expected: { ...nothingWritten, operations: [], merged: true, shadow: { left: {}, right: {} } },
    },
  ],
  [
    'left changed a field: written to right, detected on left',
    {
      record: linked({ current: both({ l_name: 'Bea' }, {}) }),
      expected: {
        writes: { left: null, right: update({ r_name: 'Bea' }, ['0']) },
        shadow: { left: { l_name: 'Bea' }, right: {} },
        conflicts: [],
        operations: [poll('left', [{ field: 'name', before: 'Ada', after: 'Bea' }])],
      },
    },
  ],
  [
    'right changed a field: converted into left type and written there',
    {
      record: linked({ current: both({}, { r_qty: 7 }) }),
      expected: {
        writes: { left: update({ l_qty: '7' }, ['1']), right: null },
        shadow: { left: {}, right: { r_qty: 7 } },
      },
    },
  ],
  [
    'both changed different fields: each written to the other side',
    {
      record: linked({ current: both({ l_name: 'Bea' }, { r_qty: 9 }) }),
      expected: {
        writes: { left: update({ l_qty: '9' }, ['1']), right: update({ r_name: 'Bea' }, ['0']) },
        conflicts: [],
      },
    },
  ],
  [
    'both changed the same field, right later: right wins, conflict recorded',
    {
      record: linked({ current: both({ l_name: 'Lea' }, { r_name: 'Rob' }), at: { left: T1, right: T2 } }),
      expected: {
        writes: { left: update({ l_name: 'Rob' }, ['0']), right: null },
        conflicts: [{ to: 'left', field: 'name', winner: 'right', reason: 'later_change' }],
      },
    },
  ],
  [
    'both changed the same field, left later: left wins over the preferred side',
    {
      pair: { preferred: 'right' },
      record: linked({ current: both({ l_name: 'Lea' }, { r_name: 'Rob' }), at: { left: T2, right: T1 } }),
      expected: {
        writes: { left: null, right: update({ r_name: 'Lea' }, ['0']) },
        conflicts: [{ to: 'right', field: 'name', winner: 'left', reason: 'later_change' }],
      },
    },
  ],
  [
    'both changed the same field at the same instant: the preferred side wins',
    {
      pair: { preferred: 'right' },
      record: linked({ current: both({ l_name: 'Lea' }, { r_name: 'Rob' }), at: { left: T1, right: T1 } }),
      expected: { conflicts: [{ to: 'left', field: 'name', winner: 'right', reason: 'preferred_side' }] },
    },
  ],
  [
    'a pending change read back (not observed) counts at its stored time',
    {
      record: linked({
        current: both({ l_name: 'Lea' }, { r_name: 'Rob' }),
        at: { left: null, right: T2 },
        changedAt: { left: T3, right: null },
      }),
      expected: { conflicts: [{ to: 'right', field: 'name', winner: 'left', reason: 'later_change' }] },
    },
  ],
  [
    'a change with no known time counts as made now (later than one observed earlier)',
    {
      record: linked({ current: both({ l_name: 'Lea' }, { r_name: 'Rob' }), at: { left: null, right: T2 } }),
      expected: { conflicts: [{ to: 'right', field: 'name', winner: 'left', reason: 'later_change' }] },
    },
  ],
  [
    'both changed to equal values (after conversion): both shadows move, nothing written',
    {
      record: linked({ current: both({ l_qty: '8' }, { r_qty: 8 }) }),
      expected: { ...nothingWritten, shadow: { left: { l_qty: '8' }, right: { r_qty: 8 } }, conflicts: [] },
    },
  ],
  [
    'one-way field pair: an edit of the destination is held, not written back',
    {
      pair: { fields: [field('0', 'name', 'left_to_right', 'text', 'text')] },
      record: linked({ current: both({}, { r_name: 'Rob' }) }),
      expected: { ...nothingWritten, shadow: { left: {}, right: { r_name: 'Rob' } } },
    },
  ],
  [
    'read-only target field (the plan carries nothing into it): the change is held on its side',
    {
      pair: { fields: [field('0', 'name', 'right_to_left', 'text', 'text')] },
      record: linked({ current: both({ l_name: 'Bea' }, {}) }),
      expected: { ...nothingWritten, shadow: { left: { l_name: 'Bea' }, right: {} } },
    },
  ],
  [
    'one-way field pair, both changed: the source wins by direction',
    {
      pair: { fields: [field('0', 'name', 'left_to_right', 'text', 'text')] },
      record: linked({ current: both({ l_name: 'Lea' }, { r_name: 'Rob' }), at: { left: T1, right: T2 } }),
      expected: { conflicts: [{ to: 'right', field: 'name', winner: 'left', reason: 'direction' }] },
    },
  ],
  [
    'new record on one side: created on the other, detected as created',
    {
      record: fresh(LEFT),
      expected: {
        writes: { left: null, right: { values: RIGHT, keys: [], create: true } },
        shadow: { left: LEFT, right: {} },
        operations: [{ side: 'left', action: 'created', trigger: 'poll' }],
        merged: false,
      },
    },
  ],
  [
    'new record, read-only target table: not created',
    {
      pair: { rightReadOnly: true },
      record: fresh(LEFT),
      expected: { ...nothingWritten, shadow: { left: LEFT, right: {} } },
    },
  ],
  [
    'edit of a record whose other copy was deleted: not re-created',
    {
      record: linked({
        current: { left: { ...LEFT, l_name: 'Bea' }, right: null },
        linked: { left: true, right: false },
        deleted: { left: false, right: true },
      }),
      expected: {
        ...nothingWritten,
        shadow: { left: { ...LEFT, l_name: 'Bea' }, right: {} },
        operations: [poll('left', [{ field: 'name', before: 'Ada', after: 'Bea' }])],
      },
    },
  ],
  [
    'edit of a dead record (one-way destination copy deleted): not re-created',
    {
      record: linked({
        current: { left: LEFT, right: null },
        linked: { left: true, right: false },
        dead: true,
      }),
      expected: nothingWritten,
    },
  ],
  [
    'a value that cannot be converted: not written, change kept pending, reported',
    {
      record: linked({ current: both({ l_qty: 'many' }, {}) }),
      expected: {
        ...nothingWritten,
        kept: { left: true, right: false },
        shadow: { left: {}, right: {} },
        unconvertible: [{ key: '1', to: 'right', reason: expect.any(String) }],
      },
    },
  ],
  [
    'a new record with a value that cannot be converted: no create, no shadow',
    {
      record: fresh({ ...LEFT, l_qty: 'many' }),
      expected: {
        ...nothingWritten,
        shadow: { left: {}, right: {} },
        unconvertible: [{ key: '1', to: 'right', reason: expect.any(String) }],
      },
    },
  ],
  [
    'filtered before and still filtered: nothing written, the change is still detected',
    {
      pair: { filter: FILTER },
      record: linked({
        current: both({ l_name: 'Hidden', l_qty: '6' }, {}),
        shadows: both({ l_name: 'Hidden' }, {}),
        wasFiltered: true,
      }),
      expected: {
        ...nothingWritten,
        gate: { passes: false, filtered: true, disabled: false },
        operations: [poll('left', [{ field: 'qty', before: '5', after: '6' }])],
      },
    },
  ],
  [
    'a record already flagged filtered: a change that fails the filter is not synced, whatever its shadows',
    {
      pair: { filter: FILTER },
      record: linked({ current: both({ l_name: 'Hidden' }, {}), wasFiltered: true }),
      expected: { ...nothingWritten, gate: { passes: false, filtered: true, disabled: false } },
    },
  ],
  [
    'the change that makes a record fail the filter is still synced',
    {
      pair: { filter: FILTER },
      record: linked({ current: both({ l_name: 'Hidden' }, {}) }),
      expected: {
        writes: { left: null, right: update({ r_name: 'Hidden' }, ['0']) },
        gate: { passes: false, filtered: true, disabled: false },
      },
    },
  ],
  [
    'a record that passes the filter again syncs',
    {
      pair: { filter: FILTER },
      record: linked({
        current: both({ l_name: 'Shown' }, {}),
        shadows: both({ l_name: 'Hidden' }, {}),
        wasFiltered: true,
      }),
      expected: {
        writes: { left: null, right: update({ r_name: 'Shown' }, ['0']) },
        gate: { passes: true, filtered: false, disabled: false },
      },
    },
  ],
  [
    'sync-enabled field off before and now: disabled, nothing written',
    {
      pair: { syncEnabled: ENABLED },
      record: linked({
        current: both({ l_active: false, l_name: 'Bea' }, {}),
        shadows: both({ l_active: false }, {}),
        wasFiltered: true,
      }),
      expected: { ...nothingWritten, gate: { passes: false, filtered: false, disabled: true } },
    },
  ],
  [
    'turning the sync-enabled field off is synced',
    {
      pair: { syncEnabled: ENABLED },
      record: linked({ current: both({ l_active: false }, {}) }),
      expected: {
        writes: { left: null, right: update({ r_active: false }, ['2']) },
        gate: { passes: false, filtered: false, disabled: true },
      },
    },
  ],
  [
    'the filter reads a side without a copy through the mapping: a new right record failing it is not created',
    {
      pair: { filter: FILTER },
      record: linked({
        current: { left: null, right: { ...RIGHT, r_name: 'Hidden' } },
        shadows: { left: null, right: null },
        linked: { left: false, right: true },
      }),
      expected: { ...nothingWritten, gate: { passes: false, filtered: true, disabled: false } },
    },
  ],
  [
    'initial sync, first sight of different values: the preferred side wins, nothing detected',
    {
      initial: true,
      pair: { preferred: 'right' },
      record: linked({
        current: both({ l_name: 'Lea' }, { r_name: 'Rob' }),
        shadows: { left: null, right: null },
        at: { left: T2, right: T1 },
      }),
      expected: {
        writes: { left: update({ l_name: 'Rob' }, ['0']), right: null },
        conflicts: [{ to: 'left', field: 'name', winner: 'right', reason: 'preferred_side' }],
        operations: [],
      },
    },
  ],
  [
    'initial sync of a record linked before: change times are not compared, the preferred side wins',
    {
      initial: true,
      pair: { preferred: 'right' },
      record: linked({ current: both({ l_name: 'Lea' }, { r_name: 'Rob' }), at: { left: T2, right: T1 } }),
      expected: { conflicts: [{ to: 'left', field: 'name', winner: 'right', reason: 'preferred_side' }] },
    },
  ],
  [
    'a side observed again counts at this observation, not at its stored pending time',
    {
      record: linked({
        current: both({ l_name: 'Lea' }, { r_name: 'Rob' }),
        at: { left: T1, right: T2 },
        changedAt: { left: T3, right: null },
      }),
      expected: { conflicts: [{ to: 'left', field: 'name', winner: 'right', reason: 'later_change' }] },
    },
  ],
  [
    'both changed to the same number, one side as decimal text: converged',
    {
      pair: { fields: [field('0', 'price', 'two_way', 'text', 'decimal')] },
      record: linked({
        current: { left: { l_price: '12.50' }, right: { r_price: '12.5' } },
        shadows: { left: { l_price: '1' }, right: { r_price: '1' } },
      }),
      expected: { ...nothingWritten, shadow: { left: { l_price: '12.50' }, right: { r_price: '12.5' } } },
    },
  ],
  [
    'relation whose target has a copy on the other side: translated',
    {
      pair: { fields: RELATION },
      record: fresh({ l_name: 'Ada', l_rel: 'l7' }),
      expected: {
        writes: { left: null, right: { values: { r_name: 'Ada', r_rel: 'r70' }, keys: [], create: true } },
        deferred: false,
      },
    },
  ],
  [
    'relation whose target has no copy yet: created without it, pushed again later',
    {
      pair: { fields: RELATION },
      record: fresh({ l_name: 'Ada', l_rel: 'l8' }),
      expected: {
        writes: { left: null, right: { values: { r_name: 'Ada' }, keys: [], create: true } },
        shadow: { left: { l_name: 'Ada' }, right: {} },
        deferred: true,
      },
    },
  ],
  [
    'relation edit whose target has no copy yet: not written, change kept pending',
    {
      pair: { fields: RELATION },
      record: linked({
        current: { left: { l_name: 'Ada', l_rel: 'l8' }, right: { r_name: 'Ada', r_rel: 'r70' } },
        shadows: { left: { l_name: 'Ada', l_rel: 'l7' }, right: { r_name: 'Ada', r_rel: 'r70' } },
      }),
      expected: { ...nothingWritten, deferred: true, kept: { left: true, right: false } },
    },
  ],
  [
    'our own copy found after a crash, its source gone: its create is recorded, nothing written',
    {
      record: linked({
        current: { left: null, right: RIGHT },
        shadows: { left: null, right: null },
        orphan: true,
      }),
      expected: {
        ...nothingWritten,
        shadow: { left: {}, right: RIGHT },
        gate: null,
        operations: [{ side: 'right', action: 'created', trigger: 'push', details: { recovered: true } }],
      },
    },
  ],
];

describe('decideRecord', () => {
  it.each(rows)('%s', (_name, row) => {
    const input: DecideInput = {
      pair: pair(row.pair),
      record: row.record,
      initial: row.initial ?? false,
      now: NOW,
      relationTargets: (pairIndex, from) => (pairIndex === 1 && from === 'left' ? TARGETS : new Map()),
    };
    const decision = decideRecord(input);
    expect(decision).toMatchObject(row.expected);
    // Where a row names them, shadows, writes and pending changes must match exactly (not as a subset).
    for (const key of ['shadow', 'writes', 'kept', 'conflicts', 'unconvertible'] as const)
      if (key in row.expected) expect(decision[key]).toEqual(row.expected[key]);
  });
});
