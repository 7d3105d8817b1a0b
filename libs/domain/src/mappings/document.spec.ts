import { mappingsToJson, parseMappings } from './document';
import { SideName } from './schema';

type Json = Record<string, unknown>;

const pair = (extra: Json = {}): Json => ({
  left_table: 'a',
  right_table: 'b',
  direction: 'two_way',
  fields: [{ left_field: 'x', right_field: 'y' }],
  ...extra,
});
const field = (extra: Json): Json => ({ left_field: 'x', right_field: 'y', ...extra });
const doc = (...tables: unknown[]) => ({ tables });
const create = (name: unknown) => ({ create: { name } });

const DIRECTIONS = 'expected one of left_to_right, right_to_left, two_way';

type Fault = [string, unknown, [string, SideName | null, RegExp][]];

const FAULTS: Fault[] = [
  ['not an object', [], [['', null, /expected a mappings document \{"tables": \[...\]\}, got an array/]]],
  ['null', null, [['', null, /got null/]]],
  ['no tables', {}, [['/tables', null, /^required: expected an array of table pairs$/]]],
  [
    'tables not an array',
    { tables: {} },
    [['/tables', null, /expected an array of table pairs, got a object/]],
  ],
  ['a table pair not an object', doc('x'), [['/tables/0', null, /expected a table pair/]]],
  [
    'left_table missing',
    doc(pair({ left_table: undefined })),
    [['/tables/0/left_table', 'left', /^required: expected the left table/]],
  ],
  [
    'right_table empty',
    doc(pair({ right_table: '' })),
    [['/tables/0/right_table', 'right', /got an empty string/]],
  ],
  [
    'right_table blank',
    doc(pair({ right_table: '  ' })),
    [['/tables/0/right_table', 'right', /non-empty string/]],
  ],
  ['left_table a number', doc(pair({ left_table: 7 })), [['/tables/0/left_table', 'left', /got a number/]]],
  [
    'left_table an object without create',
    doc(pair({ left_table: { name: 'x' } })),
    [['/tables/0/left_table', 'left', /\{"create": \{"name": "..."\}\}, got a object/]],
  ],
  [
    'create not an object',
    doc(pair({ left_table: { create: 'x' } })),
    [['/tables/0/left_table/create', 'left', /expected an object \{"name": "..."\}/]],
  ],
  [
    'create without a name',
    doc(pair({ left_table: { create: {} }, fields: [] })),
    [['/tables/0/left_table/create/name', 'left', /^required: expected the name of the table to create/]],
  ],
  [
    'create with an empty name',
    doc(pair({ left_table: create(''), fields: [] })),
    [['/tables/0/left_table/create/name', 'left', /got an empty string/]],
  ],
  [
    'create with a number name',
    doc(pair({ right_table: create(3), fields: [] })),
    [['/tables/0/right_table/create/name', 'right', /got a number/]],
  ],
  [
    'creates on both sides of a table pair',
    doc(pair({ left_table: create('a'), right_table: create('b'), fields: [] })),
    [['/tables/0', null, /only one side of a table pair may be a create/]],
  ],
  [
    'direction missing',
    doc(pair({ direction: undefined })),
    [['/tables/0/direction', null, new RegExp(`^required: ${DIRECTIONS}$`)]],
  ],
  [
    'direction invalid',
    doc(pair({ direction: 'invalid' })),
    [['/tables/0/direction', null, new RegExp(`a PUT must send a real direction: ${DIRECTIONS}`)]],
  ],
  [
    'direction unknown',
    doc(pair({ direction: 'both' })),
    [['/tables/0/direction', null, new RegExp(`${DIRECTIONS}, got "both"`)]],
  ],
  ['direction wrong type', doc(pair({ direction: 1 })), [['/tables/0/direction', null, /got a number/]]],
  [
    'side settings not an object',
    doc(pair({ left: 'sync' })),
    [['/tables/0/left', 'left', /expected an object \{"record_delete_behavior", "view"\}/]],
  ],
  [
    'bad record_delete_behavior',
    doc(pair({ right: { record_delete_behavior: 'delete' } })),
    [['/tables/0/right/record_delete_behavior', 'right', /expected one of sync, do_nothing, got "delete"/]],
  ],
  [
    'view not a string',
    doc(pair({ left: { view: 3 } })),
    [['/tables/0/left/view', 'left', /expected a view value/]],
  ],
  [
    'view empty',
    doc(pair({ right: { view: '' } })),
    [['/tables/0/right/view', 'right', /expected a view value/]],
  ],
  [
    'left_view alias not a string',
    doc(pair({ left_view: true })),
    [['/tables/0/left_view', 'left', /expected a view value/]],
  ],
  [
    'alias and view differ',
    doc(pair({ right_view: 'v1', right: { view: 'v2' } })),
    [['/tables/0/right_view', 'right', /right_view "v1" and right.view "v2" differ/]],
  ],
  [
    'fields missing',
    doc(pair({ fields: undefined })),
    [['/tables/0/fields', null, /^required: expected an array of field pairs$/]],
  ],
  ['fields not an array', doc(pair({ fields: 'x' })), [['/tables/0/fields', null, /got "x"/]]],
  [
    'a field pair not an object',
    doc(pair({ fields: [null] })),
    [['/tables/0/fields/0', null, /expected a field pair/]],
  ],
  [
    'left_field missing',
    doc(pair({ fields: [field({ left_field: undefined })] })),
    [['/tables/0/fields/0/left_field', 'left', /^required: expected the left field/]],
  ],
  [
    'right_field malformed create',
    doc(pair({ fields: [field({ right_field: create(' ') })] })),
    [['/tables/0/fields/0/right_field/create/name', 'right', /name of the field to create/]],
  ],
  [
    'creates on both sides of a field pair',
    doc(pair({ fields: [field({ left_field: create('x'), right_field: create('y') })] })),
    [['/tables/0/fields/0', null, /only one side of a field pair may be a create/]],
  ],
  [
    'field direction invalid',
    doc(pair({ fields: [field({ direction: 'invalid' })] })),
    [['/tables/0/fields/0/direction', null, /a PUT must send a real direction/]],
  ],
  [
    'field direction unknown',
    doc(pair({ fields: [field({ direction: 'sideways' })] })),
    [['/tables/0/fields/0/direction', null, new RegExp(DIRECTIONS)]],
  ],
  [
    'field direction against a left_to_right table',
    doc(pair({ direction: 'left_to_right', fields: [field({ direction: 'right_to_left' })] })),
    [
      [
        '/tables/0/fields/0/direction',
        null,
        /the table pair syncs left_to_right, so a field pair cannot sync right_to_left: expected left_to_right$/,
      ],
    ],
  ],
  [
    'two_way field in a right_to_left table',
    doc(pair({ direction: 'right_to_left', fields: [field({ direction: 'two_way' })] })),
    [['/tables/0/fields/0/direction', null, /cannot sync two_way/]],
  ],
  [
    'a string field ref on a created table',
    doc(pair({ left_table: create('t'), fields: [field({ right_field: create('y') })] })),
    [
      [
        '/tables/0/fields/0/left_field',
        'left',
        /the left table is created by this document, so its fields must be creates too/,
      ],
    ],
  ],
  [
    'every fault is reported, sorted by path',
    doc(pair({ direction: 'nope', fields: [field({ left_field: 1 }), 'x'] }), 5),
    [
      ['/tables/0/direction', null, /expected one of/],
      ['/tables/0/fields/0/left_field', 'left', /got a number/],
      ['/tables/0/fields/1', null, /expected a field pair/],
      ['/tables/1', null, /expected a table pair/],
    ],
  ],
];

