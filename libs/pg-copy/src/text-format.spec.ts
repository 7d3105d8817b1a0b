import { copyText, isCopyNull, splitCopyLine, unescapeCopy } from './text-format';

/** A COPY text line read back field by field, as the PostgreSQL connector's `lineRecord` does. */
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

describe('COPY text format', () => {
  const tricky = [
    'plain',
    '',
    'tab\there',
    'new\nline',
    'carriage\rreturn',
    'back\\slash',
    '\\N',
    'NULL',
    'ünïcødé ✓',
    '"quoted"',
    '\\t is not a tab',
  ];

  it.each(tricky.map((value) => [JSON.stringify(value), value] as const))(
    'round-trips %s through copyText and back',
    (_name, value) => {
      const line = [copyText(value), copyText(null), copyText(value)].join('\t');
      expect(line).not.toMatch(/[\n\r]/);
      expect(readLine(line)).toEqual([value, null, value]);
      expect(splitCopyLine(line)).toEqual([value, null, value]);
    },
  );

  it('reads what PostgreSQL writes: \\N is NULL, escapes are undone, an unknown escape is the character itself', () => {
    expect(readLine('1\t\\N\ta\\\\b\tx\\ty\t\\b\\f\\v\t\\q\t\\\\N')).toEqual([
      '1',
      null,
      'a\\b',
      'x\ty',
      '\b\f\v',
      'q',
      '\\N',
    ]);
    expect(splitCopyLine('1\t\\N\ta\\\\b\tx\\ty\t\\b\\f\\v\t\\q\t\\\\N')).toEqual([
      '1',
      null,
      'a\\b',
      'x\ty',
      '\b\f\v',
      'q',
      '\\N',
    ]);
    expect(readLine('')).toEqual(['']);
    expect(splitCopyLine('')).toEqual(['']);
    expect(unescapeCopy('trailing\\')).toBe('trailing\\');
  });
});
