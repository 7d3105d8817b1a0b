import { isCopyNull, unescapeCopy } from '@lockstep/pg-copy';
import { copyField } from './copy';

/** A COPY text line read back field by field, as the connection's `lineRecord` does. */
function readLine(line: string): (string | null)[] {
  const fields: (string | null)[] = [];
  let start = 0;
  for (;;) {
    let end = line.indexOf('\t', start);
    const last = end === -1;
    if (last) end = line.length;
    fields.push(isCopyNull(line, start, end) ? null : unescapeCopy(line.slice(start, end)));
    if (last) return fields;
    start = end + 1;
  }
}

describe('COPY text format (connector values)', () => {
  it.each(['plain', 'tab\there', 'back\\slash', '\\N'])('writes the text %j as copyText does', (value) => {
    expect(readLine([copyField(value), copyField(null)].join('\t'))).toEqual([value, null]);
  });

  it('writes numbers, booleans and lists as PostgreSQL reads them', () => {
    expect(copyField(42)).toBe('42');
    expect(copyField(0.1)).toBe('0.1');
    expect(copyField(true)).toBe('true');
    expect(copyField([1, null, [2, 3]])).toBe('{1,NULL,{2,3}}');
    // The array literal's own escapes are escaped once more for COPY.
    expect(copyField(['a"b', 'c\\d'])).toBe('{"a\\\\"b","c\\\\\\\\d"}');
    expect(readLine(copyField(['a"b', 'c\\d']))).toEqual(['{"a\\"b","c\\\\d"}']);
  });
});
