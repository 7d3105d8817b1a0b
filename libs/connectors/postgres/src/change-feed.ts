/**
 * Reading the change feed (the triggers and the change log are change-capture.ts): checkpoints are
 * snapshots, a read returns at most `limit` changes, one per record (its latest state), and `watch` wakes
 * a reader on the trigger's NOTIFY.
 *
 * Checkpoints are snapshots, not ids (the PgQ design). A bigserial id is drawn when a row is inserted, not
 * when its transaction commits, so ids commit out of order: a reader that remembers "the last id I saw"
 * loses the row a slow transaction committed later with a smaller id. Instead a checkpoint holds the
 * snapshot (`pg_current_snapshot()`) of the previous read, and a read returns the log rows whose
 * transaction is visible in a new snapshot but was not in the previous one. Every transaction becomes
 * visible in exactly one such window, whatever order they commit in, so nothing is lost or repeated. A
 * window larger than `limit` is read in (xid, id) order with the position kept in the checkpoint.
 */
import {
  ConnectorError,
  type Change,
  type ChangeBatch,
  type ReadChangesOptions,
  type SourceRecord,
} from '@lockstep/connectors-core';
import { Client, type ClientConfig } from 'pg';
import type { Queryable } from './catalog';
import { CHANGE_LOG, NOTIFY_CHANNEL } from './change-capture';
import type { Row } from './db';
import { MAX_PAGE } from './records';
import { timestamptzToCanonical } from './types';

// ---------------------------------------------------------------------------------------------------------
// Checkpoints

export interface Checkpoint {
  v: 1;
  /** The snapshot of the previous read: everything visible in it has been returned. */
  s: string;
  /** The snapshot this window reads up to, while a window larger than `limit` is being paged. */
  c?: string;
  /** Position inside the window: the last (xid, id) returned. */
  a?: [string, string];
}

const SNAPSHOT = /^\d+:\d+:(\d+(,\d+)*)?$/;

export function encodeCheckpoint(checkpoint: Checkpoint): string {
  return JSON.stringify(checkpoint);
}

export function decodeCheckpoint(text: string): Checkpoint {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const candidate = parsed as Partial<Checkpoint> | null;
  const valid =
    candidate !== null &&
    typeof candidate === 'object' &&
    candidate.v === 1 &&
    typeof candidate.s === 'string' &&
    SNAPSHOT.test(candidate.s) &&
    (candidate.c === undefined || (typeof candidate.c === 'string' && SNAPSHOT.test(candidate.c))) &&
    (candidate.a === undefined ||
      (Array.isArray(candidate.a) &&
        candidate.a.length === 2 &&
        candidate.a.every((part) => typeof part === 'string' && /^\d+$/.test(part))));
  if (!valid)
    throw new ConnectorError(
      'invalid_data',
      'The change checkpoint is not one this PostgreSQL connector issued',
    );
  return candidate as Checkpoint;
}

/**
 * Log rows of one table whose transaction became visible between snapshot $3 (previous read) and $4 (this
 * read), after position ($5, $6) inside the window, optionally ($7) without this connection's writes ($9).
 */
export const READ_CHANGES_SQL = `
SELECT l.id::text AS id, l.xid::text AS xid, l.op, l.pk, l.origin, l.committed_at::text AS at
FROM ${CHANGE_LOG} l
WHERE l.table_schema = $1 AND l.table_name = $2
  AND l.xid >= pg_snapshot_xmin($3::pg_snapshot) AND l.xid < pg_snapshot_xmax($4::pg_snapshot)
  AND pg_visible_in_snapshot(l.xid, $4::pg_snapshot) AND NOT pg_visible_in_snapshot(l.xid, $3::pg_snapshot)
  AND ($5::xid8 IS NULL OR (l.xid, l.id) > ($5::xid8, $6::bigint))
  AND (NOT $7::boolean OR l.origin IS DISTINCT FROM $9::text)
ORDER BY l.xid, l.id
LIMIT $8`;

/**
 * Deletes change-log entries older than `days` (all tables), at most `batch` of the oldest per call, so the
 * purge never holds many row locks; the triggers of open transactions only insert and are not blocked.
 */
export const PURGE_SQL = `
DELETE FROM ${CHANGE_LOG}
 WHERE id IN (
   SELECT id
     FROM ${CHANGE_LOG}
    WHERE committed_at < now() - make_interval(days => $1::int)
    ORDER BY committed_at
    LIMIT $2)`;

/** What reading a table's changes needs from the connection. */
export interface FeedReader {
  db: Queryable;
  /** The base (schema); read only once the change log is known to exist. */
  schema(): string;
  origin: string;
  /** Housekeeping before a read, once the change log is known to exist. */
  purge(): Promise<void>;
  /** The records of `remoteIds` as they are now (those that still exist). */
  readRecords(remoteIds: string[]): Promise<SourceRecord[]>;
}

