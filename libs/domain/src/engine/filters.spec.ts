import type { SideName } from '../mappings/schema';
import type { CanonicalValue } from '../types/type-class';
import {
  type FieldLookup,
  FILTER_OPERATORS,
  type FilterCondition,
  type FilterGroup,
  type FilterOperator,
  filterGate,
  findSyncEnabledField,
  parseFilter,
  passesFilter,
  syncEnabled,
} from './filters';

/** A record's values keyed `side.field`; a field the record lacks reads as null. */
const record =
  (values: Record<string, CanonicalValue>): FieldLookup =>
  (side, field) =>
    values[`${side}.${field}`] ?? null;

const cond = (
  operator: FilterOperator,
  value?: CanonicalValue,
  side: SideName = 'left',
  field = 'f',
): FilterCondition => ({
  side,
  field,
  operator,
  ...(value === undefined ? {} : { value }),
});

const all = (...conditions: (FilterCondition | FilterGroup)[]): FilterGroup => ({ match: 'all', conditions });
const any = (...conditions: (FilterCondition | FilterGroup)[]): FilterGroup => ({ match: 'any', conditions });

describe('parseFilter: accepted', () => {
  // [name, stored filter, parsed]
  const accepted: [string, unknown, FilterGroup | null][] = [
    ['null: no filter', null, null],
    ['absent: no filter', undefined, null],
    ['a group', { match: 'any', conditions: [cond('equals', 'a')] }, any(cond('equals', 'a'))],
    [
      'the summary is dropped',
      { match: 'all', conditions: [cond('is_empty')], summary: 'F is empty' },
      all({ ...cond('is_empty'), value: null }),
    ],
    ['match defaults to all', { conditions: [cond('equals', 1)] }, all(cond('equals', 1))],
    ['an empty group', { match: 'any', conditions: [] }, any()],
    [
      'a missing value reads as null',
      { match: 'all', conditions: [{ side: 'right', field: 'g', operator: 'is_true' }] },
      all({ side: 'right', field: 'g', operator: 'is_true', value: null }),
    ],
    [
      'list and object values are kept',
      all(cond('in', ['a', 1]), cond('equals', { k: [1] })),
      all(cond('in', ['a', 1]), cond('equals', { k: [1] })),
    ],
    [
      'nested groups',
      {
        match: 'all',
        conditions: [
          cond('equals', 'a'),
          {
            match: 'any',
            conditions: [cond('less_than', 3, 'right', 'n'), { match: 'all', conditions: [] }],
          },
        ],
      },
      all(cond('equals', 'a'), any(cond('less_than', 3, 'right', 'n'), all())),
    ],
    [
      'a bare condition is wrapped in an all group',
      cond('contains', 'x', 'right'),
      all(cond('contains', 'x', 'right')),
    ],
    [
      'extra properties of a condition are dropped',
      { ...cond('equals', 'a'), note: 'ignored' },
      all(cond('equals', 'a')),
    ],
  ];

  it.each(accepted)('%s', (_name, input, expected) => {
    expect(parseFilter(input)).toEqual({ ok: true, filter: expected });
  });

  it.each(FILTER_OPERATORS.map((operator) => [operator]))('accepts operator %s', (operator) => {
    expect(parseFilter(all(cond(operator, 1)))).toEqual({ ok: true, filter: all(cond(operator, 1)) });
  });
});

