/**
 * Change capture for MySQL / MariaDB: row triggers write every insert, update and delete of a prepared table
 * into `lockstep_change_log`, a table in the same database (so no extra database or privilege is needed
 * beyond TRIGGER and CREATE); the worker polls it (there is no NOTIFY, so no `watch`).
 *
 *   lockstep_change_log(id BIGINT AUTO_INCREMENT, table_name, op, pk, origin, changed_at)
 *
 * `origin` is the writing session's `@lockstep_origin` ('lockstep' on every connection of this connector),
 * so Lockstep's own writes are recognised. `pk` is the record key's text (its remote id).
 *
 * Out-of-order commits. AUTO_INCREMENT ids are handed out when a trigger runs, but become visible when the
 * writing transaction commits, so id 11 can become visible after id 12. A plain "id > checkpoint" would lose
 * 11. The checkpoint therefore carries a high-water mark and the **holes** below it: ids not visible when
 * the high-water mark was taken (a transaction still open, or one rolled back). Every read looks at
 * `id > high-water OR id IN (holes)` in one consistent snapshot; a hole that shows up is delivered and
 * leaves the list; a hole that stays empty for the hold window (default 10 minutes, measured on the
 * server's clock) is taken to be a rollback and dropped. Holes are few (open transactions), so the
 * checkpoint stays small; it is capped at MAX_HOLES, keeping the newest. A transaction that stays open
 * longer than the hold window after writing is caught by the engine's periodic full scan.
 */
import { ConnectorError, type Change, type ChangeBatch } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { exec, ORIGIN, rows } from './db';
import { readByKeys } from './records';
import { CHANGE_LOG_TABLE, requireKey, type TableMeta } from './schema';
import { derivedName, placeholders, quoteIdent, quoteString } from './sql';

export const DEFAULT_HOLD_WINDOW_MS = 10 * 60_000;
export const MAX_HOLES = 2_000;
/** How far below the newest id `currentCheckpoint` looks for transactions still open. */
export const CHECKPOINT_LOOKBACK = 1_000;

export const CHANGE_LOG_DDL = `CREATE TABLE IF NOT EXISTS ${quoteIdent(CHANGE_LOG_TABLE)} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  table_name VARCHAR(64) NOT NULL,
  op VARCHAR(6) NOT NULL,
  pk VARCHAR(1024) NOT NULL,
  origin VARCHAR(64) NULL,
  changed_at DATETIME(6) NOT NULL,
  KEY lockstep_change_log_table (table_name, id),
  KEY lockstep_change_log_changed_at (changed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Lockstep change capture: filled by triggers, read by the sync worker'`;

export type TriggerEvent = 'insert' | 'update' | 'delete';

export const TRIGGER_EVENTS: readonly TriggerEvent[] = ['insert', 'update', 'delete'];

/** Trigger names (64 characters at most, unique per database) for a table. */
export function triggerName(event: TriggerEvent | 'fill', table: string): string {
  const suffix = { insert: 'ai', update: 'au', delete: 'ad', fill: 'bi' }[event];
  return derivedName(`lockstep_${suffix}`, table);
}

function logInsert(table: string, op: TriggerEvent, keyExpression: string): string {
  return (
    `INSERT INTO ${quoteIdent(CHANGE_LOG_TABLE)} (table_name, op, pk, origin, changed_at) ` +
    `VALUES (${quoteString(table)}, '${op}', CAST(${keyExpression} AS CHAR), @lockstep_origin, UTC_TIMESTAMP(6))`
  );
}

/** CREATE TRIGGER statement for one event. An update that changes the key also records the old key as deleted. */
export function triggerDdl(event: TriggerEvent, table: string, keyColumn: string): string {
  const name = quoteIdent(triggerName(event, table));
  const on = quoteIdent(table);
  const k = quoteIdent(keyColumn);
  switch (event) {
    case 'insert':
      return `CREATE TRIGGER ${name} AFTER INSERT ON ${on} FOR EACH ROW ${logInsert(table, 'insert', `NEW.${k}`)}`;
    case 'delete':
      return `CREATE TRIGGER ${name} AFTER DELETE ON ${on} FOR EACH ROW ${logInsert(table, 'delete', `OLD.${k}`)}`;
    case 'update':
      return (
        `CREATE TRIGGER ${name} AFTER UPDATE ON ${on} FOR EACH ROW BEGIN ` +
        `IF NOT (OLD.${k} <=> NEW.${k}) THEN ${logInsert(table, 'delete', `OLD.${k}`)}; END IF; ` +
        `${logInsert(table, 'update', `NEW.${k}`)}; END`
      );
  }
}

