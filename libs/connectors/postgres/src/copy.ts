/**
 * The connector's side of COPY (text format; the protocol plumbing and the format's escapes are
 * `@lockstep/pg-copy`, shared with the service store): `COPY (SELECT ...) TO STDOUT` for readPage
 * (records.ts `lineRecord` takes the values out of each line) and `COPY t (...) FROM STDIN` for the eligible
 * creates (inserts.ts `copyIn`), which the server inserts in batches rather than row by row.
 */
import { ExportAbortedError } from '@lockstep/connectors-core';
import { copyOut, copyText, unescapeCopy } from '@lockstep/pg-copy';
import type { Pool } from 'pg';
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

/**
 * `COPY (query) TO STDOUT` on a pooled client, line by line; resolves with the line count. An abort cancels
 * the statement (`pg_cancel_backend` from another pooled client, as a live export batch's abort does) and
 * rejects with `ExportAbortedError` once the canceled statement has ended.
 */
export async function copyOutLines(
  pool: Pool,
  text: string,
  onLine: (line: string) => void,
  signal?: AbortSignal,
): Promise<number> {
  if (signal?.aborted) throw new ExportAbortedError();
  let count = 0;
  let cancel: (() => void) | null = null;
  let aborted = false;
  const onAbort = (): void => {
    aborted = true;
    cancel?.();
  };
  try {
    await copyOut(
      pool,
      text,
      (line) => {
        count += 1;
        onLine(line);
      },
      (client) => {
        const processId = (client as unknown as { processID: number }).processID;
        cancel = () => void pool.query('SELECT pg_cancel_backend($1)', [processId]).catch(() => undefined);
        signal?.addEventListener('abort', onAbort, { once: true });
      },
    );
  } catch (error) {
    if (signal?.aborted) throw new ExportAbortedError();
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (aborted) throw new ExportAbortedError();
  return count;
}

/** Hands `onRow` the two fields of a COPY line `id<TAB>hash` (hash may be NULL). */
export function pairLine(line: string, onRow: (id: string, hash: string | null) => void): void {
  const tab = line.indexOf('\t');
  let id = line.slice(0, tab);
  let hash: string | null = line.slice(tab + 1);
  if (line.indexOf('\\') !== -1) {
    if (id.indexOf('\\') !== -1) id = unescapeCopy(id);
    hash = hash === '\\N' ? null : hash.indexOf('\\') !== -1 ? unescapeCopy(hash) : hash;
  }
  onRow(id, hash);
}
