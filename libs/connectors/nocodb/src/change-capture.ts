/**
 * Change detection. NocoDB keeps no change log an API client can read, so the feed reads the records whose
 * `UpdatedAt` (or, for a record never edited, `CreatedAt`: NocoDB leaves `UpdatedAt` empty until the first edit)
 * is at or after the checkpoint's time, in key order. The checkpoint's time is NocoDB's own clock (the `Date` of
 * its answer, to the second as its timestamps are) minus an overlap window, so a record written in the second a
 * read ran, or by a clock a little behind, is read again rather than missed; the engine's shadows recognise
 * what it already has. Deletes leave nothing to read: NocoDB's webhook for a delete names the records
 * (`setup.ts` installs it when PUBLIC_URL is set), the API's notification endpoint publishes their ids as
 * hints on the table's signal channel, and the feed reports a hinted record as deleted only when NocoDB no
 * longer has it. The engine's full scan finds the deletes no webhook announced.
 *
 * Wake-ups (`watch`): every webhook call publishes on the channel and wakes the watcher at once; besides, each
 * watched table is probed every `NOCODB_POLL_SECONDS` (its record count, highest key and latest `UpdatedAt`,
 * two requests), which is all there is when NocoDB cannot reach PUBLIC_URL.
 */
import { createHash } from 'node:crypto';
import type { Change, ChangeBatch, ChangeSignals, ReadChangesOptions } from '@lockstep/connectors-core';
import { hookSignalChannel } from '@lockstep/connectors-http';
import { type ReadContext, rowsWhereIn, toSourceRecords } from './records';
import { keyColumn, timeColumn } from './schema';
import { listRows, MAX_PAGE_SIZE, type NocodbRow, type NocodbTable } from './sql';
import { classOf } from './types';

/** How far back of the last read's time the next read starts (NocoDB's timestamps are whole seconds). */
export const OVERLAP_MS = 5_000;

interface Checkpoint {
  /** Changes at or after this time (ms, NocoDB's clock) are read. */
  t: number;
  /** Inside a read that had more than `limit` records: the last key returned and the read's own time. */
  after: string | null;
  start: number | null;
  /** The last signal hint read. */
  pos: number;
}

export interface CaptureContext extends ReadContext {
  signals: ChangeSignals | null;
  /** The table's signal channel (`channelOf`). */
  channel: string;
}

/** The table's channel id: the server (hashed: no address in a URL path) and the table. */
export function channelOf(baseUrl: string, tableId: string): string {
  return `${createHash('sha256').update(baseUrl).digest('hex').slice(0, 12)}.${tableId}`;
}

export function signalChannel(channelId: string): string {
  return hookSignalChannel('nocodb', channelId);
}