export async function existingTriggers(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<Set<string>> {
  const found = await rows(
    connection,
    `SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?`,
    [database, table],
  );
  return new Set(found.map((row) => String(row.name)));
}

/** Creates the change log (if missing) and whichever of the three triggers is missing. Idempotent. */
export async function installChangeCapture(
  connection: PoolConnection,
  database: string,
  meta: TableMeta,
): Promise<void> {
  const key = requireKey(meta);
  await exec(connection, CHANGE_LOG_DDL);
  const present = await existingTriggers(connection, database, meta.name);
  for (const event of TRIGGER_EVENTS) {
    if (present.has(triggerName(event, meta.name))) continue;
    await exec(connection, triggerDdl(event, meta.name, key.column));
  }
}

/** Drops the three change triggers and the table's change-log entries. Idempotent. */
export async function removeChangeCapture(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<void> {
  for (const event of TRIGGER_EVENTS)
    await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(triggerName(event, table))}`);
  if (await changeLogExists(connection, database))
    await exec(connection, `DELETE FROM ${quoteIdent(CHANGE_LOG_TABLE)} WHERE table_name = ?`, [table]);
}

/* ------------------------------------------------------------------------------------------------ */
/* Checkpoints                                                                                       */
/* ------------------------------------------------------------------------------------------------ */

export interface ChangeCheckpoint {
  /** Every log id up to here was either delivered, belongs to another table, or is listed in `holes`. */
  high: number;
  /** Ids at or below `high` that were not visible yet, with the server time (ms) they were first seen missing. */
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

/**
 * The ids in (from, to] missing from `present` (sorted ascending), newest `cap` only. Pure, for the tests.
 */
export function missingIds(from: number, to: number, present: number[], cap = MAX_HOLES): number[] {
  const missing: number[] = [];
  let expected = from + 1;
  for (const id of [...present].sort((a, b) => a - b)) {
    if (id <= from || id > to) continue;
    for (let gap = expected; gap < id; gap++) missing.push(gap);
    expected = id + 1;
  }
  for (let gap = expected; gap <= to; gap++) missing.push(gap);
  return missing.slice(-cap);
}

async function serverNowMs(connection: PoolConnection): Promise<number> {
  const [row] = await rows(connection, 'SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS now');
  return Number(row.now);
}

async function logIds(connection: PoolConnection, from: number, to: number): Promise<number[]> {
  if (to <= from) return [];
  const [count] = await rows(
    connection,
    `SELECT COUNT(*) AS n FROM ${quoteIdent(CHANGE_LOG_TABLE)} WHERE id > ? AND id <= ?`,
    [from, to],
  );
  if (Number(count.n) === to - from) return [];
  // Only the newest part of a long range matters for holes (older ones would be dropped by the cap anyway).
  const lower = Math.max(from, to - MAX_HOLES * 4);
  const found = await rows(
    connection,
    `SELECT id FROM ${quoteIdent(CHANGE_LOG_TABLE)} WHERE id > ? AND id <= ? ORDER BY id`,
    [lower, to],
  );
  return missingIds(
    lower,
    to,
    found.map((row) => Number(row.id)),
  );
}

/** Runs `work` in a read-only transaction on one consistent snapshot. */
async function inSnapshot<T>(connection: PoolConnection, work: () => Promise<T>): Promise<T> {
  await connection.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  try {
    const result = await work();
    await connection.query('COMMIT');
    return result;
  } catch (error) {
    await connection.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

async function changeLogExists(connection: PoolConnection, database: string): Promise<boolean> {
  const [log] = await rows(
    connection,
    `SELECT 1 AS present FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
    [database, CHANGE_LOG_TABLE],
  );
  return log !== undefined;
}

/**
 * A checkpoint meaning "now". A table without change capture (never prepared, or unprepared) simply has no
 * changes: the checkpoint is valid and readChanges returns nothing for it.
 */
export async function currentCheckpoint(connection: PoolConnection, database: string): Promise<string> {
  if (!(await changeLogExists(connection, database))) return encodeCheckpoint({ high: 0, holes: [] });
  return inSnapshot(connection, async () => {
    const now = await serverNowMs(connection);
    const [max] = await rows(
      connection,
      `SELECT COALESCE(MAX(id), 0) AS high FROM ${quoteIdent(CHANGE_LOG_TABLE)}`,
    );
    const high = Number(max.high);
    // Ids below the newest one that are not visible yet belong to transactions still open: their changes
    // commit after "now", so they are holes to watch.
    const holes = (await logIds(connection, Math.max(0, high - CHECKPOINT_LOOKBACK), high)).map(
      (id): [number, number] => [id, now],
    );
    return encodeCheckpoint({ high, holes });
  });
}

