/**
 * The type table (every uidt NocoDB 0.301 has, nocodb-sdk's `UITypes`) and value encoding, without a server.
 * The values NocoDB answers were read from the real server (contract.spec.ts round-trips them).
 */
import type { NocodbColumn } from './sql';
import { describeField, isListed } from './types';
import { decodeValue, encodeValue, secondsToDuration } from './values';

const column = (uidt: string, extra: Partial<NocodbColumn> = {}): NocodbColumn => ({
  id: `c_${uidt}`,
  title: uidt.toLowerCase(),
  uidt,
  ...extra,
});

describe('nocodb types', () => {
  it.each([
    ['ID', 'integer', true, false],
    ['SingleLineText', 'text', true, true],
    ['LongText', 'text', true, true],
    ['Email', 'text', true, true],
    ['URL', 'text', true, true],
    ['PhoneNumber', 'text', true, true],
    ['GeoData', 'text', true, true],
    ['Number', 'integer', true, true],
    ['Decimal', 'decimal', true, true],
    ['Currency', 'decimal', true, true],
    ['Percent', 'float', true, true],
    ['Rating', 'integer', true, true],
    ['Duration', 'interval', true, true],
    ['Checkbox', 'boolean', true, true],
    ['Date', 'date', true, true],
    ['DateTime', 'timestamp', true, true],
    ['Time', 'time', true, true],
    ['Year', 'integer', true, true],
    ['SingleSelect', 'select', true, true],
    ['MultiSelect', 'multi_select', true, true],
    ['JSON', 'json', true, true],
    ['Attachment', 'json', true, true],
    ['User', 'json', true, true],
    ['Links', 'relation', true, true],
    ['LinkToAnotherRecord', 'relation', true, true],
    ['Formula', 'text', true, false],
    ['Rollup', 'float', true, false],
    ['Lookup', 'json', true, false],
    ['Count', 'integer', true, false],
    ['CreatedTime', 'timestamp', true, false],
    ['LastModifiedTime', 'timestamp', true, false],
    ['CreatedBy', 'json', true, false],
    ['LastModifiedBy', 'json', true, false],
    ['AutoNumber', 'integer', true, false],
    ['Barcode', 'text', true, false],
    ['QrCode', 'text', true, false],
    ['Button', 'json', true, false],
    ['UUID', 'uuid', true, false],
    ['Geometry', 'unsupported', false, false],
    ['SpecificDBType', 'unsupported', false, false],
    ['Collaborator', 'unsupported', false, false],
    ['SomethingNew', 'unsupported', false, false],
  ])('%s is class %s, read %s, write %s', (uidt, typeClass, read, write) => {
    expect(describeField(column(uidt))).toMatchObject({ type: uidt, typeClass, read, write });
  });

  it('leaves out only NocoDB bookkeeping (row order, hidden foreign keys, link tables)', () => {
    expect(isListed(column('Order', { system: true }))).toBe(false);
    expect(isListed(column('ForeignKey'))).toBe(false);
    expect(isListed(column('LinkToAnotherRecord', { system: true }))).toBe(false);
    expect(isListed(column('CreatedTime', { system: true }))).toBe(true);
  });

  it('gives type_details: options, scale, links, rating max, duration format', () => {
    const select = column('MultiSelect', { colOptions: { options: [{ title: 'a' }, { title: 'b' }] } });
    expect(describeField(select).typeDetails).toEqual({ options: ['a', 'b'], allows_multiple_values: true });
    expect(describeField(column('Decimal', { meta: { precision: 3 } })).typeDetails).toEqual({ scale: 3 });
    expect(describeField(column('Rating', { meta: '{"max":10}' })).typeDetails).toEqual({ max: 10 });
    const link = column('Links', { colOptions: { type: 'mm', fk_related_model_id: 'm1' } });
    expect(describeField(link).typeDetails).toMatchObject({
      target_table: 'm1',
      allows_multiple_values: true,
    });
    const belongs = column('LinkToAnotherRecord', { colOptions: { type: 'bt', fk_related_model_id: 'm2' } });
    expect(describeField(belongs).typeDetails).toMatchObject({ allows_multiple_values: false });
  });

  it('decodes what NocoDB answers into canonical values', () => {
    expect(decodeValue(column('DateTime'), '2024-02-29 13:45:30+00:00')).toBe('2024-02-29T13:45:30Z');
    expect(decodeValue(column('Decimal', { meta: { precision: 2 } }), 12.5)).toBe('12.50');
    expect(decodeValue(column('Decimal', { meta: { precision: 2 } }), 1.234)).toBe('1.234');
    expect(decodeValue(column('Duration'), 93600)).toBe('P1DT2H');
    expect(decodeValue(column('MultiSelect'), 'a,c d')).toEqual(['a', 'c d']);
    expect(decodeValue(column('Checkbox'), null)).toBe(false);
    expect(decodeValue(column('Formula'), 84)).toBe('84');
    expect(
      decodeValue(column('Attachment'), [
        { url: 'https://x/a.png', title: 'a.png', mimetype: 'image/png', size: 3, signedUrl: 's', id: 'i' },
      ]),
    ).toEqual([{ url: 'https://x/a.png', filename: 'a.png', size: 3, type: 'image/png' }]);
  });

  it('encodes a Duration as H:MM(:SS) in a create and as seconds in an update', () => {
    const seconds = column('Duration', { meta: { duration: 1 } });
    expect(encodeValue(seconds, 'P1DT2H0M5S', 'create')).toBe('26:00:05');
    expect(encodeValue(seconds, 'P1DT2H0M5S', 'update')).toBe(93605);
    const minutes = column('Duration', { meta: { duration: 0 } });
    expect(encodeValue(minutes, 'PT1H30M', 'create')).toBe('1:30');
    expect(() => encodeValue(minutes, 'PT45S', 'create')).toThrow(/whole minutes/);
    expect(secondsToDuration(0)).toBe('PT0S');
  });

  it.each([
    ['Number', 'abc', /expected an integer/],
    ['Number', '9007199254740993', /2\^53/],
    ['Checkbox', 'yes', /true or false/],
    ['Date', '29/02/2024', /YYYY-MM-DD/],
    ['DateTime', 'soon', /ISO 8601 instant/],
    ['MultiSelect', ['a,b'], /without commas/],
    ['Formula', 'x', /computes this field/],
    ['Attachment', [{ filename: 'no url' }], /needs a url/],
  ])('refuses %s = %j with invalid_data naming the field', (uidt, value, message) => {
    expect(() => encodeValue(column(uidt), value as never, 'create')).toThrow(message);
    try {
      encodeValue(column(uidt), value as never, 'create');
    } catch (error) {
      expect(error).toMatchObject({ kind: 'invalid_data' });
      expect(String((error as Error).message)).toContain(uidt.toLowerCase());
    }
  });

  it('encodes a wall-clock time as UTC and multi selects as NocoDB text', () => {
    expect(encodeValue(column('DateTime'), '2024-02-29T13:45:30', 'create')).toBe('2024-02-29T13:45:30.000Z');
    expect(encodeValue(column('MultiSelect'), ['a', 'b'], 'create')).toBe('a,b');
    expect(encodeValue(column('Checkbox'), null, 'update')).toBe(false);
  });
});
