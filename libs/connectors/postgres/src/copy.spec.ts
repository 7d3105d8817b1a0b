import { splitCopyLine } from '@lockstep/pg-copy';
import { copyField } from './copy';

describe('COPY text format (connector values)', () => {
  it.each(['plain', 'tab\there', 'back\\slash', '\\N'])('writes the text %j as copyText does', (value) => {
    expect(splitCopyLine([copyField(value), copyField(null)].join('\t'))).toEqual([value, null]);
  });

  it('writes numbers, booleans and lists as PostgreSQL reads them', () => {
    expect(copyField(42)).toBe('42');
    expect(copyField(0.1)).toBe('0.1');
    expect(copyField(true)).toBe('true');
    expect(copyField([1, null, [2, 3]])).toBe('{1,NULL,{2,3}}');
    // The array literal's own escapes are escaped once more for COPY.
    expect(copyField(['a"b', 'c\\d'])).toBe('{"a\\\\"b","c\\\\\\\\d"}');
    expect(splitCopyLine(copyField(['a"b', 'c\\d']))).toEqual(['{"a\\"b","c\\\\d"}']);
  });
});
