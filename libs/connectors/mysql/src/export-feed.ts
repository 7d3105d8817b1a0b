/**
 * Reading the live export's change log (export-capture.ts installs what fills it): checkpoints, spelled
 * `myxl1.` with holes as runs of ids, and the keys changed since one, over the windows of log-window.ts.
 */
import { ConnectorError, type ExportChangePage } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { EXPORT_LOG_TABLE } from './catalog';
import { logExists } from './change-capture';
import { EXPORT_LOG, MARKER_TABLE } from './export-capture';
import {
  CHECKPOINT_LOOKBACK,
  inSnapshot,
  logCheckpoint,
  purgeLog,
  readLogWindow,
  type HoleRange,
  type LogCheckpoint,
} from './log-window';

export const EXPORT_LOG_RETENTION_DAYS = 7;
/**
 * How long an id missing from the log is waited for (a transaction still open) before it counts as rolled
 * back.
 */
export const EXPORT_HOLD_WINDOW_MS = 10 * 60_000;

const CHECKPOINT_PREFIX = 'myxl1.';

export function encodeExportCheckpoint(checkpoint: LogCheckpoint): string {
  return (
    CHECKPOINT_PREFIX +
    Buffer.from(JSON.stringify({ h: checkpoint.high, r: checkpoint.holes }), 'utf8').toString('base64url')
  );
}

/** ConnectorError `invalid_data` for anything this reader did not issue (the sync's checkpoints included). */
export function decodeExportCheckpoint(text: string): LogCheckpoint {
  if (text.startsWith(CHECKPOINT_PREFIX)) {
    try {
      const parsed = JSON.parse(
        Buffer.from(text.slice(CHECKPOINT_PREFIX.length), 'base64url').toString('utf8'),
      ) as { h?: unknown; r?: unknown };
      const high = parsed.h;
      const holes = parsed.r;
      let previous = 0;
      const valid =
        typeof high === 'number' &&
        Number.isSafeInteger(high) &&
        high >= 0 &&
        Array.isArray(holes) &&
        holes.every((hole: unknown) => {
          if (!Array.isArray(hole) || hole.length !== 3 || !hole.every((part) => Number.isSafeInteger(part)))
            return false;
          const [from, to] = hole as number[];
          const ok = from > previous && from <= to && to <= high;
          previous = to;
          return ok;
        });
      if (valid) return { high, holes: holes as HoleRange[] };
    } catch {
      // fall through
    }
  }
  throw new ConnectorError(
    'invalid_data',
    'The change checkpoint is not one this connector issued for a live export',
  );
}

/**
 * A checkpoint meaning "now": ids not visible yet within the hold window (and an hour's slack for long
 * statements, whose entries are stamped with their start) are holes, so a transaction that wrote before the
 * checkpoint and commits after it is still read.
 */
export async function exportCheckpoint(
  connection: PoolConnection,
  database: string,
  holdWindowMs = EXPORT_HOLD_WINDOW_MS,
): Promise<string> {
  const checkpoint = await logCheckpoint(connection, database, EXPORT_LOG, {
    ids: CHECKPOINT_LOOKBACK,
    ms: holdWindowMs + 3_600_000,
  });
  return encodeExportCheckpoint(checkpoint);
}

export interface ReadExportChangesParams {
  database: string;
  table: string;
  since: string;
  limit: number;
  holdWindowMs?: number;
}

/** The distinct keys logged for the table after `since` (at most `limit` entries), in one snapshot. */
export async function readExportChanges(
  connection: PoolConnection,
  params: ReadExportChangesParams,
): Promise<ExportChangePage> {
  const since = decodeExportCheckpoint(params.since);
  if (params.table === MARKER_TABLE) throw new ConnectorError('invalid_data', 'The table name is empty');
  if (!(await logExists(connection, params.database, EXPORT_LOG_TABLE)))
    return { ids: [], checkpoint: params.since, hasMore: false };
  return inSnapshot(connection, async () => {
    const window = await readLogWindow(connection, EXPORT_LOG, params.table, since, {
      limit: params.limit,
      holdWindowMs: params.holdWindowMs ?? EXPORT_HOLD_WINDOW_MS,
      columns: 'id, pk',
    });
    // Distinct as exact strings (not by a collation: 'A' and 'a' are two keys of a table with a binary one).
    const ids = [...new Set(window.entries.map((row) => String(row['pk'])))];
    return { ids, checkpoint: encodeExportCheckpoint(window.checkpoint), hasMore: window.hasMore };
  });
}

/** Deletes export-log entries older than `days` (a bounded batch; the marker stays). */
export async function purgeExportLog(
  connection: PoolConnection,
  days = EXPORT_LOG_RETENTION_DAYS,
): Promise<number> {
  return purgeLog(connection, EXPORT_LOG_TABLE, days);
}
