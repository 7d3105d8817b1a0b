/**
 * The connector's side of COPY (text format; the protocol plumbing and the format's escapes are
 * `@lockstep/pg-copy`, shared with the service store): `COPY (SELECT ...) TO STDOUT` for readPage
 * (records.ts `lineRecord` takes the values out of each line) and `COPY t (...) FROM STDIN` for the eligible
 * creates (inserts.ts `copyIn`), which the server inserts in batches rather than row by row.
 */
import { copyText } from '@lockstep/pg-copy';
import { arrayLiteral, type PgParam } from './types';

/** A row as PostgreSQL's text output of each column (null for NULL). */
export type TextRow = (string | null)[];

/**
 * One value as a field of COPY's text format: `\N` for NULL; backslash, tab, newline and carriage return
 * escaped (so a line can never be the end-of-data marker); a list as an array literal (array columns).
 */
export function copyField(value: PgParam): string {
  return copyText(Array.isArray(value) ? arrayLiteral(value) : value);
}
