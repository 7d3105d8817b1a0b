/**
 * COPY in text format, both ways: `COPY (SELECT ...) TO STDOUT` for readPage and `COPY t (...) FROM STDIN`
 * for the eligible creates (see connection.ts `copyIn`).
 *
 * Out: the values are the same text as a result set's (COPY uses each type's output function, under the
 * session's settings), but the server sends one message per row rather than one length-prefixed value per
 * column, so the client decodes one string per row and takes the values out of it (connection.ts
 * `lineRecord`): markedly less work per row than the driver's row parsing. pg hands every CopyData message to
 * the active query's `handleCopyData`; `CopyOutQuery` passes the lines on as they arrive, so the work on a row
 * overlaps the server's work on the next ones.
 *
 * In: every value goes through its column's input function, as an INSERT's parameters do, but the server
 * inserts the rows in batches (one WAL record per batch of rows rather than per row): 1.5 to 2 times faster
 * than the fastest INSERT for a batch of 1,000 rows.
 *
 * COPY takes no bind parameters: a value in a COPY's query (readPage's lower bound) must be a quoted
 * literal (pg's `escapeLiteral`).
 */
import { Query } from 'pg';
import { arrayLiteral, type PgParam } from './types';

/** A row as PostgreSQL's text output of each column (null for NULL). */
export type TextRow = (string | null)[];

const NEWLINE = 0x0a;
const BACKSLASH = 0x5c;
const CAPITAL_N = 0x4e;

/**
 * Whether the field `line[start, end)` of a COPY text line is `\N` (NULL). Only a line holding a backslash can
 * have one: a backslash in the data is always escaped, so a field of exactly these two characters is NULL.
 */
export function isCopyNull(line: string, start: number, end: number): boolean {
  return end - start === 2 && line.charCodeAt(start) === BACKSLASH && line.charCodeAt(start + 1) === CAPITAL_N;
}

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
    const next = field[index]!;
    switch (next) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      default:
        out += next;
    }
  }
  return out;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * One value as a field of COPY's text format: `\N` for NULL; backslash, tab, newline and carriage return
 * escaped (so a line can never be the end-of-data marker); a list as an array literal (array columns).
 */
export function copyField(value: PgParam): string {
  if (value === null) return '\\N';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value); // never escaped
  const text = typeof value === 'string' ? value : arrayLiteral(value);
  return COPY_SPECIAL.test(text) ? text.replace(/[\\\t\n\r]/g, (char) => COPY_ESCAPES[char]!) : text;
}

/**
 * A pg query running a `COPY ... TO STDOUT` statement (text format) whose lines (one per row, without the
 * newline) go to `onLine` as they arrive. A line that `onLine` fails on is kept in `failure` (the lines after
 * it are skipped): the caller reports it once the query has ended, so the connection is left ready for the
 * next query.
 */
export class CopyOutQuery extends Query {
  failure: unknown = null;
  private pending: Buffer | null = null;

  constructor(
    text: string,
    private readonly onLine: (line: string) => void,
  ) {
    super({ text });
  }

  /** Called by pg's client for every CopyData message (the server sends one row per message). */
  handleCopyData(message: { chunk: Buffer }): void {
    let chunk = message.chunk;
    const first = chunk.indexOf(NEWLINE);
    if (this.pending === null && first === chunk.length - 1) {
      this.row(chunk.toString('utf8', 0, first)); // the usual case: exactly one row
      return;
    }
    if (this.pending) {
      chunk = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE, start); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      this.row(chunk.toString('utf8', start, end));
      start = end + 1;
    }
    if (start < chunk.length) this.pending = Buffer.from(chunk.subarray(start));
  }

  private row(line: string): void {
    if (this.failure !== null) return;
    try {
      this.onLine(line);
    } catch (error) {
      this.failure = error;
    }
  }
}

/** What pg's connection offers a query during COPY FROM STDIN (not in pg's type declarations). */
interface CopyInConnection {
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/** A pg query running a `COPY ... FROM STDIN` statement that sends `data` (complete lines) as the rows. */
export class CopyInQuery extends Query {
  constructor(
    text: string,
    private readonly data: Buffer,
  ) {
    super({ text });
  }

  /** Called by pg's client when the server is ready for the rows. */
  handleCopyInResponse(connection: CopyInConnection): void {
    connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }
}