describe('parseFilter: rejected', () => {
  // [name, stored filter, reason (a prefix)]
  const rejected: [string, unknown, string][] = [
    ['a text', 'status = open', 'filter must be a condition or a group'],
    ['a number', 42, 'filter must be a condition or a group'],
    ['an unknown match', { match: 'some', conditions: [] }, 'filter.match must be all or any'],
    [
      'conditions not a list',
      { match: 'all', conditions: { side: 'left' } },
      'filter.conditions must be an array',
    ],
    [
      'a null condition',
      all(null as unknown as FilterCondition),
      'filter.conditions[0] must be a condition or a group',
    ],
    [
      'a text condition',
      all('f = 1' as unknown as FilterCondition),
      'filter.conditions[0] must be a condition or a group',
    ],
    [
      'an unknown operator',
      all(cond('equals', 1), { ...cond('equals', 1), operator: 'like' as FilterOperator }),
      'filter.conditions[1].operator is not one of equals, not_equals',
    ],
    [
      'a missing operator',
      all({ side: 'left', field: 'f' } as FilterCondition),
      'filter.conditions[0].operator is not one of',
    ],
    [
      'an unknown side',
      all({ ...cond('equals', 1), side: 'middle' as SideName }),
      'filter.conditions[0].side must be left or right',
    ],
    [
      'a missing side',
      all({ field: 'f', operator: 'equals' } as FilterCondition),
      'filter.conditions[0].side must be left or right',
    ],
    ['an empty field', all(cond('equals', 1, 'left', '')), 'filter.conditions[0].field must name a field'],
    [
      'a field that is not text',
      all({ ...cond('equals', 1), field: 7 as unknown as string }),
      'filter.conditions[0].field must name a field',
    ],
    [
      'a bare condition with a bad operator',
      { ...cond('equals'), operator: 'eq' },
      'filter.operator is not one of',
    ],
    ['a list at the top', [cond('equals', 1)], 'filter.side must be left or right'],
    [
      'a bad condition deep in nested groups',
      all(cond('equals', 1), any(all({ ...cond('equals', 1), operator: 'like' as FilterOperator }))),
      'filter.conditions[1].conditions[0].conditions[0].operator is not one of',
    ],
    [
      'a bad match in a nested group',
      all({ match: 'none', conditions: [] } as unknown as FilterGroup),
      'filter.conditions[0].match must be all or any',
    ],
  ];

  it.each(rejected)('%s', (_name, input, reason) => {
    const parsed = parseFilter(input);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason.startsWith(reason)).toBe(true);
  });
});

// One condition on left.f: [operator, filter value, record value, passes]
type OperatorRow = [FilterOperator, CanonicalValue, CanonicalValue, boolean];

const operators: OperatorRow[] = [
  ['equals', 'a', 'a', true],
  ['equals', 'a', 'b', false],
  ['equals', 'a', 'A', false],
  ['equals', 1, 1, true],
  ['equals', 1, '1', true],
  ['equals', '1', 1, true],
  ['equals', 1.5, '1.50', true],
  ['equals', '12.5', '12.50', true],
  ['equals', '12345678901234567891', '12345678901234567890', false],
  ['equals', '12345678901234567890', '12345678901234567890.0', true],
  ['equals', 1, 2, false],
  ['equals', true, true, true],
  ['equals', true, 'true', false],
  ['equals', null, null, true],
  ['equals', 'a', null, false],
  ['equals', null, 'a', false],
  ['equals', ['a', 'b'], ['a', 'b'], true],
  ['equals', ['a', 'b'], ['b', 'a'], false],
  ['equals', { x: 1, y: 2 }, { y: 2, x: 1 }, true],
  ['not_equals', 'a', 'a', false],
  ['not_equals', 'a', 'b', true],
  ['not_equals', 1, '1', false],
  ['not_equals', 'a', null, true],
  ['not_equals', null, null, false],
  ['contains', 'world', 'Hello World', true],
  ['contains', 'WORLD', 'hello world', true],
  ['contains', 'x', 'abc', false],
  ['contains', 123, 'abc123', true],
  ['contains', 'b', ['a', 'b'], true],
  ['contains', 'c', ['a', 'b'], false],
  ['contains', 'B', ['a', 'b'], false],
  ['contains', '2', [1, 2], true],
  ['contains', 'a', null, false],
  ['contains', null, 'abc', false],
  ['contains', 4, 42, false],
  ['not_contains', 'world', 'Hello World', false],
  ['not_contains', 'x', 'abc', true],
  ['not_contains', 'b', ['a', 'b'], false],
  ['not_contains', 'a', null, true],
  ['is_empty', null, null, true],
  ['is_empty', null, '', true],
  ['is_empty', null, [], true],
  ['is_empty', null, ' ', false],
  ['is_empty', null, 0, false],
  ['is_empty', null, false, false],
  ['is_empty', null, {}, false],
  ['is_empty', null, 'a', false],
  ['is_not_empty', null, null, false],
  ['is_not_empty', null, '', false],
  ['is_not_empty', null, [], false],
  ['is_not_empty', null, 0, true],
  ['is_not_empty', null, ['a'], true],
  ['greater_than', 9, 10, true],
  ['greater_than', 10, 9, false],
  ['greater_than', 10, 10, false],
  ['greater_than', -2, -1.5, true],
  ['greater_than', 9, '10', true],
  ['greater_than', '9', 10, true],
  ['greater_than', '10', '9.5', false],
  ['greater_than', '9.5', '10', true],
  ['greater_than', '99999999999999999998', '99999999999999999999', true],
  ['greater_than', 'a', 'b', true],
  ['greater_than', 'b', 'a', false],
  ['greater_than', 'a', 'B', false],
  ['greater_than', '2024-01-31', '2024-02-01', true],
  ['greater_than', '2024-05-01T10:00:00Z', '2024-05-01T09:59:59Z', false],
  ['greater_than', 1, null, false],
  ['greater_than', null, 1, false],
  ['greater_than', 1, 'abc', false],
  ['greater_than', 'abc', 1, false],
  ['greater_than', false, true, false],
  ['greater_or_equal', 10, 10, true],
  ['greater_or_equal', 10, 11, true],
  ['greater_or_equal', 10, 9, false],
  ['greater_or_equal', '10', '10.0', true],
  ['greater_or_equal', '2024-01-01', '2024-01-01', true],
  ['greater_or_equal', 1, null, false],
  ['greater_or_equal', null, null, false],
  ['less_than', 10, 9, true],
  ['less_than', 10, 10, false],
  ['less_than', 10, 11, false],
  ['less_than', '10', '9.5', true],
  ['less_than', '2024-02-01', '2024-01-31', true],
  ['less_than', '-2', '-2.5', true],
  ['less_than', '-10', '-9', false],
  ['less_than', '9', '10', false],
  ['less_than', 1, null, false],
  ['less_than', 1, 'abc', false],
  ['less_or_equal', 10, 10, true],
  ['less_or_equal', 10, 9, true],
  ['less_or_equal', 10, 11, false],
  ['less_or_equal', 'b', 'b', true],
  ['less_or_equal', 1, null, false],
  ['in', ['a', 'b'], 'a', true],
  ['in', ['a', 'b'], 'c', false],
  ['in', ['1', '2'], 2, true],
  ['in', [null], null, true],
  ['in', ['a'], null, false],
  ['in', [], 'a', false],
  ['in', 'a', 'a', false],
  ['in', null, 'a', false],
  ['not_in', ['a', 'b'], 'a', false],
  ['not_in', ['a', 'b'], 'c', true],
  ['not_in', ['1', '2'], 2, false],
  ['not_in', ['a'], null, true],
  ['not_in', [], 'a', true],
  ['not_in', 'a', 'a', true],
  ['is_true', null, true, true],
  ['is_true', null, 1, true],
  ['is_true', null, '1', true],
  ['is_true', null, 'true', true],
  ['is_true', null, false, false],
  ['is_true', null, 0, false],
  ['is_true', null, null, false],
  ['is_true', null, 'yes', false],
  ['is_true', null, 'TRUE', false],
  ['is_false', null, false, true],
  ['is_false', null, 0, true],
  ['is_false', null, null, true],
  ['is_false', null, '', true],
  ['is_false', null, true, false],
  ['is_false', null, 1, false],
  ['is_false', null, 'true', false],
];

