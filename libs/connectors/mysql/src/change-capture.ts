/**
 * Change capture for MySQL / MariaDB: row triggers write every insert, update and delete of a prepared table
 * into `lockstep_change_log`, a table in the same database (so no extra database or privilege is needed
 * beyond TRIGGER and CREATE); the worker polls it (there is no NOTIFY, so no `watch`).
 *
 *   lockstep_change_log(id BIGINT AUTO_INCREMENT, table_name, op, pk, origin, changed_at)
 *
 * `origin` is the writing session's `@lockstep_origin` ('lockstep', or 'lockstep:<writeOrigin>' on a connection
 * opened with one, see db.ts), so a connection's own writes are recognised and other syncs' are not taken for them. `pk` is the record key's text (its remote id).
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
 *
 * The window logic (`logCheckpoint`, `readLogWindow`) takes the log as a parameter: the live export's own
 * capture (export-capture.ts) reads its log `lockstep_export_log` the same way. Holes are kept as runs of
 * ids (a big transaction still open is one run, not thousands of ids); the sync's checkpoint text lists them
 * id by id as it always did.
 */
import { ConnectorError, type Change, type ChangeBatch } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { exec, rows, type Row } from './db';
import { readByKeys } from './records';
import { CHANGE_LOG_TABLE, READERS_TABLE, type TableMeta } from './catalog';
import { requireKey } from './schema';
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

const TRIGGER_PREFIX: Record<TriggerEvent, string> = {
  insert: 'lockstep_ai',
  update: 'lockstep_au',
  delete: 'lockstep_ad',
};

/** Trigger names (64 characters at most, unique per database) for a table. */
export function triggerName(event: TriggerEvent, table: string): string {
  return derivedName(TRIGGER_PREFIX[event], table);
}

/**
 * Logged unless a Lockstep connection that is the table's only reader wrote it (readers, below): its session sets
 * `@lockstep_log_own = 0` for such a write; any other session (an application's, or one that did not check) logs.
 */
