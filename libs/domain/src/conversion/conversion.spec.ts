import { CanonicalValue, TYPE_CLASSES, TypeClass } from '../types/type-class';
import { conversionFor, conversionSeverity, FieldTypeInfo } from './conversion';

// The matrix of this folder's README.md: rows are sources, columns targets, in TYPE_CLASSES order.
// o = ok, ~ = lossy, - = incompatible (with no type_details on either side).
// prettier-ignore
const MATRIX: Record<TypeClass, string> = {
  //            tx in de fl bo da ti dt ts iv uu js se ms ar re un
  text:        'o  ~  ~  ~  ~  ~  ~  ~  ~  ~  ~  ~  o  ~  ~  -  -',
  integer:     'o  o  o  ~  ~  -  -  -  -  -  -  o  o  -  -  -  -',
  decimal:     'o  ~  o  ~  -  -  -  -  -  -  -  o  -  -  -  -  -',
  float:       'o  ~  o  o  -  -  -  -  -  -  -  o  -  -  -  -  -',
  boolean:     'o  o  -  -  o  -  -  -  -  -  -  o  -  -  -  -  -',
  date:        'o  -  -  -  -  o  -  o  o  -  -  o  -  -  -  -  -',
  time:        'o  -  -  -  -  -  o  -  -  -  -  o  -  -  -  -  -',
  datetime:    'o  -  -  -  -  ~  ~  o  ~  -  -  o  -  -  -  -  -',
  timestamp:   'o  -  -  -  -  ~  ~  ~  o  -  -  o  -  -  -  -  -',
  interval:    'o  -  -  -  -  -  -  -  -  o  -  o  -  -  -  -  -',
  uuid:        'o  -  -  -  -  -  -  -  -  -  o  o  -  -  -  -  -',
  json:        'o  ~  ~  ~  ~  ~  ~  ~  ~  ~  ~  o  ~  ~  ~  -  -',
  select:      'o  ~  -  -  -  -  -  -  -  -  -  o  o  o  -  -  -',
  multi_select:'o  -  -  -  -  -  -  -  -  -  -  o  ~  o  o  -  -',
  array:       'o  -  -  -  -  -  -  -  -  -  -  o  -  ~  o  -  -',
  relation:    '-  -  -  -  -  -  -  -  -  -  -  -  -  -  -  o  -',
  unsupported: '-  -  -  -  -  -  -  -  -  -  -  -  -  -  -  -  -',
};

const KIND = { o: 'ok', '~': 'lossy', '-': 'incompatible' } as const;

const pairs = TYPE_CLASSES.flatMap((from) => {
  const marks = MATRIX[from].split(/\s+/);
  return TYPE_CLASSES.map((to, index) => [from, to, KIND[marks[index] as keyof typeof KIND]] as const);
});

const info = (typeClass: TypeClass, typeDetails: Record<string, unknown> | null = null): FieldTypeInfo => ({
  typeClass,
  typeDetails,
});

describe('conversion matrix', () => {
  it('lists every class pair once', () => {
    expect(pairs).toHaveLength(TYPE_CLASSES.length ** 2);
  });

  it.each(pairs)('%s -> %s is %s', (from, to, kind) => {
    const conversion = conversionFor(info(from), info(to));
    expect(conversion.kind).toBe(kind);
    expect(conversionSeverity(from, to)).toBe(kind);
    if (conversion.kind === 'incompatible') expect(conversion.reason).toMatch(/\w/);
    if (conversion.kind === 'lossy') expect(conversion.reason).toMatch(/\w/);
  });

  it.each(pairs.filter(([, , kind]) => kind !== 'incompatible'))(
    '%s -> %s converts null to null',
    (from, to) => {
      const conversion = conversionFor(info(from), info(to));
      if (conversion.kind === 'incompatible') throw new Error('expected a converter');
      expect(conversion.convert(null)).toEqual({ ok: true, value: null });
    },
  );
});

type Case = [
  string,
  FieldTypeInfo,
  FieldTypeInfo,
  CanonicalValue,
  { value: CanonicalValue } | { fails: RegExp },
];

const INT = info('integer');
const DEC = info('decimal');
const FLOAT = info('float');
const TEXT = info('text');
const BOOL = info('boolean');
const DATE = info('date');
const TIME = info('time');
const DT = info('datetime');
const TS = info('timestamp');
const JSONC = info('json');
const COLORS = { options: ['red', 'green', 'blue'] };

