import { describeField, SERVICE_ID_FIELD_NAME } from './types';
import { decodeValue, encodeValue, secondsToDuration } from './values';

const field = (type: string, options?: Record<string, unknown>) => ({ id: 'fldX', name: 'X', type, options });

describe('every Airtable field type has a class, flags and type details', () => {
  it.each([
    ['singleLineText', undefined, 'text', true, null],
    ['multilineText', undefined, 'text', true, null],
    ['richText', undefined, 'text', true, null],
    ['email', undefined, 'text', true, null],
    ['url', undefined, 'text', true, null],
    ['phoneNumber', undefined, 'text', true, null],
    ['number', { precision: 0 }, 'integer', true, { scale: 0 }],
    ['number', { precision: 2 }, 'decimal', true, { scale: 2 }],
    ['percent', { precision: 1 }, 'float', true, { scale: 1 }],
    ['currency', { precision: 2, symbol: '$' }, 'decimal', true, { scale: 2, symbol: '$' }],
    ['rating', { max: 5, icon: 'star', color: 'yellowBright' }, 'integer', true, { max: 5 }],
    ['duration', { durationFormat: 'h:mm' }, 'interval', true, { duration_format: 'h:mm' }],
    ['checkbox', { icon: 'check', color: 'greenBright' }, 'boolean', true, null],
    ['date', { dateFormat: { name: 'iso' } }, 'date', true, null],
    ['dateTime', { timeZone: 'Europe/Paris' }, 'timestamp', true, { time_zone: 'Europe/Paris' }],
    [
      'singleSelect',
      { choices: [{ id: 'sel1', name: 'red' }] },
      'select',
      true,
      { options: ['red'], allows_multiple_values: false },
    ],
    [
      'multipleSelects',
      { choices: [{ id: 'sel1', name: 'red' }] },
      'multi_select',
      true,
      { options: ['red'], allows_multiple_values: true },
    ],
    ['singleCollaborator', undefined, 'json', true, { allows_multiple_values: false }],
    ['multipleCollaborators', undefined, 'json', true, { allows_multiple_values: true }],
    [
      'multipleRecordLinks',
      { linkedTableId: 'tblT' },
      'relation',
      true,
      { target_table: 'tblT', allows_multiple_values: true },
    ],
    [
      'multipleRecordLinks',
      { linkedTableId: 'tblT', prefersSingleRecordLink: true },
      'relation',
      true,
      { allows_multiple_values: false },
    ],
    ['multipleAttachments', undefined, 'json', true, { allows_multiple_values: true }],
    ['barcode', undefined, 'json', true, null],
    [
      'formula',
      { result: { type: 'number', options: { precision: 1 } } },
      'decimal',
      false,
      { result_type: 'number' },
    ],
    ['formula', undefined, 'text', false, { result_type: null }],
    ['rollup', { result: { type: 'dateTime' } }, 'timestamp', false, { result_type: 'dateTime' }],
    ['count', undefined, 'integer', false, null],
    ['multipleLookupValues', undefined, 'json', false, { allows_multiple_values: true }],
    ['createdTime', undefined, 'timestamp', false, null],
    ['lastModifiedTime', undefined, 'timestamp', false, null],
    ['createdBy', undefined, 'json', false, null],
    ['lastModifiedBy', undefined, 'json', false, null],
    ['autoNumber', undefined, 'integer', false, null],
    ['button', undefined, 'json', false, null],
  ] as const)('%s %j is %s (write %s)', (type, options, typeClass, write, details) => {
    const info = describeField(field(type, options as Record<string, unknown> | undefined), 'fldX');
    expect(info).toMatchObject({ type, typeClass, read: true, write, primary: true, required: false });
    if (details === null) expect(info.typeDetails).toBeNull();
    else expect(info.typeDetails).toMatchObject(details);
  });

  it('lists a type it does not know as unsupported, never hiding it', () => {
    const info = describeField(field('aiText'), 'fldOther');
    expect(info).toMatchObject({ typeClass: 'unsupported', read: false, write: false, primary: false });
  });

  it('lists the service id field as read-only', () => {
    const info = describeField({ id: 'fldS', name: SERVICE_ID_FIELD_NAME, type: 'singleLineText' }, 'fldX');
    expect(info).toMatchObject({ typeClass: 'text', read: true, write: false });
  });
});

describe('values', () => {
  it.each([
    ['number', { precision: 2 }, 12.5, '12.50'],
    ['number', { precision: 0 }, 42, 42],
    ['currency', { precision: 2 }, -0.01, '-0.01'],
    ['duration', undefined, 93_600, 'P1DT2H'],
    ['duration', undefined, 1800, 'PT30M'],
    ['checkbox', undefined, undefined, false],
    ['singleLineText', undefined, undefined, null],
    ['dateTime', undefined, '2024-02-29T13:45:30.000Z', '2024-02-29T13:45:30Z'],
    ['multipleRecordLinks', {}, ['recA', 'recB'], ['recA', 'recB']],
    ['multipleRecordLinks', { prefersSingleRecordLink: true }, ['recA'], 'recA'],
    [
      'multipleAttachments',
      undefined,
      [{ id: 'att1', url: 'https://x/a.png', filename: 'a.png', size: 3, type: 'image/png', thumbnails: {} }],
      [{ url: 'https://x/a.png', filename: 'a.png', size: 3, type: 'image/png' }],
    ],
  ])('decodes %s %j %j as %j', (type, options, raw, canonical) => {
    expect(decodeValue({ type, options }, raw)).toEqual(canonical);
  });

  it.each([
    ['number', { precision: 2 }, '12.50', 12.5],
    ['number', { precision: 0 }, '42', 42],
    ['duration', undefined, 'P1DT2H', 93_600],
    ['dateTime', undefined, '2024-02-29T13:45:30', '2024-02-29T13:45:30.000Z'],
    ['checkbox', undefined, null, false],
    ['multipleRecordLinks', {}, 'recA', ['recA']],
    [
      'multipleAttachments',
      undefined,
      [{ url: 'https://x/a.png', filename: 'a.png', size: 3 }],
      [{ url: 'https://x/a.png', filename: 'a.png' }],
    ],
    ['singleCollaborator', undefined, { email: 'a@example.com', name: 'A' }, { email: 'a@example.com' }],
  ])('encodes %s %j %j as %j', (type, options, canonical, raw) => {
    expect(encodeValue({ id: 'fldX', name: 'X', type, options }, canonical as never)).toEqual(raw);
  });

  it.each([
    ['number', { precision: 0 }, '9007199254740993', 'beyond the integers'],
    ['number', { precision: 2 }, 'not a number', 'expected a number'],
    ['duration', undefined, 'P1M', 'expected a duration'],
    ['date', undefined, '29/02/2024', 'expected a date'],
    ['multipleRecordLinks', {}, ['not-a-record'], 'expected record ids'],
    ['formula', undefined, 'x', 'cannot be written'],
  ])('refuses %s %j %j as invalid_data naming the field and the problem', (type, options, value, problem) => {
    expect(() => encodeValue({ id: 'fldX', name: 'Amount', type, options }, value as never)).toThrow(
      expect.objectContaining({ kind: 'invalid_data', message: expect.stringContaining('Field "Amount"') }),
    );
    expect(() => encodeValue({ id: 'fldX', name: 'Amount', type, options }, value as never)).toThrow(problem);
  });

  it('writes durations back as read', () => {
    expect([0, 5.5, 59, 3600, 90061].map(secondsToDuration)).toEqual([
      'PT0S',
      'PT5.5S',
      'PT59S',
      'PT1H',
      'P1DT1H1M1S',
    ]);
  });
});
