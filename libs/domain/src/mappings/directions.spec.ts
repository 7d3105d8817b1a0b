import {
  allowedFieldDirections,
  Direction,
  directionOf,
  effectiveFieldDirection,
  FieldDirectionInput,
  isDirection,
  oneWayDirections,
  writesSide,
} from './directions';
import { field, table } from './test/fixtures';

const text = field('field_a', 'a', 'text');
const text2 = field('field_b', 'b', 'text');

type Case = [
  string,
  Partial<FieldDirectionInput> & { direction: Direction },
  Direction | 'invalid',
  string[],
  RegExp | null,
];

const CASES: Case[] = [
  [
    'both fields fine, two_way',
    { direction: 'two_way' },
    'two_way',
    ['left_to_right', 'right_to_left'],
    null,
  ],
  ['both fields fine, one way', { direction: 'right_to_left' }, 'right_to_left', ['right_to_left'], null],
  [
    'lossy types still sync',
    { direction: 'two_way', right: field('field_b', 'b', 'integer') },
    'two_way',
    ['left_to_right', 'right_to_left'],
    null,
  ],
  [
    'left field orphaned',
    { direction: 'two_way', left: { ...text, orphaned: true } },
    'invalid',
    [],
    /left field "a" no longer exists in the app/,
  ],
  [
    'right field deleted from the schema',
    { direction: 'left_to_right', right: null },
    'invalid',
    [],
    /right field no longer exists/,
  ],
  [
    'right field became read-only: one way left',
    { direction: 'two_way', right: { ...text2, write: false } },
    'two_way',
    ['right_to_left'],
    /right field "b" is read-only/,
  ],
  [
    'right field became read-only: nothing left',
    { direction: 'left_to_right', right: { ...text2, write: false } },
    'invalid',
    [],
    /read-only/,
  ],
  [
    'left field no longer readable',
    { direction: 'left_to_right', left: { ...text, read: false } },
    'invalid',
    [],
    /left field "a" cannot be read/,
  ],
  [
    'types no longer convert',
    { direction: 'two_way', right: field('field_b', 'b', 'relation') },
    'invalid',
    [],
    /text -> relation/,
  ],
  [
    'date <-> time never converts',
    { direction: 'two_way', left: field('field_a', 'a', 'date'), right: field('field_b', 'b', 'time') },
    'invalid',
    [],
    /date -> time/,
  ],
  [
    'date -> timestamp converts, back is lossy',
    { direction: 'two_way', left: field('field_a', 'a', 'date'), right: field('field_b', 'b', 'timestamp') },
    'two_way',
    ['left_to_right', 'right_to_left'],
    null,
  ],
  [
    'integer <-> boolean: lossy one way, ok the other',
    { direction: 'two_way', left: field('field_a', 'a', 'integer'), right: field('field_b', 'b', 'boolean') },
    'two_way',
    ['left_to_right', 'right_to_left'],
    null,
  ],
  [
    'the target table became read-only',
    { direction: 'left_to_right', rightTable: table('table_b', 'v', [], { readOnly: true }) },
    'invalid',
    [],
    /right table "v" is read-only/,
  ],
  [
    'a read-only table on the source side does not matter',
    { direction: 'left_to_right', leftTable: table('table_a', 'v', [], { readOnly: true }) },
    'left_to_right',
    ['left_to_right'],
    null,
  ],
];

describe('effectiveFieldDirection', () => {
  it.each(CASES)('%s', (_name, input, direction, allowed, reason) => {
    const result = effectiveFieldDirection({ left: text, right: text2, ...input });
    expect(result.direction).toBe(direction);
    expect(result.allowed).toEqual(allowed);
    if (reason) expect(result.disabled.map((item) => item.reason).join(' | ')).toMatch(reason);
    else expect(result.disabled).toEqual([]);
  });
});

describe('direction helpers', () => {
  it.each<[Direction, string[]]>([
    ['left_to_right', ['left_to_right']],
    ['right_to_left', ['right_to_left']],
    ['two_way', ['left_to_right', 'right_to_left']],
  ])('%s is made of %j', (direction, ways) => {
    expect(oneWayDirections(direction)).toEqual(ways);
    expect(directionOf(oneWayDirections(direction))).toBe(direction);
  });

  it.each<[Direction, Direction[]]>([
    ['left_to_right', ['left_to_right']],
    ['right_to_left', ['right_to_left']],
    ['two_way', ['left_to_right', 'right_to_left', 'two_way']],
  ])('a %s table allows field directions %j', (direction, allowed) => {
    expect(allowedFieldDirections(direction)).toEqual(allowed);
  });

  it.each<[Direction, boolean, boolean]>([
    ['left_to_right', false, true],
    ['right_to_left', true, false],
    ['two_way', true, true],
  ])('%s writes left: %s, right: %s', (direction, left, right) => {
    expect([writesSide(direction, 'left'), writesSide(direction, 'right')]).toEqual([left, right]);
  });

  it.each([
    ['two_way', true],
    ['invalid', false],
    ['TWO_WAY', false],
    [null, false],
  ])('isDirection(%p) = %p', (value, expected) => {
    expect(isDirection(value)).toBe(expected);
  });

  it('no ways is no direction', () => {
    expect(directionOf([])).toBeNull();
  });
});