const VALUE_CASES: Case[] = [
  // integers, bigints, -0
  ['safe integer to text', INT, TEXT, 42, { value: '42' }],
  ['bigint string to text', INT, TEXT, '18446744073709551615', { value: '18446744073709551615' }],
  ['bigint string stays a string', INT, INT, '18446744073709551615', { value: '18446744073709551615' }],
  ['safe digit string becomes a number', INT, INT, '-9007199254740991', { value: -9007199254740991 }],
  ['beyond 2^53 stays a string', INT, INT, '9007199254740992', { value: '9007199254740992' }],
  ['integer refuses a fraction', INT, INT, 1.5, { fails: /not an integer/ }],
  ['integer refuses NaN', INT, TEXT, NaN, { fails: /not a finite number/ }],
  ['integer to decimal', INT, DEC, '-12345678901234567890', { value: '-12345678901234567890' }],
  ['bigint to float rounds', INT, FLOAT, '9007199254740993', { value: 9007199254740992 }],
  ['1 to boolean', INT, BOOL, 1, { value: true }],
  ['0 to boolean', INT, BOOL, 0, { value: false }],
  ['2 to boolean fails', INT, BOOL, 2, { fails: /neither 0 nor 1/ }],
  ['bigint to json keeps digits', INT, JSONC, '99999999999999999999', { value: '99999999999999999999' }],
  ['integer to select option', INT, info('select', { options: ['1', '2'] }), 2, { value: '2' }],
  ['integer not an option', INT, info('select', { options: ['1', '2'] }), 3, { fails: /not one of/ }],
  // floats
  ['-0 to integer is 0', FLOAT, INT, -0, { value: 0 }],
  ['-0 to text is "0"', FLOAT, TEXT, -0, { value: '0' }],
  ['-0 to decimal is "0"', FLOAT, DEC, -0, { value: '0' }],
  ['2.5 rounds away from zero', FLOAT, INT, 2.5, { value: 3 }],
  ['-2.5 rounds away from zero', FLOAT, INT, -2.5, { value: -3 }],
  ['1e20 to integer is a digit string', FLOAT, INT, 1e20, { value: '100000000000000000000' }],
  ['NaN refused', FLOAT, TEXT, NaN, { fails: /not a finite number/ }],
  ['Infinity refused', FLOAT, INT, Infinity, { fails: /not a finite number/ }],
  ['-Infinity refused', FLOAT, FLOAT, -Infinity, { fails: /not a finite number/ }],
  ['a string is not a float', FLOAT, FLOAT, '1.5', { fails: /not a number/ }],
  ['float to decimal without exponent', FLOAT, DEC, 1e21, { value: '1000000000000000000000' }],
  ['small float to decimal', FLOAT, DEC, 1e-7, { value: '0.0000001' }],
  [
    'float to decimal(10,2) rounds',
    FLOAT,
    info('decimal', { precision: 10, scale: 2 }),
    1.005,
    { value: '1.01' },
  ],
  [
    'float too large for decimal(10,2)',
    FLOAT,
    info('decimal', { precision: 10, scale: 2 }),
    1e9,
    { fails: /does not fit decimal\(10,2\)/ },
  ],
  ['float to json', FLOAT, JSONC, 0.5, { value: 0.5 }],
  // decimals
  ['decimal keeps trailing zeros', DEC, DEC, '12.50', { value: '12.50' }],
  ['decimal "-0.00" loses its sign', DEC, DEC, '-0.00', { value: '0.00' }],
  ['decimal to integer rounds', DEC, INT, '-12.5', { value: -13 }],
  ['big decimal to integer', DEC, INT, '123456789012345678901.4', { value: '123456789012345678901' }],
  ['decimal NaN refused', DEC, FLOAT, 'NaN', { fails: /not a finite decimal/ }],
  ['decimal Infinity refused', DEC, INT, 'Infinity', { fails: /not a finite decimal/ }],
  ['decimal to float', DEC, FLOAT, '0.1', { value: 0.1 }],
  ['decimal to text unchanged', DEC, TEXT, '12.50', { value: '12.50' }],
  [
    'decimal(10,4) to decimal(6,2) rounds',
    info('decimal', { precision: 10, scale: 4 }),
    info('decimal', { precision: 6, scale: 2 }),
    '1234.5678',
    { value: '1234.57' },
  ],
  [
    'decimal(10,4) to decimal(6,2) overflows',
    info('decimal', { precision: 10, scale: 4 }),
    info('decimal', { precision: 6, scale: 2 }),
    '12345.1',
    { fails: /at most 4 integer digits/ },
  ],
  [
    'rounding carries into a new digit',
    DEC,
    info('decimal', { precision: 4, scale: 2 }),
    '99.995',
    { fails: /does not fit/ },
  ],
  ['rounding carries', DEC, info('decimal', { precision: 5, scale: 2 }), '99.995', { value: '100.00' }],
  [
    'negative half rounds away from zero',
    DEC,
    info('decimal', { precision: 5, scale: 2 }),
    '-0.005',
    { value: '-0.01' },
  ],
  ['decimal padded to the scale', DEC, info('decimal', { precision: 5, scale: 2 }), '3', { value: '3.00' }],
  ['precision only means scale 0', DEC, info('decimal', { precision: 3 }), '12.5', { value: '13' }],
  // booleans
  ['true to text', BOOL, TEXT, true, { value: 'true' }],
  ['false to integer', BOOL, INT, false, { value: 0 }],
  ['boolean refuses a number', BOOL, BOOL, 1, { fails: /not a boolean/ }],
  // text parsing
  ['text to integer', TEXT, INT, ' 12 ', { value: 12 }],
  ['text "+007" to integer', TEXT, INT, '+007', { value: 7 }],
  ['text "1.0" to integer', TEXT, INT, '1.0', { value: 1 }],
  ['text "-0" to integer', TEXT, INT, '-0', { value: 0 }],
  ['text bigint to integer', TEXT, INT, '-99999999999999999999', { value: '-99999999999999999999' }],
  ['text "1.5" to integer fails', TEXT, INT, '1.5', { fails: /not a whole number/ }],
  ['text "abc" to integer fails', TEXT, INT, 'abc', { fails: /not a whole number/ }],
  ['empty text to integer is null', TEXT, INT, '', { value: null }],
  ['blank text to date is null', TEXT, DATE, '   ', { value: null }],
  ['empty text stays empty text', TEXT, TEXT, '', { value: '' }],
  ['text to decimal normalises', TEXT, DEC, '+.50', { value: '0.50' }],
  ['text "-0" to decimal', TEXT, DEC, '-0', { value: '0' }],
  ['text exponent to decimal', TEXT, DEC, '1.5e3', { value: '1500' }],
  ['text "NaN" to decimal fails', TEXT, DEC, 'NaN', { fails: /not a finite decimal/ }],
  ['text to float', TEXT, FLOAT, '-1.5e-3', { value: -0.0015 }],
  ['text "-0" to float is 0', TEXT, FLOAT, '-0', { value: 0 }],
  ['text "NaN" to float fails', TEXT, FLOAT, 'NaN', { fails: /not a finite number/ }],
  ['text "Infinity" to float fails', TEXT, FLOAT, 'Infinity', { fails: /not a finite number/ }],
  ['text "1e999" to float fails', TEXT, FLOAT, '1e999', { fails: /not a finite number/ }],
  ['text "0x10" to float fails', TEXT, FLOAT, '0x10', { fails: /not a finite number/ }],
  ['text "Yes" to boolean', TEXT, BOOL, 'Yes', { value: true }],
  ['text "0" to boolean', TEXT, BOOL, '0', { value: false }],
  ['text "maybe" to boolean fails', TEXT, BOOL, 'maybe', { fails: /not a boolean/ }],
  ['leap day to date', TEXT, DATE, '2024-02-29', { value: '2024-02-29' }],
  ['2000 was a leap year', TEXT, DATE, '2000-02-29', { value: '2000-02-29' }],
  ['1900 was not a leap year', TEXT, DATE, '1900-02-29', { fails: /not a valid calendar date/ }],
  ['2023-02-29 fails', TEXT, DATE, '2023-02-29', { fails: /not a valid calendar date/ }],
  ['month 13 fails', TEXT, DATE, '2024-13-01', { fails: /not a valid calendar date/ }],
  ['slashes are not a date', TEXT, DATE, '01/02/2024', { fails: /not a date/ }],
  ['text to time adds seconds', TEXT, TIME, '12:30', { value: '12:30:00' }],
  ['time keeps microseconds', TEXT, TIME, '12:30:00.123456', { value: '12:30:00.123456' }],
  ['time truncates nanoseconds', TEXT, TIME, '12:30:00.123456789', { value: '12:30:00.123456' }],
  ['24:00:00 is end of day', TEXT, TIME, '24:00:00', { value: '24:00:00' }],
  ['24:00:01 fails', TEXT, TIME, '24:00:01', { fails: /not a valid time/ }],
  ['12:60 fails', TEXT, TIME, '12:60', { fails: /not a valid time/ }],
  ['leap second refused', TEXT, TIME, '23:59:60', { fails: /not a valid time/ }],
  ['text to datetime', TEXT, DT, '2024-02-29 08:15:00.5', { value: '2024-02-29T08:15:00.5' }],
  ['date text to datetime is midnight', TEXT, DT, '2024-02-29', { value: '2024-02-29T00:00:00' }],
  [
    'zoned text to datetime is UTC wall clock',
    TEXT,
    DT,
    '2024-03-01T01:30:00+02:00',
    { value: '2024-02-29T23:30:00' },
  ],
  [
    'zoned text to timestamp crosses a leap day',
    TEXT,
    TS,
    '2024-03-01T01:30:00+02:00',
    { value: '2024-02-29T23:30:00Z' },
  ],
  [
    'negative offset crosses a year',
    TEXT,
    TS,
    '2023-12-31T23:30:00.25-01:00',
    { value: '2024-01-01T00:30:00.25Z' },
  ],
  ['unzoned text to timestamp is UTC', TEXT, TS, '2024-01-01T10:00', { value: '2024-01-01T10:00:00Z' }],
  ['bad zone fails', TEXT, TS, '2024-01-01T10:00:00 CET', { fails: /unreadable time zone/ }],
  ['text to interval', TEXT, info('interval'), 'p1dt2h', { value: 'P1DT2H' }],
  ['PostgreSQL negative interval', TEXT, info('interval'), 'P-1Y-2M', { value: 'P-1Y-2M' }],
  ['text "1 day" is not an interval', TEXT, info('interval'), '1 day', { fails: /ISO 8601 duration/ }],
  ['"P" alone is not an interval', TEXT, info('interval'), 'P', { fails: /ISO 8601 duration/ }],
  ['"PT" alone is not an interval', TEXT, info('interval'), 'PT', { fails: /ISO 8601 duration/ }],
  [
    'text to uuid lower-cases',
    TEXT,
    info('uuid'),
    'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
    { value: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' },
  ],
  [
    'braced uuid',
    TEXT,
    info('uuid'),
    '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}',
    { value: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' },
  ],
  [
    'half-braced uuid fails',
    TEXT,
    info('uuid'),
    '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    { fails: /not a uuid/ },
  ],
  ['text to json parses', TEXT, JSONC, '{"a":[1,2]}', { value: { a: [1, 2] } }],
  ['invalid JSON text fails', TEXT, JSONC, '{a:1}', { fails: /not valid JSON/ }],
  ['text to select option', TEXT, info('select', COLORS), 'red', { value: 'red' }],
  [
    'text not an option fails',
    TEXT,
    info('select', COLORS),
    'Red',
    { fails: /not one of the target field's options/ },
  ],
  ['text to select without options', TEXT, info('select'), 'anything', { value: 'anything' }],
  [
    'text to multi_select splits at commas',
    TEXT,
    info('multi_select', COLORS),
    'red, blue,,red',
    { value: ['red', 'blue'] },
  ],
  [
    'text to array of integers',
    TEXT,
    info('array', { element_class: 'integer' }),
    '[1, "2", null]',
    { value: [1, 2, null] },
  ],
  [
    'text to array needs a JSON array',
    TEXT,
    info('array', { element_class: 'integer' }),
    '1',
    { fails: /not a JSON array/ },
  ],
  [
    'text element that fails',
    TEXT,
    info('array', { element_class: 'date' }),
    '["2023-02-29"]',
    { fails: /element "2023-02-29"/ },
  ],
  ['text within max_length', TEXT, info('text', { max_length: 3 }), 'abc', { value: 'abc' }],
  [
    'text beyond max_length fails',
    TEXT,
    info('text', { max_length: 3 }),
    'abcd',
    { fails: /longer than 3 characters/ },
  ],
  [
    'max_length counts characters, not UTF-16 units',
    TEXT,
    info('text', { max_length: 2 }),
    '😀é',
    { value: '😀é' },
  ],
  ['text refuses a number value', TEXT, TEXT, 5, { fails: /not text/ }],
  // dates and times
  ['date to datetime is midnight', DATE, DT, '2024-02-29', { value: '2024-02-29T00:00:00' }],
  ['date to timestamp is midnight UTC', DATE, TS, '2024-02-29', { value: '2024-02-29T00:00:00Z' }],
  [
    'datetime to timestamp is taken as UTC',
    DT,
    TS,
    '2024-02-29T23:59:59.999999',
    { value: '2024-02-29T23:59:59.999999Z' },
  ],
  [
    'timestamp to datetime is the UTC wall clock',
    TS,
    DT,
    '2024-02-29T23:59:59.5Z',
    { value: '2024-02-29T23:59:59.5' },
  ],
  ['timestamp to date is the UTC date', TS, DATE, '2024-02-29T23:59:59Z', { value: '2024-02-29' }],
  [
    'timestamp to time keeps the fraction',
    TS,
    TIME,
    '2024-02-29T23:59:59.000001Z',
    { value: '23:59:59.000001' },
  ],
  ['datetime to date', DT, DATE, '2024-02-29T12:00:00', { value: '2024-02-29' }],
  ['datetime to time', DT, TIME, '2024-02-29T12:00:00.25', { value: '12:00:00.25' }],
  ['datetime 24:00 rolls over', DT, TS, '2024-02-28T24:00:00', { value: '2024-02-29T00:00:00Z' }],
  ['a broken datetime fails', DT, DATE, 'yesterday', { fails: /not a date and time/ }],
  ['time to text unchanged', TIME, TEXT, '08:00:00.5', { value: '08:00:00.5' }],
  ['timestamp to text unchanged', TS, TEXT, '2024-02-29T00:00:00Z', { value: '2024-02-29T00:00:00Z' }],
  // uuid
  [
    'uuid to text',
    info('uuid'),
    TEXT,
    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    { value: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' },
  ],
  [
    'uuid too long for varchar(10)',
    info('uuid'),
    info('text', { max_length: 10 }),
    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    { fails: /longer than 10/ },
  ],
  // json
  ['json object to text', JSONC, TEXT, { a: 1, b: [true] }, { value: '{"a":1,"b":[true]}' }],
  ['json string to text is JSON text', JSONC, TEXT, 'abc', { value: '"abc"' }],
  ['json number to integer', JSONC, INT, 3, { value: 3 }],
  ['json fraction to integer rounds', JSONC, INT, 2.5, { value: 3 }],
  ['json string to integer parses', JSONC, INT, '12', { value: 12 }],
  ['json true to integer', JSONC, INT, true, { value: 1 }],
  ['json true to date fails', JSONC, DATE, true, { fails: /JSON boolean cannot be converted to date/ }],
  ['json object to integer fails', JSONC, INT, { a: 1 }, { fails: /JSON object/ }],
  [
    'json array to array',
    JSONC,
    info('array', { element_class: 'integer' }),
    [1, '2', 3.0],
    { value: [1, 2, 3] },
  ],
  ['json array to multi_select', JSONC, info('multi_select', COLORS), ['red', 'red'], { value: ['red'] }],
  ['json to json unchanged', JSONC, JSONC, [1, { b: null }], { value: [1, { b: null }] }],
  // select / multi_select / array
  [
    'select to select within options',
    info('select', COLORS),
    info('select', { options: ['red'] }),
    'red',
    { value: 'red' },
  ],
  [
    'select to select outside options',
    info('select', COLORS),
    info('select', { options: ['red'] }),
    'blue',
    { fails: /not one of/ },
  ],
  ['select to multi_select', info('select', COLORS), info('multi_select', COLORS), 'red', { value: ['red'] }],
  ['select "12" to integer', info('select'), INT, '12', { value: 12 }],
  ['multi_select to text', info('multi_select'), TEXT, ['red', 'blue'], { value: 'red, blue' }],
  ['empty multi_select to text', info('multi_select'), TEXT, [], { value: '' }],
  ['multi_select with one option to select', info('multi_select'), info('select'), ['red'], { value: 'red' }],
  ['empty multi_select to select is null', info('multi_select'), info('select'), [], { value: null }],
  [
    'multi_select with two options to select fails',
    info('multi_select'),
    info('select'),
    ['red', 'blue'],
    { fails: /several options/ },
  ],
  [
    'multi_select outside target options',
    info('multi_select'),
    info('multi_select', COLORS),
    ['red', 'pink'],
    { fails: /"pink" is not one of/ },
  ],
  [
    'multi_select to array of text',
    info('multi_select'),
    info('array', { element_class: 'text' }),
    ['a', 'b'],
    { value: ['a', 'b'] },
  ],
  [
    'multi_select to array of integer',
    info('multi_select'),
    info('array', { element_class: 'integer' }),
    ['1', 'x'],
    { fails: /element "x"/ },
  ],
  [
    'array of text to multi_select drops duplicates',
    info('array', { element_class: 'text' }),
    info('multi_select'),
    ['a', null, 'a', 'b'],
    { value: ['a', 'b'] },
  ],
  [
    'array of integers to multi_select',
    info('array', { element_class: 'integer' }),
    info('multi_select', { options: ['1'] }),
    [1, 1],
    { value: ['1'] },
  ],
  [
    'array to text is JSON text',
    info('array', { element_class: 'date' }),
    TEXT,
    ['2024-02-29', null],
    { value: '["2024-02-29",null]' },
  ],
  [
    'array of float to array of integer',
    info('array', { element_class: 'float' }),
    info('array', { element_class: 'integer' }),
    [1.5, -0],
    { value: [2, 0] },
  ],
  [
    'nested arrays pass through',
    info('array', { element_class: 'array' }),
    info('array', { element_class: 'array' }),
    [[1], [2, 3]],
    { value: [[1], [2, 3]] },
  ],
  ['an array value must be a list', info('array'), info('array'), 'x', { fails: /not an array/ }],
  // relation
  ['relation to relation unchanged', info('relation'), info('relation'), '42', { value: '42' }],
  [
    'single relation into a multiple one',
    info('relation'),
    info('relation', { allows_multiple_values: true }),
    '42',
    { value: ['42'] },
  ],
  [
    'multiple relation with one id into a single one',
    info('relation', { allows_multiple_values: true }),
    info('relation'),
    ['42'],
    { value: '42' },
  ],
  [
    'multiple relation with no id into a single one',
    info('relation', { allows_multiple_values: true }),
    info('relation'),
    [],
    { value: null },
  ],
  [
    'multiple relation with two ids into a single one',
    info('relation', { allows_multiple_values: true }),
    info('relation'),
    ['1', '2'],
    { fails: /links 2/ },
  ],
];

describe('value conversion', () => {
  it.each(VALUE_CASES)('%s', (_name, from, to, input, expected) => {
    const conversion = conversionFor(from, to);
    if (conversion.kind === 'incompatible')
      throw new Error(`unexpectedly incompatible: ${conversion.reason}`);
    const result = conversion.convert(input);
    if ('value' in expected) expect(result).toEqual({ ok: true, value: expected.value });
    else {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(expected.fails);
    }
  });

  it('-0 never leaves a converter as -0', () => {
    for (const to of [INT, FLOAT, JSONC]) {
      const conversion = conversionFor(FLOAT, to);
      if (conversion.kind === 'incompatible') throw new Error('incompatible');
      const result = conversion.convert(-0);
      expect(result.ok && Object.is(result.value, -0)).toBe(false);
    }
  });
});

describe('severity refined by type_details', () => {
  it.each<[string, FieldTypeInfo, FieldTypeInfo, 'ok' | 'lossy' | 'incompatible']>([
    ['text to text without max_length', TEXT, TEXT, 'ok'],
    ['text to varchar(10)', TEXT, info('text', { max_length: 10 }), 'lossy'],
    ['varchar(10) to varchar(10)', info('text', { max_length: 10 }), info('text', { max_length: 10 }), 'ok'],
    [
      'varchar(20) to varchar(10)',
      info('text', { max_length: 20 }),
      info('text', { max_length: 10 }),
      'lossy',
    ],
    ['integer to varchar(20)', INT, info('text', { max_length: 20 }), 'ok'],
    ['integer to varchar(5)', INT, info('text', { max_length: 5 }), 'lossy'],
    ['uuid to varchar(36)', info('uuid'), info('text', { max_length: 36 }), 'ok'],
    [
      'select with short options to varchar(5)',
      info('select', COLORS),
      info('text', { max_length: 5 }),
      'ok',
    ],
    ['json to varchar(100)', JSONC, info('text', { max_length: 100 }), 'lossy'],
    ['select to select without target options', info('select', COLORS), info('select'), 'ok'],
    [
      'select to select with the same options',
      info('select', COLORS),
      info('select', { options: ['blue', 'green', 'red', 'pink'] }),
      'ok',
    ],
    [
      'select to select with fewer options',
      info('select', COLORS),
      info('select', { options: ['red'] }),
      'lossy',
    ],
    ['select without options to select with options', info('select'), info('select', COLORS), 'lossy'],
    ['text to select with options', TEXT, info('select', COLORS), 'lossy'],
    [
      'multi_select to multi_select with fewer options',
      info('multi_select', COLORS),
      info('multi_select', { options: ['red'] }),
      'lossy',
    ],
    [
      'multi_select to multi_select with more options',
      info('multi_select', { options: ['red'] }),
      info('multi_select', COLORS),
      'ok',
    ],
    [
      'select to multi_select within options',
      info('select', { options: ['red'] }),
      info('multi_select', COLORS),
      'ok',
    ],
    ['decimal to unbounded decimal', info('decimal', { precision: 10, scale: 2 }), DEC, 'ok'],
    [
      'decimal(10,2) to decimal(12,4)',
      info('decimal', { precision: 10, scale: 2 }),
      info('decimal', { precision: 12, scale: 4 }),
      'ok',
    ],
    [
      'decimal(10,2) to decimal(10,4)',
      info('decimal', { precision: 10, scale: 2 }),
      info('decimal', { precision: 10, scale: 4 }),
      'lossy',
    ],
    [
      'decimal(10,4) to decimal(12,2)',
      info('decimal', { precision: 10, scale: 4 }),
      info('decimal', { precision: 12, scale: 2 }),
      'lossy',
    ],
    ['unbounded decimal to decimal(10,2)', DEC, info('decimal', { precision: 10, scale: 2 }), 'lossy'],
    ['integer to decimal(20,0)', INT, info('decimal', { precision: 20, scale: 0 }), 'ok'],
    ['integer to decimal(10,2)', INT, info('decimal', { precision: 10, scale: 2 }), 'lossy'],
    ['float to decimal(10,2)', FLOAT, info('decimal', { precision: 10, scale: 2 }), 'lossy'],
    [
      'array of date to array of timestamp',
      info('array', { element_class: 'date' }),
      info('array', { element_class: 'timestamp' }),
      'ok',
    ],
    [
      'array of timestamp to array of date',
      info('array', { element_class: 'timestamp' }),
      info('array', { element_class: 'date' }),
      'lossy',
    ],
    [
      'array of date to array of integer',
      info('array', { element_class: 'date' }),
      info('array', { element_class: 'integer' }),
      'incompatible',
    ],
    [
      'array of relation ids to array of text',
      info('array', { element_class: 'relation' }),
      info('array', { element_class: 'text' }),
      'incompatible',
    ],
    [
      'array of text to multi_select without options',
      info('array', { element_class: 'text' }),
      info('multi_select'),
      'lossy',
    ],
    [
      'array of date to multi_select',
      info('array', { element_class: 'date' }),
      info('multi_select'),
      'incompatible',
    ],
    [
      'multi_select to array of date',
      info('multi_select'),
      info('array', { element_class: 'date' }),
      'incompatible',
    ],
    [
      'multi_select to array of integer',
      info('multi_select'),
      info('array', { element_class: 'integer' }),
      'lossy',
    ],
    [
      'single relation to multiple',
      info('relation'),
      info('relation', { allows_multiple_values: true }),
      'ok',
    ],
    [
      'multiple relation to single',
      info('relation', { allows_multiple_values: true }),
      info('relation'),
      'lossy',
    ],
    ['unsupported to itself', info('unsupported'), info('unsupported'), 'incompatible'],
  ])('%s: %s', (_name, from, to, kind) => {
    const conversion = conversionFor(from, to);
    expect(conversion.kind).toBe(kind);
    if (conversion.kind !== 'ok') expect(conversion.reason).toMatch(/\w/);
  });
});