export interface ReadChangesParams {
  database: string;
  meta: TableMeta;
  since: string;
  limit: number;
  ignoreOwnWrites: boolean;
  holdWindowMs: number;
}

export async function readChanges(
  connection: PoolConnection,
  params: ReadChangesParams,
): Promise<ChangeBatch> {
  const { meta } = params;
  const checkpoint = decodeCheckpoint(params.since);
  const limit = Math.max(1, Math.floor(params.limit));
  requireKey(meta);
  if (!(await changeLogExists(connection, params.database)))
    return { changes: [], checkpoint: params.since, hasMore: false };
  const log = quoteIdent(CHANGE_LOG_TABLE);
  return inSnapshot(connection, async () => {
    const now = await serverNowMs(connection);
    const holeIds = checkpoint.holes.map(([id]) => id);
    const holeClause = holeIds.length > 0 ? ` OR id IN (${placeholders(holeIds.length)})` : '';
    const found = await rows(
      connection,
      `SELECT id, op, pk, origin, changed_at AS changedAt FROM ${log} WHERE table_name = ? AND (id > ?${holeClause}) ORDER BY id LIMIT ?`,
      [meta.name, checkpoint.high, ...holeIds, limit + 1],
    );
    const hasMore = found.length > limit;
    const delivered = found.slice(0, limit);
    const deliveredIds = new Set(delivered.map((row) => Number(row.id)));

    // Holes that are visible now but belong to other tables are settled too; visible ones of this table
    // that did not fit under `limit` stay until delivered, whatever their age.
    const settled = new Set<number>(deliveredIds);
    const pending = new Set<number>();
    if (holeIds.length > 0) {
      const visible = await rows(
        connection,
        `SELECT id, table_name AS tableName FROM ${log} WHERE id IN (${placeholders(holeIds.length)})`,
        holeIds,
      );
      for (const row of visible) {
        if (String(row.tableName) !== meta.name) settled.add(Number(row.id));
        else if (!deliveredIds.has(Number(row.id))) pending.add(Number(row.id));
      }
    }

    let high = checkpoint.high;
    const last = delivered[delivered.length - 1];
    if (hasMore) {
      if (last) high = Math.max(high, Number(last.id));
    } else {
      const [max] = await rows(connection, `SELECT COALESCE(MAX(id), 0) AS high FROM ${log}`);
      high = Math.max(high, Number(max.high));
    }
    const newHoles = (await logIds(connection, checkpoint.high, high)).map((id): [number, number] => [
      id,
      now,
    ]);
    const keptHoles = checkpoint.holes.filter(
      ([id, seenAt]) => !settled.has(id) && (pending.has(id) || now - seenAt < params.holdWindowMs),
    );
    const holes = [...keptHoles, ...newHoles].sort((a, b) => a[0] - b[0]).slice(-MAX_HOLES);

    const upserts = [
      ...new Set(delivered.filter((row) => String(row.op) !== 'delete').map((row) => String(row.pk))),
    ];
    const records = new Map(
      (await readByKeys(connection, meta, upserts)).map((record) => [record.remoteId, record]),
    );

    const changes: Change[] = [];
    for (const row of delivered) {
      const own = row.origin === ORIGIN;
      if (own && params.ignoreOwnWrites) continue;
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
    return { changes, checkpoint: encodeCheckpoint({ high, holes }), hasMore };
  });
}

/**
 * Deletes change-log entries older than `days` (all tables), a bounded batch at a time. The ids are found
 * with a plain (non-locking) read and deleted by primary key, so the purge only locks old rows: a ranged
 * DELETE would take next-key locks and wait on (and block) the triggers of transactions still open.
 */
export async function purgeChangeLog(connection: PoolConnection, days: number): Promise<number> {
  const log = quoteIdent(CHANGE_LOG_TABLE);
  const old = await rows(
    connection,
    `SELECT id FROM ${log} WHERE changed_at < UTC_TIMESTAMP(6) - INTERVAL ? DAY ORDER BY id LIMIT 5000`,
    [days],
  );
  if (old.length === 0) return 0;
  const ids = old.map((row) => Number(row.id));
  const result = await exec(connection, `DELETE FROM ${log} WHERE id IN (${placeholders(ids.length)})`, ids);
  return result.affectedRows;
}