function parse(since: string): Checkpoint {
  try {
    const value = JSON.parse(since) as Partial<Checkpoint>;
    if (typeof value.t === 'number') {
      return { t: value.t, after: value.after ?? null, start: value.start ?? null, pos: value.pos ?? 0 };
    }
  } catch {
    // fall through
  }
  return { t: 0, after: null, start: null, pos: 0 };
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function lastHint(context: CaptureContext): Promise<number> {
  if (!context.signals) return 0;
  return (await context.signals.read(signalChannel(context.channel), Number.MAX_SAFE_INTEGER, 1)).last;
}

export async function currentCheckpoint(context: CaptureContext): Promise<string> {
  const key = keyColumn(context.table);
  const page = await listRows(context.api, context.table.id, { limit: 1, fields: [key.title] });
  const now = page.serverTime ?? Date.now();
  const checkpoint: Checkpoint = {
    t: now - OVERLAP_MS,
    after: null,
    start: null,
    pos: await lastHint(context),
  };
  return JSON.stringify(checkpoint);
}

/** The `where` of the records changed at or after `since`, after key `after`. */
function changedWhere(table: NocodbTable, since: number, after: string | null): string | null {
  const updated = timeColumn(table, 'LastModifiedTime');
  const created = timeColumn(table, 'CreatedTime');
  if (!updated && !created) return null;
  const terms = [updated, created]
    .filter((column) => column !== undefined)
    .map((column) => `(${column!.title},ge,exactDate,${iso(since)})`);
  const changed = terms.length === 2 ? `(${terms[0]}~or${terms[1]})` : terms[0]!;
  return after === null ? changed : `${changed}~and(${keyColumn(table).title},gt,${after})`;
}

function changeTime(table: NocodbTable, row: NocodbRow): string {
  const updated = timeColumn(table, 'LastModifiedTime');
  const created = timeColumn(table, 'CreatedTime');
  const raw = (updated && row[updated.title]) || (created && row[created.title]);
  const time = typeof raw === 'string' ? Date.parse(raw.replace(' ', 'T')) : Number.NaN;
  return new Date(Number.isNaN(time) ? Date.now() : time).toISOString();
}

/** Hinted deletes: the hinted records NocoDB no longer has. */
async function hintedDeletes(
  context: CaptureContext,
  pos: number,
  limit: number,
): Promise<{ changes: Change[]; pos: number; more: boolean }> {
  if (!context.signals) return { changes: [], pos, more: false };
  const { hints } = await context.signals.read(signalChannel(context.channel), pos, limit);
  if (hints.length === 0) return { changes: [], pos, more: false };
  const key = keyColumn(context.table);
  // A hint that cannot be one of this table's keys is dropped (NocoDB would refuse the lookup for all).
  const integerKey = classOf(key) === 'integer';
  const ids = [...new Set(hints.map((entry) => entry.hint))].filter((id) => !integerKey || /^\d+$/.test(id));
  const present = new Set((await rowsWhereIn(context, key.title, ids)).map((row) => String(row[key.title])));
  const at = new Date().toISOString();
  const changes = ids
    .filter((id) => !present.has(id))
    .map((id): Change => ({ kind: 'delete', remoteId: id, at, own: false }));
  return { changes, pos: hints[hints.length - 1]!.position, more: hints.length >= limit };
}

export async function readChanges(
  context: CaptureContext,
  since: string,
  options: ReadChangesOptions,
): Promise<ChangeBatch> {
  const checkpoint = parse(since);
  const limit = Math.max(1, Math.min(options.limit, MAX_PAGE_SIZE));
  const deletes = await hintedDeletes(context, checkpoint.pos, limit);
  const where = changedWhere(context.table, checkpoint.t, checkpoint.after);
  const key = keyColumn(context.table);
  const page = where
    ? await listRows(context.api, context.table.id, { where, sort: key.title, limit })
    : { list: [], serverTime: null };
  const start = checkpoint.start ?? page.serverTime ?? Date.now();
  const records = await toSourceRecords(context, page.list);
  const inView = options.view
    ? await keysInView(
        context,
        records.map((r) => r.remoteId),
        options.view,
      )
    : null;
  const changes: Change[] = [...deletes.changes];
  records.forEach((record, index) => {
    const at = changeTime(context.table, page.list[index]!);
    if (inView && !inView.has(record.remoteId))
      changes.push({ kind: 'delete', remoteId: record.remoteId, at, own: false });
    else changes.push({ kind: 'upsert', remoteId: record.remoteId, record, at, own: false });
  });
  const full = page.list.length >= limit;
  const last = page.list[page.list.length - 1];
  const next: Checkpoint = full
    ? { t: checkpoint.t, after: String(last![key.title]), start, pos: deletes.pos }
    : { t: Math.max(checkpoint.t, start - OVERLAP_MS), after: null, start: null, pos: deletes.pos };
  return { changes, checkpoint: JSON.stringify(next), hasMore: full || deletes.more };
}

async function keysInView(context: CaptureContext, ids: string[], view: string): Promise<Set<string>> {
  const key = keyColumn(context.table);
  return new Set((await rowsWhereIn(context, key.title, ids, view)).map((row) => String(row[key.title])));
}

/** What changes when the table changes: record count, highest key, latest edit (two requests). */
export async function probe(context: ReadContext): Promise<string> {
  const key = keyColumn(context.table);
  const updated = timeColumn(context.table, 'LastModifiedTime');
  const newest = await listRows(context.api, context.table.id, {
    limit: 1,
    sort: `-${key.title}`,
    fields: [key.title],
  });
  const parts: unknown[] = [newest.pageInfo?.totalRows ?? null, newest.list[0]?.[key.title] ?? null];
  if (updated) {
    const edited = await listRows(context.api, context.table.id, {
      limit: 1,
      sort: `-${updated.title}`,
      where: `(${updated.title},notblank)`,
      fields: [key.title, updated.title],
    });
    parts.push(edited.pageInfo?.totalRows ?? null, edited.list[0]?.[updated.title] ?? null);
  }
  return JSON.stringify(parts);
}