const LOGGED = `(@lockstep_origin IS NULL OR NOT (@lockstep_log_own <=> 0))`;

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
      return `CREATE TRIGGER ${name} AFTER INSERT ON ${on} FOR EACH ROW BEGIN IF ${LOGGED} THEN ${logInsert(table, 'insert', `NEW.${k}`)}; END IF; END`;
    case 'delete':
      return `CREATE TRIGGER ${name} AFTER DELETE ON ${on} FOR EACH ROW BEGIN IF ${LOGGED} THEN ${logInsert(table, 'delete', `OLD.${k}`)}; END IF; END`;
    case 'update':
      return (
        `CREATE TRIGGER ${name} AFTER UPDATE ON ${on} FOR EACH ROW BEGIN IF ${LOGGED} THEN ` +
        `IF NOT (OLD.${k} <=> NEW.${k}) THEN ${logInsert(table, 'delete', `OLD.${k}`)}; END IF; ` +
        `${logInsert(table, 'update', `NEW.${k}`)}; END IF; END`
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

/**
 * Creates the change log and the readers table (if missing), whichever of the three triggers is missing, and
 * registers `origin` as a reader of the table. Idempotent. Triggers made by earlier versions are kept: they log
 * every write, own writes included.
 */
export async function installChangeCapture(
  connection: PoolConnection,
  database: string,
  meta: TableMeta,
  origin: string,
): Promise<void> {
  const key = requireKey(meta);
  await exec(connection, CHANGE_LOG_DDL);
  await ensureReadersTable(connection, database);
  const present = await existingTriggers(connection, database, meta.name);
  for (const event of TRIGGER_EVENTS) {
    if (present.has(triggerName(event, meta.name))) continue;
    await exec(connection, triggerDdl(event, meta.name, key.column));
  }
  await registerReader(connection, meta.name, origin);
}

/**
 * Removes `origin`'s reader of the table; when no other reader is left (the unknown reader of an earlier version's
 * setup not counted), drops the three change triggers and the table's change-log entries, and answers true:
 * no sync reads the table any more. Idempotent.
 */
export async function removeChangeCapture(
  connection: PoolConnection,
  database: string,
  table: string,
  origin: string,
): Promise<boolean> {
  if (await logExists(connection, database, READERS_TABLE)) {
    await exec(connection, `DELETE FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ? AND reader = ?`, [table, origin]);
    const [left] = await rows(
      connection,
      `SELECT COUNT(*) AS n FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ? AND reader NOT IN ('', ?)`,
      [table, UNKNOWN_READERS],
    );
    if (Number(left?.n ?? 0) > 0) return false;
    await exec(connection, `DELETE FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ?`, [table]);
  }
  for (const event of TRIGGER_EVENTS)
    await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(triggerName(event, table))}`);
  if (await logExists(connection, database, CHANGE_LOG_TABLE))
    await exec(connection, `DELETE FROM ${quoteIdent(CHANGE_LOG_TABLE)} WHERE table_name = ?`, [table]);
  return true;
}

/**
 * Drops the change log and the readers table once no table of the database is read: the readers table is
 * empty and no change trigger is left (an earlier version's included, whatever its reader). Runs under the
 * setup lock, so no setup installs a trigger meanwhile; a write that finds the readers table gone logs as
 * without readers.
 */
export async function removeUnusedCaptureTables(connection: PoolConnection, database: string): Promise<void> {
  if (await logExists(connection, database, READERS_TABLE)) {
    const [reader] = await rows(connection, `SELECT 1 AS present FROM ${quoteIdent(READERS_TABLE)} LIMIT 1`);
    if (reader) return;
  }
  const [trigger] = await rows(
    connection,
    `SELECT 1 AS present FROM information_schema.TRIGGERS
     WHERE TRIGGER_SCHEMA = ? AND (${CHANGE_TRIGGER_MATCH}) LIMIT 1`,
    [database, ...CHANGE_TRIGGER_PATTERNS],
  );
  if (trigger) return;
  await exec(connection, `DROP TABLE IF EXISTS ${quoteIdent(READERS_TABLE)}`);
  await exec(connection, `DROP TABLE IF EXISTS ${quoteIdent(CHANGE_LOG_TABLE)}`);
}

/** `LIKE` patterns of the change triggers' names (not the fill trigger's, schema.ts), for CHANGE_TRIGGER_MATCH. */
const CHANGE_TRIGGER_PATTERNS = TRIGGER_EVENTS.map(
  (event) => `${TRIGGER_PREFIX[event].replace(/_/g, '\\_')}\\_%`,
);
const CHANGE_TRIGGER_MATCH = TRIGGER_EVENTS.map(() => 'TRIGGER_NAME LIKE ?').join(' OR ');

/* ------------------------------------------------------------------------------------------------ */
/* Readers: own writes are logged only for another reader of the table                                */
/* ------------------------------------------------------------------------------------------------ */

/** The reader row of tables set up before readers were registered: their readers are unknown. */
export const UNKNOWN_READERS = '*';

/**
 * One row per table and reader (the write origin of a connection that set up its capture: a sync), plus a
 * sentinel row (reader '') per table that writers lock in share mode and a new reader's registration updates.
 */
export const READERS_DDL = `CREATE TABLE IF NOT EXISTS ${quoteIdent(READERS_TABLE)} (
  table_name VARCHAR(64) NOT NULL,
  reader VARCHAR(64) NOT NULL,
  registered_at DATETIME(6) NOT NULL,
  PRIMARY KEY (table_name, reader)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Lockstep change capture: who reads each table''s changes'`;

/**
 * Creates the readers table once; the tables that already have Lockstep's change triggers then get the unknown
 * reader, so they go on logging own writes (syncs set up before readers existed are not registered).
 */
async function ensureReadersTable(connection: PoolConnection, database: string): Promise<void> {
  if (await logExists(connection, database, READERS_TABLE)) return;
  await exec(connection, READERS_DDL);
  await exec(
    connection,
    `INSERT IGNORE INTO ${quoteIdent(READERS_TABLE)} (table_name, reader, registered_at)
     SELECT DISTINCT EVENT_OBJECT_TABLE, ?, UTC_TIMESTAMP(6) FROM information_schema.TRIGGERS
     WHERE TRIGGER_SCHEMA = ? AND (${CHANGE_TRIGGER_MATCH})`,
    [UNKNOWN_READERS, database, ...CHANGE_TRIGGER_PATTERNS],
  );
}

/**
 * Registers a reader. The update of the table's sentinel row waits for every write transaction that checked the
 * readers before (they hold it in share mode until they commit), and writers that check after this commit see
 * the new reader: a write not logged for it has committed before it takes its first checkpoint.
 */
async function registerReader(connection: PoolConnection, table: string, origin: string): Promise<void> {
  await exec(connection, 'START TRANSACTION');
  try {
    await exec(
      connection,
      `INSERT IGNORE INTO ${quoteIdent(READERS_TABLE)} (table_name, reader, registered_at) VALUES (?, '', UTC_TIMESTAMP(6)), (?, ?, UTC_TIMESTAMP(6))`,
      [table, table, origin],
    );
    await exec(connection, `UPDATE ${quoteIdent(READERS_TABLE)} SET registered_at = UTC_TIMESTAMP(6) WHERE table_name = ? AND reader = ''`, [table]);
    await exec(connection, 'COMMIT');
  } catch (error) {
    await exec(connection, 'ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * Inside a write transaction on `table`: sets `@lockstep_log_own` for the triggers to whether the writes of a
 * connection with `origin` must be logged (some other reader is registered, or none at all: a table set up
 * without readers). The readers are read in share mode and stay locked until the commit (see
 * `registerReader`).
 */
export async function setOwnWriteLogging(connection: PoolConnection, table: string, origin: string): Promise<void> {
  let log = true;
  try {
    const found = await rows(connection, `SELECT reader FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ? LOCK IN SHARE MODE`, [table]);
    const readers = found.map((row) => String(row.reader)).filter((reader) => reader !== '');
    log = readers.length === 0 || readers.some((reader) => reader !== origin);
  } catch (error) {
    // No readers table (set up by an earlier version, or nothing set up), or this user may not read it: log.
    if (![1142, 1146].includes((error as { errno?: number }).errno ?? 0)) throw error;
  }
  await exec(connection, `SET @lockstep_log_own = ${log ? 1 : 0}`);
}

/** Back to the default (log) once a write is done, so other statements of the session are logged as before. */
export async function resetOwnWriteLogging(connection: PoolConnection): Promise<void> {
  await exec(connection, 'SET @lockstep_log_own = NULL');
}

/**
 * Runs `work` holding the database's setup lock (a named lock, 30 s wait): every install or removal of
 * Lockstep's triggers and columns on this database (the sync's `prepareTable`, the live export's capture)
 * runs under it, so two workers never set up the same table at once.
 */
export async function withSetupLock<T>(
  connection: PoolConnection,
  database: string,
  work: () => Promise<T>,
): Promise<T> {
  const lock = derivedName('lockstep_setup', database);
  const [row] = await rows(connection, 'SELECT GET_LOCK(?, 30) AS locked', [lock]);
  if (Number(row?.locked) !== 1)
    throw new ConnectorError('transient', 'Another table setup is running on this database; try again');
  try {
    return await work();
  } finally {
    await connection.query('SELECT RELEASE_LOCK(?)', [lock]).catch(() => undefined);
  }
}

/* ------------------------------------------------------------------------------------------------ */
/* Log windows: checkpoints over an AUTO_INCREMENT log (the sync's change log, the live export's log)  */
/* ------------------------------------------------------------------------------------------------ */

/** Log ids `from`..`to` (inclusive) that were not visible, first seen missing at `seenAt` (server time, ms). */
export type HoleRange = [from: number, to: number, seenAt: number];

/** Where a reader of a log stands (the sync and the live export each spell it as text their own way). */
export interface LogCheckpoint {
  /** Every log id up to here was delivered, belongs to another table, or lies in `holes`. */
  high: number;
  /** Runs of ids at or below `high` not visible yet, ascending and disjoint. */
  holes: HoleRange[];
}

/** A log written by triggers and read in windows (`readLogWindow`). */
export interface CaptureLog {
  table: string;
  /** At most this many hole ids are kept, the newest (an older one is given up, as if rolled back). */
  maxHoleIds: number;
  /** At most this many runs of hole ids (each is a `BETWEEN` in the read). */
  maxHoleRanges: number;
}

/** The sync's change log: holes are listed id by id in its checkpoints, so it keeps at most MAX_HOLES. */
export const CHANGE_LOG: CaptureLog = Object.freeze({
  table: CHANGE_LOG_TABLE,
  maxHoleIds: MAX_HOLES,
  maxHoleRanges: MAX_HOLES,
});

/** A scan for holes at checkpoint time never looks further below the newest id than this. */
const MAX_LOOKBACK_IDS = 1_000_000;
/** Ids fetched per statement while looking for holes. */
const GAP_SCAN_CHUNK = 100_000;
/** Hole runs per statement when checking which became visible. */
const RANGES_PER_STATEMENT = 500;

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

/** Runs of ids in (from, to] missing from `present` (ascending, may hold ids outside the range). Pure. */
export function gapRanges(from: number, to: number, present: readonly number[]): [number, number][] {
  const gaps: [number, number][] = [];
  let expected = from + 1;
  for (const id of present) {
    if (id < expected || id > to) continue;
    if (id > expected) gaps.push([expected, id - 1]);
    expected = id + 1;
  }
  if (expected <= to) gaps.push([expected, to]);
  return gaps;
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

/** `holes` without the ids in `present` (ascending): a run a visible id falls in splits around it. Pure. */
export function subtractIds(holes: readonly HoleRange[], present: readonly number[]): HoleRange[] {
  const result: HoleRange[] = [];
  let index = 0;
  for (const [from, to, seenAt] of holes) {
    while (index < present.length && present[index] < from) index++;
    let start = from;
    while (index < present.length && present[index] <= to) {
      if (present[index] > start) result.push([start, present[index] - 1, seenAt]);
      start = Math.max(start, present[index] + 1);
      index++;
    }
    if (start <= to) result.push([start, to, seenAt]);
  }
  return result;
}

/** Splits runs at `cutoff`: the parts at or below it, and those above. Pure. */
export function splitHoles(holes: readonly HoleRange[], cutoff: number): [HoleRange[], HoleRange[]] {
  const below: HoleRange[] = [];
  const above: HoleRange[] = [];
  for (const [from, to, seenAt] of holes) {
    if (to <= cutoff) below.push([from, to, seenAt]);
    else if (from > cutoff) above.push([from, to, seenAt]);
    else {
      below.push([from, cutoff, seenAt]);
      above.push([cutoff + 1, to, seenAt]);
    }
  }
  return [below, above];
}

/** Sorts runs and keeps the newest within `maxIds` ids and `maxRanges` runs. Pure. */
export function capHoles(holes: readonly HoleRange[], maxIds: number, maxRanges: number): HoleRange[] {
  const sorted = [...holes].sort((a, b) => a[0] - b[0]);
  const kept: HoleRange[] = [];
  let room = maxIds;
  for (let index = sorted.length - 1; index >= 0 && room > 0 && kept.length < maxRanges; index--) {
    const [from, to, seenAt] = sorted[index];
    const start = Math.max(from, to - room + 1);
    kept.push([start, to, seenAt]);
    room -= to - start + 1;
  }
  return kept.reverse();
}

async function serverNowMs(connection: PoolConnection): Promise<number> {
  const [row] = await rows(connection, 'SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS now');
  return Number(row.now);
}

async function ids(connection: PoolConnection, sql: string, values: unknown[]): Promise<number[]> {
  const [result] = await connection.query({ sql, values, rowsAsArray: true });
  return (result as unknown as [unknown][]).map((row) => Number(row[0]));
}

/** Runs of ids in (from, to] not visible in `log` (any table's). One COUNT when there are none. */
async function findGaps(
  connection: PoolConnection,
  log: string,
  from: number,
  to: number,
): Promise<[number, number][]> {
  if (to <= from) return [];
  const table = quoteIdent(log);
  const [count] = await rows(connection, `SELECT COUNT(*) AS n FROM ${table} WHERE id > ? AND id <= ?`, [
    from,
    to,
  ]);
  if (Number(count.n) === to - from) return [];
  const gaps: [number, number][] = [];
  let cursor = from;
  for (;;) {
    const found = await ids(
      connection,
      `SELECT id FROM ${table} WHERE id > ? AND id <= ? ORDER BY id LIMIT ?`,
      [cursor, to, GAP_SCAN_CHUNK],
    );
    if (found.length === 0) break;
    const last = found[found.length - 1];
    gaps.push(...gapRanges(cursor, last, found));
    cursor = last;
    if (found.length < GAP_SCAN_CHUNK) break;
  }
  if (cursor < to) gaps.push([cursor + 1, to]);
  return gaps;
}

/** The ids inside `holes` that are visible now (any table's), ascending. */
async function visibleIds(
  connection: PoolConnection,
  log: string,
  holes: readonly HoleRange[],
): Promise<number[]> {
  const found: number[] = [];
  for (let start = 0; start < holes.length; start += RANGES_PER_STATEMENT) {
    const part = holes.slice(start, start + RANGES_PER_STATEMENT);
    found.push(
      ...(await ids(
        connection,
        `SELECT id FROM ${quoteIdent(log)} WHERE ${part.map(() => '(id BETWEEN ? AND ?)').join(' OR ')} ORDER BY id`,
        part.flatMap(([from, to]) => [from, to]),
      )),
    );
  }
  return found;
}

/**
 * Runs `work` in a read-only transaction on one consistent snapshot. REPEATABLE READ is asked for explicitly:
 * under READ COMMITTED (a server or session default) every statement would see a newer state, and an id
 * committed between two statements could be neither delivered nor kept as a hole.
 */
export async function inSnapshot<T>(connection: PoolConnection, work: () => Promise<T>): Promise<T> {
  await connection.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
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

export async function logExists(connection: PoolConnection, database: string, log: string): Promise<boolean> {
  const [found] = await rows(
    connection,
    `SELECT 1 AS present FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
    [database, log],
  );
  return found !== undefined;
}

export interface LookbackOptions {
  /** Look at least this many ids below the newest for transactions still open. */
  ids: number;
  /**
   * And back to the ids logged this long ago (server clock, by `changed_at`), when that reaches further:
   * a transaction that wrote within that time and is still open becomes a hole however many ids followed.
   */
  ms?: number;
}

/**
 * A checkpoint meaning "now", in a consistent snapshot: the newest visible id, and as holes the ids below it
 * (within the lookback) that are not visible: they belong to transactions still open, which commit after
 * "now". A missing log gives `{ high: 0, holes: [] }`.
 */
export async function logCheckpoint(
  connection: PoolConnection,
  database: string,
  log: CaptureLog,
  lookback: LookbackOptions,
): Promise<LogCheckpoint> {
  if (!(await logExists(connection, database, log.table))) return { high: 0, holes: [] };
  const table = quoteIdent(log.table);
  return inSnapshot(connection, async () => {
    const now = await serverNowMs(connection);
    const [max] = await rows(connection, `SELECT COALESCE(MAX(id), 0) AS high FROM ${table}`);
    const high = Number(max.high);
    let floor = high - lookback.ids;
    if (lookback.ms !== undefined) {
      // `changed_at` is the writing statement's start, so a long statement stamps late ids with an early time;
      // the newest entry stamped before the window bounds the ids handed out since well enough.
      const [old] = await rows(
        connection,
        `SELECT id FROM ${table} WHERE changed_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND ORDER BY changed_at DESC LIMIT 1`,
        [Math.round(lookback.ms * 1000)],
      );
      floor = Math.min(floor, old ? Number(old.id) : 0);
    }
    floor = Math.max(0, floor, high - MAX_LOOKBACK_IDS);
    const holes = (await findGaps(connection, log.table, floor, high)).map(([from, to]): HoleRange => [
      from,
      to,
      now,
    ]);
    return { high, holes: capHoles(holes, log.maxHoleIds, log.maxHoleRanges) };
  });
}

export interface LogWindow {
  /** The table's log rows after the checkpoint (its holes, then above its high-water mark), ascending by id. */
  entries: Row[];
  checkpoint: LogCheckpoint;
  hasMore: boolean;
}

/**
 * Reads the table's log entries after `since` (at most `limit`, by id) and the checkpoint after them. Must run
 * inside `inSnapshot`. Ids are examined up to a cutoff (the last entry returned when the limit cut the read
 * short, else the newest visible id): hole ids at or below it that are visible now were returned (this
 * table's) or are another table's, and leave the holes; those still missing stay while younger than
 * `holdWindowMs` (else they count as rolled back); hole ids above the cutoff stay as they are, whatever their
 * age, until a read reaches them. New holes are the ids missing between the old and the new high-water mark.
 */
export async function readLogWindow(
  connection: PoolConnection,
  log: CaptureLog,
  tableName: string,
  since: LogCheckpoint,
  options: { limit: number; holdWindowMs: number; columns: string },
): Promise<LogWindow> {
  const table = quoteIdent(log.table);
  const limit = Math.max(1, Math.floor(options.limit));
  const now = await serverNowMs(connection);
  const holeSql = since.holes.map(() => ' OR (id BETWEEN ? AND ?)').join('');
  const found = await rows(
    connection,
    `SELECT ${options.columns} FROM ${table} WHERE table_name = ? AND (id > ?${holeSql}) ORDER BY id LIMIT ?`,
    [tableName, since.high, ...since.holes.flatMap(([from, to]) => [from, to]), limit + 1],
  );
  const hasMore = found.length > limit;
  const entries = found.slice(0, limit);
  let cutoff = Number.MAX_SAFE_INTEGER;
  let high = since.high;
  if (hasMore) {
    cutoff = Number(entries[entries.length - 1].id);
    high = Math.max(high, cutoff);
  } else {
    const [max] = await rows(connection, `SELECT COALESCE(MAX(id), 0) AS high FROM ${table}`);
    high = Math.max(high, Number(max.high));
  }
  const [reached, later] = splitHoles(since.holes, cutoff);
  const stillMissing = subtractIds(reached, await visibleIds(connection, log.table, reached)).filter(
    ([, , seenAt]) => now - seenAt < options.holdWindowMs,
  );
  const fresh = (await findGaps(connection, log.table, since.high, high)).map(([from, to]): HoleRange => [
    from,
    to,
    now,
  ]);
  const holes = capHoles([...stillMissing, ...later, ...fresh], log.maxHoleIds, log.maxHoleRanges);
  return { entries, checkpoint: { high, holes }, hasMore };
}

/**
 * Deletes a log's entries older than `days` (all tables), a bounded batch at a time. The ids are found with a
 * plain (non-locking) read and deleted by primary key, so the purge only locks old rows: a ranged DELETE would
 * take next-key locks and wait on (and block) the triggers of transactions still open. Rows with an empty
 * table name are no table's entries (the live export log's marker) and stay.
 */
export async function purgeLog(connection: PoolConnection, log: string, days: number): Promise<number> {
  const table = quoteIdent(log);
  const old = await ids(
    connection,
    `SELECT id FROM ${table} WHERE changed_at < UTC_TIMESTAMP(6) - INTERVAL ? DAY AND table_name <> '' ORDER BY id LIMIT 5000`,
    [days],
  );
  if (old.length === 0) return 0;
  const result = await exec(
    connection,
    `DELETE FROM ${table} WHERE id IN (${placeholders(old.length)})`,
    old,
  );
  return result.affectedRows;
}

/* ------------------------------------------------------------------------------------------------ */
/* The sync's change log                                                                             */
/* ------------------------------------------------------------------------------------------------ */

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
    // Only the records of changes that are returned are read: after an initial sync that wrote a table, the log
    // holds an entry for every row Lockstep wrote, and reading those rows back would be wasted.
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