describe('passesFilter: operators', () => {
  it('has rows for every operator', () => {
    expect(new Set(operators.map(([operator]) => operator))).toEqual(new Set(FILTER_OPERATORS));
  });

  it.each(operators)('%s %j on %j: %s', (operator, value, recordValue, expected) => {
    expect(passesFilter(all(cond(operator, value)), record({ 'left.f': recordValue }))).toBe(expected);
  });

  it.each([
    ['left', 'a', true],
    ['right', 'a', false],
    ['right', 'b', true],
  ] as const)('reads the condition side: %s f equals %s is %s', (side, value, expected) => {
    expect(passesFilter(all(cond('equals', value, side)), record({ 'left.f': 'a', 'right.f': 'b' }))).toBe(
      expected,
    );
  });

  it('a field the record lacks reads as null', () => {
    expect(passesFilter(all(cond('is_empty', undefined, 'left', 'missing')), record({ 'left.f': 'a' }))).toBe(
      true,
    );
  });
});

describe('passesFilter: groups', () => {
  const yes = cond('equals', 'a');
  const no = cond('equals', 'z');
  // [name, filter, passes]
  const groups: [string, FilterGroup | null, boolean][] = [
    ['no filter', null, true],
    ['an empty all group', all(), true],
    ['an empty any group', any(), true],
    ['all: every condition holds', all(yes, yes), true],
    ['all: one condition fails', all(yes, no), false],
    ['all: a single failing condition', all(no), false],
    ['any: one condition holds', any(no, yes), true],
    ['any: no condition holds', any(no, no), false],
    ['nested: all of a holding condition and a holding any', all(yes, any(no, yes)), true],
    ['nested: all of a holding condition and a failing any', all(yes, any(no, no)), false],
    ['nested: any of a failing condition and a holding all', any(no, all(yes, yes)), true],
    ['nested: an empty group inside any holds', any(no, all()), true],
    ['nested: an empty group inside all holds', all(yes, any()), true],
    ['three levels deep', all(any(no, all(yes, any(no, yes))), yes), true],
  ];

  it.each(groups)('%s', (_name, filter, expected) => {
    expect(passesFilter(filter, record({ 'left.f': 'a' }))).toBe(expected);
  });

  it('evaluates what parseFilter returns', () => {
    const parsed = parseFilter({
      match: 'any',
      conditions: [cond('greater_than', 100, 'right', 'amount'), cond('equals', 'vip', 'left', 'tier')],
      summary: 'big or vip',
    });
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(passesFilter(parsed.filter, record({ 'right.amount': '150.00', 'left.tier': 'basic' }))).toBe(
      true,
    );
    expect(passesFilter(parsed.filter, record({ 'right.amount': '99.99', 'left.tier': 'vip' }))).toBe(true);
    expect(passesFilter(parsed.filter, record({ 'right.amount': '99.99', 'left.tier': 'basic' }))).toBe(
      false,
    );
  });
});