/**
 * A page of log entries read with `limit + 1` (ordered by xid, id inside the window up to `current`): the
 * entries to return, whether more wait, and the checkpoint after them. While more wait, the next read stays
 * in the same window after the last entry; otherwise the next window starts at `current`.
 */
export function pageOfLog<T extends Record<string, unknown>>(
  rows: T[],
  limit: number,
  checkpoint: Checkpoint,
  current: string,
): { entries: T[]; hasMore: boolean; next: Checkpoint } {
  const entries = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = entries[entries.length - 1];
  const next: Checkpoint =
    hasMore && last
      ? { v: 1, s: checkpoint.s, c: current, a: [String(last['xid']), String(last['id'])] }
      : { v: 1, s: current };
  return { entries, hasMore, next };
}

export async function snapshot(db: Queryable): Promise<string> {
  const { rows } = await db.query('SELECT pg_current_snapshot()::text AS snapshot');
  return String(rows[0]!['snapshot']);
}

export async function readChanges(
  reader: FeedReader,
  tableRemoteId: string,
  checkpoint: Checkpoint,
  options: ReadChangesOptions,
): Promise<ChangeBatch> {
  const { rows: logRows } = await reader.db.query(
    `SELECT to_regclass('${CHANGE_LOG}') IS NOT NULL AS present`,
  );
  const current = checkpoint.c ?? (await snapshot(reader.db));
  if (logRows[0]?.['present'] !== 't') {
    return { changes: [], checkpoint: encodeCheckpoint({ v: 1, s: current }), hasMore: false };
  }
  await reader.purge();
  const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_PAGE);
  const { rows } = await reader.db.query(READ_CHANGES_SQL, [
    reader.schema(),
    tableRemoteId,
    checkpoint.s,
    current,
    checkpoint.a?.[0] ?? null,
    checkpoint.a?.[1] ?? null,
    options.ignoreOwnWrites === true,
    limit + 1,
    reader.origin,
  ]);
  const { entries, hasMore, next } = pageOfLog(rows as Row[], limit, checkpoint, current);
  return { changes: await toChanges(reader, entries), checkpoint: encodeCheckpoint(next), hasMore };
}

/** Deletes up to `batch` change-log entries older than `retentionDays`; returns how many. */
export async function purgeChangeLog(db: Queryable, retentionDays: number, batch: number): Promise<number> {
  const result = await db.query(PURGE_SQL, [retentionDays, batch]);
  return (result as unknown as { rowCount: number | null }).rowCount ?? 0;
}

/** One change per record (its last operation in the batch); upserts carry the record as it is now. */
async function toChanges(reader: FeedReader, entries: Row[]): Promise<Change[]> {
  if (entries.length === 0) return [];
  const latest = new Map<string, { op: string; at: string; own: boolean }>();
  for (const entry of entries) {
    const pk = String(entry['pk']);
    const own = entry['origin'] === reader.origin && (latest.get(pk)?.own ?? true);
    latest.delete(pk); // re-insert so the map is ordered by each record's last change
    latest.set(pk, { op: String(entry['op']), at: timestamptzToCanonical(String(entry['at'])), own });
  }
  const upserts = [...latest].filter(([, change]) => change.op === 'upsert').map(([pk]) => pk);
  const records = new Map<string, SourceRecord>();
  if (upserts.length > 0) {
    for (const record of await reader.readRecords(upserts)) records.set(record.remoteId, record);
  }
  const changes: Change[] = [];
  for (const [pk, change] of latest) {
    if (change.op === 'delete') {
      changes.push({ kind: 'delete', remoteId: pk, at: change.at, own: change.own });
    } else {
      const record = records.get(pk);
      // A row gone by now was deleted after this change; its delete is in the log too.
      if (record) changes.push({ kind: 'upsert', remoteId: pk, record, at: change.at, own: change.own });
    }
  }
  return changes;
}

/**
 * A client listening on the capture trigger's channel: `onChange` gets the tables of `tableRemoteIds` in
 * `schema` that changed. `connect` is guarded by the caller; the client is ended when it fails.
 */
export async function listen(
  clientConfig: ClientConfig,
  schema: string,
  tableRemoteIds: string[],
  onChange: (tableRemoteId: string) => void,
  connect: (action: () => Promise<void>) => Promise<void>,
): Promise<Client> {
  const client = new Client(clientConfig);
  client.on('error', () => undefined);
  await connect(async () => {
    await client.connect();
    await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
  }).catch(async (error: unknown) => {
    await client.end().catch(() => undefined);
    throw error;
  });
  client.on('notification', (message) => {
    if (message.channel !== NOTIFY_CHANNEL || !message.payload) return;
    try {
      const payload = JSON.parse(message.payload) as { schema?: string; table?: string };
      if (payload.schema === schema && payload.table && tableRemoteIds.includes(payload.table))
        onChange(payload.table);
    } catch {
      // a payload from something else on the channel: ignore it
    }
  });
  return client;
}
