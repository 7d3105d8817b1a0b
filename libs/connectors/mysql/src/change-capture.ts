/**
 * Change capture for MySQL / MariaDB, the SQL side: row triggers write every insert, update and delete of a
 * prepared table into `lockstep_change_log`, a table in the same database (so no extra database or privilege
 * is needed beyond TRIGGER and CREATE); the worker polls it (there is no NOTIFY, so no `watch`). Reading the
 * log is change-feed.ts's (over the windows of log-window.ts).
 *
 *   lockstep_change_log(id BIGINT AUTO_INCREMENT, table_name, op, pk, origin, changed_at)
 *
 * `origin` is the writing session's `@lockstep_origin` ('lockstep', or 'lockstep:<writeOrigin>' on a
 * connection opened with one, see db.ts), so a connection's own writes are recognised and other syncs' are
 * not taken for them. `pk` is the record key's text (its remote id).
 *
 * Readers (`lockstep_capture_readers`): own writes are logged only when another reader of the table is
 * registered, so a sync that alone reads a table does not read back every row it wrote.
 */
import { ConnectorError } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { CHANGE_LOG_TABLE, READERS_TABLE, type TableMeta } from './catalog';
import { exec, rows } from './db';
import { requireKey } from './schema';
import { derivedName, quoteIdent, quoteString } from './sql';

export const CHANGE_LOG_DDL = `
CREATE TABLE IF NOT EXISTS ${quoteIdent(CHANGE_LOG_TABLE)} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  table_name VARCHAR(64) NOT NULL,
  op VARCHAR(6) NOT NULL,
  pk VARCHAR(1024) NOT NULL,
  origin VARCHAR(64) NULL,
  changed_at DATETIME(6) NOT NULL,
  KEY lockstep_change_log_table (table_name, id),
  KEY lockstep_change_log_changed_at (changed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
  COMMENT='Lockstep change capture: filled by triggers, read by the sync worker'`;

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
 * Logged unless a Lockstep connection that is the table's only reader wrote it (readers, below): its session
 * sets `@lockstep_log_own = 0` for such a write; any other session (an application's, or one that did not
 * check) logs.
 */
const LOGGED = `(@lockstep_origin IS NULL OR NOT (@lockstep_log_own <=> 0))`;

const LOG_INSERT_SQL = (table: string, op: TriggerEvent, key: string) => `
    INSERT INTO ${quoteIdent(CHANGE_LOG_TABLE)} (table_name, op, pk, origin, changed_at)
    VALUES (${quoteString(table)}, '${op}', CAST(${key} AS CHAR), @lockstep_origin, UTC_TIMESTAMP(6))`;

/**
 * CREATE TRIGGER statement for one event. An update that changes the key also records the old key as
 * deleted.
 */
export function triggerDdl(event: TriggerEvent, table: string, keyColumn: string): string {
  const name = quoteIdent(triggerName(event, table));
  const on = quoteIdent(table);
  const k = quoteIdent(keyColumn);
  switch (event) {
    case 'insert':
      return `
CREATE TRIGGER ${name} AFTER INSERT ON ${on} FOR EACH ROW BEGIN
  IF ${LOGGED} THEN ${LOG_INSERT_SQL(table, 'insert', `NEW.${k}`)}; END IF;
END`;
    case 'delete':
      return `
CREATE TRIGGER ${name} AFTER DELETE ON ${on} FOR EACH ROW BEGIN
  IF ${LOGGED} THEN ${LOG_INSERT_SQL(table, 'delete', `OLD.${k}`)}; END IF;
END`;
    case 'update':
      return `
CREATE TRIGGER ${name} AFTER UPDATE ON ${on} FOR EACH ROW BEGIN
  IF ${LOGGED} THEN
    IF NOT (OLD.${k} <=> NEW.${k}) THEN ${LOG_INSERT_SQL(table, 'delete', `OLD.${k}`)}; END IF;
    ${LOG_INSERT_SQL(table, 'update', `NEW.${k}`)};
  END IF;
END`;
  }
}