describe('findSyncEnabledField', () => {
  // [name, advanced_settings, field]
  const settings: [string, unknown, ReturnType<typeof findSyncEnabledField>][] = [
    ['absent', undefined, null],
    ['null', null, null],
    ['not a list', { kind: 'row_level_sync', side: 'left', value: 'f' }, null],
    ['an empty list', [], null],
    [
      'other kinds only',
      [
        { kind: 'delay_before_syncing', side: 'left', value: '5m' },
        { kind: 'connector_option', side: 'right', value: 'x' },
      ],
      null,
    ],
    [
      'the field in value',
      [
        {
          kind: 'row_level_sync',
          side: 'left',
          value: 'fld_sync',
          description: 'Syncs while Sync is checked',
        },
      ],
      { side: 'left', field: 'fld_sync' },
    ],
    [
      'the field in field wins over value',
      [{ kind: 'row_level_sync', side: 'right', field: 'fld_a', value: 'fld_b' }],
      { side: 'right', field: 'fld_a' },
    ],
    ['an unknown side', [{ kind: 'row_level_sync', side: 'both', value: 'f' }], null],
    ['an empty field', [{ kind: 'row_level_sync', side: 'left', value: '' }], null],
    ['a field that is not text', [{ kind: 'row_level_sync', side: 'left', value: true }], null],
    [
      'entries that are not objects are skipped',
      [null, 'row_level_sync', 3, { kind: 'row_level_sync', side: 'left', value: 'f' }],
      { side: 'left', field: 'f' },
    ],
    [
      'an invalid entry is skipped for a later valid one',
      [
        { kind: 'row_level_sync', side: 'x', value: 'a' },
        { kind: 'row_level_sync', side: 'right', value: 'b' },
      ],
      { side: 'right', field: 'b' },
    ],
    [
      'the first valid entry wins',
      [
        { kind: 'row_level_sync', side: 'left', value: 'a' },
        { kind: 'row_level_sync', side: 'right', value: 'b' },
      ],
      { side: 'left', field: 'a' },
    ],
  ];

  it.each(settings)('%s', (_name, input, expected) => {
    expect(findSyncEnabledField(input)).toEqual(expected);
  });
});

describe('syncEnabled', () => {
  it('syncs every record when there is no sync-enabled field', () => {
    expect(syncEnabled(null, record({}))).toBe(true);
  });

  it.each([
    [true, true],
    [1, true],
    ['1', true],
    ['true', true],
    [false, false],
    [0, false],
    [null, false],
    ['', false],
    ['false', false],
    ['yes', false],
    ['TRUE', false],
    [2, false],
  ] as [CanonicalValue, boolean][])('a sync-enabled value %j syncs: %s', (value, expected) => {
    expect(
      syncEnabled(
        { side: 'right', field: 'enabled' },
        record({ 'right.enabled': value, 'left.enabled': true }),
      ),
    ).toBe(expected);
  });

  it('reads the setting side, not the other', () => {
    expect(
      syncEnabled(
        { side: 'left', field: 'enabled' },
        record({ 'left.enabled': false, 'right.enabled': true }),
      ),
    ).toBe(false);
  });
});

describe('filterGate (engine design 7)', () => {
  // [passed before (null: never evaluated), passes now, sync this update, filtered]
  it.each([
    [true, true, true, false],
    [false, true, true, false],
    [null, true, true, false],
    [true, false, true, true],
    [false, false, false, true],
    [null, false, false, true],
  ] as [boolean | null, boolean, boolean, boolean][])(
    'passed before %s, passes now %s: sync %s, filtered %s',
    (before, now, sync, filtered) => {
      expect(filterGate(before, now)).toEqual({ sync, filtered });
    },
  );
});
