/**
 * COPY's text format, field by field: tabs separate the fields of a line, a newline ends it, `\N` is NULL,
 * and a backslash, tab, newline or carriage return in a value is escaped (so a line can never be the
 * end-of-data marker).
 */

const BACKSLASH = 0x5c;
const CAPITAL_N = 0x4e;

const SPECIAL = /[\\\t\n\r]/;
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * One value as a field of COPY's text format: `\N` for NULL; backslash, tab, newline and carriage return
 * escaped.
 */
export function copyText(value: string | number | boolean | null): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return String(value); // numbers and booleans are never escaped
  return SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (char) => ESCAPES[char]!) : value;
}

/**
 * Whether the field `line[start, end)` of a COPY text line is `\N` (NULL). Only a line holding a backslash
 * can have one: a backslash in the data is always escaped, so a field of exactly these two characters is
 * NULL.
 */
export function isCopyNull(line: string, start: number, end: number): boolean {
  return (
    end - start === 2 && line.charCodeAt(start) === BACKSLASH && line.charCodeAt(start + 1) === CAPITAL_N
  );
}

/**
 * The fields of a COPY text line: `\N` as null, escapes undone. Only a line holding a backslash can have
 * either, so a line without one is only split.
 */
export function splitCopyLine(line: string): (string | null)[] {
  const cells: (string | null)[] = line.split('\t');
  if (line.indexOf('\\') === -1) return cells;
  for (let index = 0; index < cells.length; index += 1) {
    const cell = cells[index]!;
    if (cell === '\\N') cells[index] = null;
    else if (cell.indexOf('\\') !== -1) cells[index] = unescapeCopy(cell);
  }
  return cells;
}

const UNESCAPED: Readonly<Record<string, string>> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** Undoes COPY's text-format escapes (`\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`; any other `\x` is `x`). */
export function unescapeCopy(field: string): string {
  let out = '';
  for (let index = 0; index < field.length; index += 1) {
    const char = field[index]!;
    if (char !== '\\' || index + 1 === field.length) {
      out += char;
      continue;
    }
    index += 1;
    out += UNESCAPED[field[index]!] ?? field[index]!;
  }
  return out;
}