describe('parseMappings: structural faults', () => {
  it.each(FAULTS)('%s', (_name, input, expected) => {
    const result = parseMappings(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map(({ path, side }) => [path, side])).toEqual(
      expected.map(([path, side]) => [path, side]),
    );
    result.issues.forEach((issue, index) => {
      expect(issue.code).toBe('invalid_mappings');
      expect(issue.severity).toBe('error');
      expect(issue.message).toMatch(expected[index]![2]);
    });
  });
});

describe('parseMappings: normalisation', () => {
  it('applies defaults and keeps what was sent', () => {
    const result = parseMappings(
      doc(
        pair({
          left_table: 'table_1',
          right_table: create('New'),
          direction: 'left_to_right',
          fields: [
            field({ right_field: create('Y') }),
            field({ right_field: create('Z'), direction: 'left_to_right' }),
          ],
        }),
      ),
    );
    expect(result).toEqual({
      ok: true,
      document: {
        tables: [
          {
            leftTable: 'table_1',
            rightTable: { create: { name: 'New' } },
            direction: 'left_to_right',
            left: { recordDeleteBehavior: 'sync', view: null },
            right: { recordDeleteBehavior: 'sync', view: null },
            fields: [
              { leftField: 'x', rightField: { create: { name: 'Y' } }, direction: null },
              { leftField: 'x', rightField: { create: { name: 'Z' } }, direction: 'left_to_right' },
            ],
          },
        ],
      },
    });
  });

  it.each<[string, Json, { left: string | null; right: string | null }]>([
    ['view inside the side object', { left: { view: 'v1' } }, { left: 'v1', right: null }],
    ['left_view alias', { left_view: 'v1' }, { left: 'v1', right: null }],
    ['right_view alias', { right_view: 'v2' }, { left: null, right: 'v2' }],
    [
      'alias equal to the side view',
      { right_view: 'v2', right: { view: 'v2' } },
      { left: null, right: 'v2' },
    ],
    ['null views', { left_view: null, right: { view: null } }, { left: null, right: null }],
  ])('%s', (_name, extra, views) => {
    const result = parseMappings(doc(pair(extra)));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect({
      left: result.document.tables[0]!.left.view,
      right: result.document.tables[0]!.right.view,
    }).toEqual(views);
  });

  it('reads record_delete_behavior per side', () => {
    const result = parseMappings(doc(pair({ left: { record_delete_behavior: 'do_nothing' }, right: {} })));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.document.tables[0]!.left.recordDeleteBehavior).toBe('do_nothing');
    expect(result.document.tables[0]!.right.recordDeleteBehavior).toBe('sync');
  });

  it('ignores filter, advanced_settings and unknown keys', () => {
    const result = parseMappings({
      tables: [
        pair({
          filter: { match: 'bogus' },
          advanced_settings: 'bogus',
          colour: 'red',
          fields: [field({ extra: 1 })],
        }),
      ],
      version: 3,
    });
    expect(result.ok).toBe(true);
  });

  it.each([
    ['two_way', 'left_to_right'],
    ['two_way', 'right_to_left'],
    ['two_way', 'two_way'],
    ['left_to_right', 'left_to_right'],
    ['right_to_left', 'right_to_left'],
  ])('a %s table allows %s field pairs', (tableDirection, fieldDirection) => {
    expect(
      parseMappings(doc(pair({ direction: tableDirection, fields: [field({ direction: fieldDirection })] })))
        .ok,
    ).toBe(true);
  });

  it('accepts an empty document and empty field lists', () => {
    expect(parseMappings({ tables: [] })).toEqual({ ok: true, document: { tables: [] } });
    expect(parseMappings(doc(pair({ fields: [] }))).ok).toBe(true);
  });

  it('round-trips through the wire form', () => {
    const wire = {
      tables: [
        {
          left_table: 'a',
          right_table: { create: { name: 'B' } },
          direction: 'two_way',
          left: { record_delete_behavior: 'do_nothing', view: 'v' },
          right: { record_delete_behavior: 'sync' },
          fields: [
            { left_field: 'x', right_field: { create: { name: 'Y' } }, direction: 'right_to_left' },
            { left_field: 'z', right_field: { create: { name: 'Z' } } },
          ],
        },
      ],
    };
    const result = parseMappings(wire);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(mappingsToJson(result.document)).toEqual(wire);
  });
});
