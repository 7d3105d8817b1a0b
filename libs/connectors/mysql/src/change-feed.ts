/**
 * Reading the sync's change log (change-capture.ts installs what fills it): checkpoints and `readChanges`,
 * over the windows of log-window.ts.
 *
 * The sync's checkpoint text lists its holes id by id (`mycl1.` + base64url JSON), so its log keeps at most
 * MAX_HOLES of them; log-window.ts keeps runs, converted at the edges.
 */
import { ConnectorError, type Change, type ChangeBatch } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { CHANGE_LOG_TABLE, type TableMeta } from './catalog';
import { logExists } from './change-capture';
import {
  CHECKPOINT_LOOKBACK,
  gapRanges,
  inSnapshot,
  logCheckpoint,
  purgeLog,
  readLogWindow,
  type CaptureLog,
  type HoleRange,
  type LogCheckpoint,
} from './log-window';
import { readByKeys } from './records';
import { requireKey } from './schema';

export const DEFAULT_HOLD_WINDOW_MS = 10 * 60_000;
export const MAX_HOLES = 2_000;

/** The sync's change log: holes are listed id by id in its checkpoints, so it keeps at most MAX_HOLES. */
export const CHANGE_LOG: CaptureLog = Object.freeze({
  table: CHANGE_LOG_TABLE,
  maxHoleIds: MAX_HOLES,
  maxHoleRanges: MAX_HOLES,
});

export interface ChangeCheckpoint {
  /** Every log id up to here was either delivered, belongs to another table, or is listed in `holes`. */
  high: number;
  /** Ids at or below `high` not visible yet, with the server time (ms) they were first seen missing. */
  holes: [number, number][];
}

const PREFIX = 'mycl1.';

export function encodeCheckpoint(checkpoint: ChangeCheckpoint): string {
  return (
    PREFIX +
    Buffer.from(JSON.stringify({ h: checkpoint.high, o: checkpoint.holes }), 'utf8').toString('base64url')
  );
}

export function decodeCheckpoint(text: string): ChangeCheckpoint {
  if (text.startsWith(PREFIX)) {
    try {
      const parsed = JSON.parse(Buffer.from(text.slice(PREFIX.length), 'base64url').toString('utf8')) as {
        h?: unknown;
        o?: unknown;
      };
      const holes = Array.isArray(parsed.o) ? parsed.o : null;
      if (
        typeof parsed.h === 'number' &&
        Number.isSafeInteger(parsed.h) &&
        holes &&
        holes.every(
          (hole) =>
            Array.isArray(hole) && hole.length === 2 && hole.every((part) => typeof part === 'number'),
        )
      ) {
        return { high: parsed.h, holes: holes as [number, number][] };
      }
    } catch {
      // fall through
    }
  }
  throw new ConnectorError('invalid_data', 'The change checkpoint is not one this connector issued');
}

/** The sync's checkpoint as a log checkpoint (single ids become runs; adjacent ids seen together merge). */
function fromChangeCheckpoint(checkpoint: ChangeCheckpoint): LogCheckpoint {
  const holes: HoleRange[] = [];
  for (const [id, seenAt] of [...checkpoint.holes].sort((a, b) => a[0] - b[0])) {
    const last = holes[holes.length - 1];
    if (last && id <= last[1]) continue;
    if (last && id === last[1] + 1 && seenAt === last[2]) last[1] = id;
    else holes.push([id, id, seenAt]);
  }
  return { high: checkpoint.high, holes };
}

function toChangeCheckpoint(checkpoint: LogCheckpoint): ChangeCheckpoint {
  const holes: [number, number][] = [];
  for (const [from, to, seenAt] of checkpoint.holes)
    for (let id = from; id <= to; id++) holes.push([id, seenAt]);
  return { high: checkpoint.high, holes };
}

/**
 * The ids in (from, to] missing from `present` (sorted ascending), newest `cap` only. Pure, for the tests.
 */
export function missingIds(from: number, to: number, present: number[], cap = MAX_HOLES): number[] {
  const missing: number[] = [];
  const sorted = [...present].sort((a, b) => a - b);
  for (const [low, high] of gapRanges(from, to, sorted))
    for (let id = low; id <= high; id++) missing.push(id);
  return missing.slice(-cap);
}

/**
 * A checkpoint meaning "now". A table without change capture (never prepared, or unprepared) simply has no
 * changes: the checkpoint is valid and readChanges returns nothing for it.
 */
export async function currentCheckpoint(connection: PoolConnection, database: string): Promise<string> {
  const checkpoint = await logCheckpoint(connection, database, CHANGE_LOG, { ids: CHECKPOINT_LOOKBACK });
  return encodeCheckpoint(toChangeCheckpoint(checkpoint));
}

export interface ReadChangesParams {
  database: string;
  meta: TableMeta;
  since: string;
  limit: number;
  ignoreOwnWrites: boolean;
  /** This connection's origin tag (`writeOriginTag`): log entries carrying it are its own writes. */
  origin: string;
  holdWindowMs: number;
}

export async function readChanges(
  connection: PoolConnection,
  params: ReadChangesParams,
): Promise<ChangeBatch> {
  const { meta } = params;
  const since = fromChangeCheckpoint(decodeCheckpoint(params.since));
  requireKey(meta);
  if (!(await logExists(connection, params.database, CHANGE_LOG_TABLE)))
    return { changes: [], checkpoint: params.since, hasMore: false };
  return inSnapshot(connection, async () => {
    const window = await readLogWindow(connection, CHANGE_LOG, meta.name, since, {
      limit: params.limit,
      holdWindowMs: params.holdWindowMs,
      columns: 'id, op, pk, origin, changed_at AS changedAt',
    });
    const delivered = window.entries;
    // Only the records of changes that are returned are read: after an initial sync that wrote a table, the
    // log holds an entry for every row Lockstep wrote, and reading those rows back would be wasted.
    const returned = delivered.filter((row) => !(params.ignoreOwnWrites && row.origin === params.origin));
    const upserts = [
      ...new Set(returned.filter((row) => String(row.op) !== 'delete').map((row) => String(row.pk))),
    ];
    const records = new Map(
      (await readByKeys(connection, meta, upserts)).map((record) => [record.remoteId, record]),
    );

    const changes: Change[] = [];
    for (const row of returned) {
      const own = row.origin === params.origin;
      const remoteId = String(row.pk);
      const at = `${String(row.changedAt).replace(' ', 'T')}Z`;
      if (String(row.op) === 'delete') {
        changes.push({ kind: 'delete', remoteId, at, own });
      } else {
        const record = records.get(remoteId);
        changes.push(
          record ? { kind: 'upsert', remoteId, record, at, own } : { kind: 'upsert', remoteId, at, own },
        );
      }
    }
    return {
      changes,
      checkpoint: encodeCheckpoint(toChangeCheckpoint(window.checkpoint)),
      hasMore: window.hasMore,
    };
  });
}

/** Deletes change-log entries older than `days` (all tables), a bounded batch at a time (see `purgeLog`). */
export async function purgeChangeLog(connection: PoolConnection, days: number): Promise<number> {
  return purgeLog(connection, CHANGE_LOG_TABLE, days);
}