const TABLE_TRIGGERS_SQL = `
SELECT TRIGGER_NAME AS name
  FROM information_schema.TRIGGERS
 WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?`;

export async function existingTriggers(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<Set<string>> {
  const found = await rows(connection, TABLE_TRIGGERS_SQL, [database, table]);
  return new Set(found.map((row) => String(row.name)));
}

/**
 * Creates the change log and the readers table (if missing), whichever of the three triggers is missing,
 * and registers `origin` as a reader of the table. Idempotent. Triggers made by earlier versions are kept:
 * they log every write, own writes included.
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

const UNREGISTER_READER_SQL = `
DELETE FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ? AND reader = ?`;

const OTHER_READERS_SQL = `
SELECT COUNT(*) AS n
  FROM ${quoteIdent(READERS_TABLE)}
 WHERE table_name = ? AND reader NOT IN ('', ?)`;

const FORGET_TABLE_READERS_SQL = `
DELETE FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ?`;

const FORGET_TABLE_CHANGES_SQL = `
DELETE FROM ${quoteIdent(CHANGE_LOG_TABLE)} WHERE table_name = ?`;

/**
 * Removes `origin`'s reader of the table; when no other reader is left (the unknown reader of an earlier
 * version's setup not counted), drops the three change triggers and the table's change-log entries, and
 * answers true: no sync reads the table any more. Idempotent.
 */
export async function removeChangeCapture(
  connection: PoolConnection,
  database: string,
  table: string,
  origin: string,
): Promise<boolean> {
  if (await logExists(connection, database, READERS_TABLE)) {
    await exec(connection, UNREGISTER_READER_SQL, [table, origin]);
    const [left] = await rows(connection, OTHER_READERS_SQL, [table, UNKNOWN_READERS]);
    if (Number(left?.n ?? 0) > 0) return false;
    await exec(connection, FORGET_TABLE_READERS_SQL, [table]);
  }
  for (const event of TRIGGER_EVENTS)
    await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(triggerName(event, table))}`);
  if (await logExists(connection, database, CHANGE_LOG_TABLE))
    await exec(connection, FORGET_TABLE_CHANGES_SQL, [table]);
  return true;
}

/** `LIKE` patterns of the change triggers' names (not the fill trigger's, schema.ts). */
const CHANGE_TRIGGER_PATTERNS = TRIGGER_EVENTS.map(
  (event) => `${TRIGGER_PREFIX[event].replace(/_/g, '\\_')}\\_%`,
);
const CHANGE_TRIGGER_MATCH = TRIGGER_EVENTS.map(() => 'TRIGGER_NAME LIKE ?').join(' OR ');

const ANY_CHANGE_TRIGGER_SQL = `
SELECT 1 AS present
  FROM information_schema.TRIGGERS
 WHERE TRIGGER_SCHEMA = ? AND (${CHANGE_TRIGGER_MATCH})
 LIMIT 1`;

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
  const [trigger] = await rows(connection, ANY_CHANGE_TRIGGER_SQL, [database, ...CHANGE_TRIGGER_PATTERNS]);
  if (trigger) return;
  await exec(connection, `DROP TABLE IF EXISTS ${quoteIdent(READERS_TABLE)}`);
  await exec(connection, `DROP TABLE IF EXISTS ${quoteIdent(CHANGE_LOG_TABLE)}`);
}

/* ------------------------------------------------------------------------------------------------ */
/* Readers: own writes are logged only for another reader of the table                                */
/* ------------------------------------------------------------------------------------------------ */

/** The reader row of tables set up before readers were registered: their readers are unknown. */
export const UNKNOWN_READERS = '*';

/**
 * One row per table and reader (the write origin of a connection that set up its capture: a sync), plus a
 * sentinel row (reader '') per table that writers lock in share mode and a new reader's registration
 * updates.
 */
export const READERS_DDL = `
CREATE TABLE IF NOT EXISTS ${quoteIdent(READERS_TABLE)} (
  table_name VARCHAR(64) NOT NULL,
  reader VARCHAR(64) NOT NULL,
  registered_at DATETIME(6) NOT NULL,
  PRIMARY KEY (table_name, reader)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Lockstep change capture: who reads each table''s changes'`;

const REGISTER_UNKNOWN_READERS_SQL = `
INSERT IGNORE INTO ${quoteIdent(READERS_TABLE)} (table_name, reader, registered_at)
SELECT DISTINCT EVENT_OBJECT_TABLE, ?, UTC_TIMESTAMP(6)
  FROM information_schema.TRIGGERS
 WHERE TRIGGER_SCHEMA = ? AND (${CHANGE_TRIGGER_MATCH})`;

const REGISTER_READER_SQL = `
INSERT IGNORE INTO ${quoteIdent(READERS_TABLE)} (table_name, reader, registered_at)
VALUES (?, '', UTC_TIMESTAMP(6)), (?, ?, UTC_TIMESTAMP(6))`;

const TOUCH_SENTINEL_SQL = `
UPDATE ${quoteIdent(READERS_TABLE)}
   SET registered_at = UTC_TIMESTAMP(6)
 WHERE table_name = ? AND reader = ''`;

const TABLE_READERS_SQL = `
SELECT reader FROM ${quoteIdent(READERS_TABLE)} WHERE table_name = ? LOCK IN SHARE MODE`;

/**
 * Creates the readers table once; the tables that already have Lockstep's change triggers then get the
 * unknown reader, so they go on logging own writes (syncs set up before readers existed are not registered).
 */
async function ensureReadersTable(connection: PoolConnection, database: string): Promise<void> {
  if (await logExists(connection, database, READERS_TABLE)) return;
  await exec(connection, READERS_DDL);
  await exec(connection, REGISTER_UNKNOWN_READERS_SQL, [
    UNKNOWN_READERS,
    database,
    ...CHANGE_TRIGGER_PATTERNS,
  ]);
}

/**
 * Registers a reader. The update of the table's sentinel row waits for every write transaction that checked
 * the readers before (they hold it in share mode until they commit), and writers that check after this
 * commit see the new reader: a write not logged for it has committed before it takes its first checkpoint.
 */
async function registerReader(connection: PoolConnection, table: string, origin: string): Promise<void> {
  await exec(connection, 'START TRANSACTION');
  try {
    await exec(connection, REGISTER_READER_SQL, [table, table, origin]);
    await exec(connection, TOUCH_SENTINEL_SQL, [table]);
    await exec(connection, 'COMMIT');
  } catch (error) {
    await exec(connection, 'ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * Inside a write transaction on `table`: sets `@lockstep_log_own` for the triggers to whether the writes of
 * a connection with `origin` must be logged (some other reader is registered, or none at all: a table set up
 * without readers). The readers are read in share mode and stay locked until the commit (see
 * `registerReader`).
 */
export async function setOwnWriteLogging(
  connection: PoolConnection,
  table: string,
  origin: string,
): Promise<void> {
  let log = true;
  try {
    const found = await rows(connection, TABLE_READERS_SQL, [table]);
    const readers = found.map((row) => String(row.reader)).filter((reader) => reader !== '');
    log = readers.length === 0 || readers.some((reader) => reader !== origin);
  } catch (error) {
    // No readers table (set up by an earlier version, or nothing set up), or this user may not read it: log.
    if (![1142, 1146].includes((error as { errno?: number }).errno ?? 0)) throw error;
  }
  await exec(connection, `SET @lockstep_log_own = ${log ? 1 : 0}`);
}

/** Back to the default (log) once a write is done: other statements of the session are logged as before. */
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

const TABLE_PRESENT_SQL = `
SELECT 1 AS present
  FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`;

/** Whether the database holds the table `log` (a change log, the readers table). */
export async function logExists(connection: PoolConnection, database: string, log: string): Promise<boolean> {
  const [found] = await rows(connection, TABLE_PRESENT_SQL, [database, log]);
  return found !== undefined;
}
