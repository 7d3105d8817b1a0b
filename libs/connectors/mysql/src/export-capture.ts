/**
 * The live export's change capture on a MySQL / MariaDB source (`LiveExportSourceCapture`): three row
 * triggers per table write the key of every inserted, updated or deleted row into `lockstep_export_log`, a
 * table in the same database. It is separate from the sync's capture (change-capture.ts:
 * `lockstep_change_log`, triggers `lockstep_ai_/au_/ad_`): other trigger names (`lockstep_xai_/xau_/xad_`),
 * another log, other checkpoints, so installing or removing one never touches the other. MariaDB 10.2.3+
 * and MySQL 5.7.2+ allow several triggers per event, so both coexist on a table.
 *
 *   lockstep_export_log(id BIGINT AUTO_INCREMENT, table_name, pk, changed_at)
 *
 * `pk` is the key's text as the source reads give it (`keyText`): only tables whose key is one column of a
 * type whose `CAST(... AS CHAR)` is that same text get a capture. Reading the log is export-feed.ts's.
 *
 * The token names one installation: a random label in each trigger's body (`lx_<12 hex>: BEGIN ... END`),
 * the triggers' CREATED times, and the log's marker row (table_name '', pk a random id, written when the log
 * is created and never purged). Dropping and re-creating a trigger changes its label; dropping,
 * re-creating, truncating or emptying the log removes the marker (a TRUNCATE keeps the table's CREATE_TIME
 * and comment, and resets AUTO_INCREMENT below every checkpoint, so the table's own identity is not enough).
 *
 * What triggers do not see, so the capture cannot (the engine's periodic full compare does): rows changed by
 * a foreign key's cascade (tables with a cascading foreign key get no capture), TRUNCATE of the source table,
 * and changes applied by row-based replication on a replica.
 */
import { ConnectorError } from '@lockstep/connectors-core';
import { createHash, randomBytes } from 'node:crypto';
import type { PoolConnection } from 'mysql2/promise';
import { CHANGE_LOG_TABLE, EXPORT_LOG_TABLE, type TableKey, type TableMeta } from './catalog';
import { logExists, withSetupLock, type TriggerEvent } from './change-capture';
import { exec, rows } from './db';
import type { CaptureLog } from './log-window';
import { derivedName, placeholders, quoteIdent, quoteString } from './sql';

export { EXPORT_LOG_TABLE };
/** How long a CREATE / DROP TRIGGER waits for the transactions using the table (new queries queue behind). */
export const TRIGGER_LOCK_WAIT_SECONDS = 5;
/** Longest key text the log holds (`pk` VARCHAR(1024)); a longer key would fail the write in the trigger. */
const MAX_KEY_LENGTH = 1024;
/** Entries a removal deletes per statement. */
const DELETE_BATCH = 5000;

/** Holes are runs, so a big transaction still open costs one run; a million ids bounds the reads' work. */
export const EXPORT_LOG: CaptureLog = Object.freeze({
  table: EXPORT_LOG_TABLE,
  maxHoleIds: 1_000_000,
  maxHoleRanges: 2_000,
});

const EXPORT_LOG_COMMENT =
  'Lockstep live export change capture: keys of changed rows, written by the lockstep_x* triggers, ' +
  'read and purged by live export runs';

export const EXPORT_LOG_DDL = `
CREATE TABLE IF NOT EXISTS ${quoteIdent(EXPORT_LOG_TABLE)} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  table_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  pk VARCHAR(${MAX_KEY_LENGTH}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  changed_at DATETIME(6) NOT NULL,
  KEY lockstep_export_log_table (table_name, id),
  KEY lockstep_export_log_changed_at (changed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
  COMMENT=${quoteString(EXPORT_LOG_COMMENT)}`;

/** The marker row's table name: no table is called '' (see the header). */
export const MARKER_TABLE = '';

const EVENTS: readonly TriggerEvent[] = ['insert', 'update', 'delete'];
const EVENT_SQL: Record<TriggerEvent, string> = { insert: 'INSERT', update: 'UPDATE', delete: 'DELETE' };

/** Trigger names (at most 64 characters, unique per database), distinct from the sync's. */
export function exportTriggerName(event: TriggerEvent, table: string): string {
  return derivedName(`lockstep_x${{ insert: 'ai', update: 'au', delete: 'ad' }[event]}`, table);
}

/* ------------------------------------------------------------------------------------------------ */
/* Which tables can be captured                                                                      */
/* ------------------------------------------------------------------------------------------------ */

/** Key storages whose `CAST(value AS CHAR)` in a trigger is the text `keyText` makes of the driver value. */
const CAPTURABLE_STORAGE = new Set([
  'integer',
  'text',
  'uuid',
  'decimal',
  'date',
  'datetime',
  'datetime_utc',
  'enum',
]);

/**
 * The key the capture logs, or null when the table cannot be captured: a view, Lockstep's own log, no key,
 * or a key whose logged text would not be the remote id (TIMESTAMP text depends on the writer's time zone,
 * FLOAT text on the client, BIT keys read as hex) or could be longer than the log holds.
 */
export function captureKey(meta: TableMeta): TableKey | null {
  if (
    meta.isView ||
    meta.name === EXPORT_LOG_TABLE ||
    meta.name === CHANGE_LOG_TABLE ||
    meta.name === MARKER_TABLE
  )
    return null;
  const key = meta.key;
  const column = key ? meta.byName.get(key.column) : undefined;
  if (!key || !column || !CAPTURABLE_STORAGE.has(column.storage)) return null;
  if (column.storage === 'text') {
    const length = column.typeDetails?.['max_length'];
    if (typeof length !== 'number' || length > MAX_KEY_LENGTH) return null;
  }
  return key;
}

const CASCADING_FOREIGN_KEY_SQL = `
SELECT 1 AS present
  FROM information_schema.REFERENTIAL_CONSTRAINTS
 WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?
   AND (DELETE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT')
        OR UPDATE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT'))
 LIMIT 1`;

/**
 * Whether rows of the table can change without its triggers firing: MySQL and MariaDB run no triggers for
 * the rows a foreign key's ON DELETE / ON UPDATE CASCADE, SET NULL or SET DEFAULT changes.
 */
async function hasCascadingForeignKey(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<boolean> {
  const [found] = await rows(connection, CASCADING_FOREIGN_KEY_SQL, [database, table]);
  return found !== undefined;
}

/** The key to capture the table by, or null when it cannot be captured exactly (see `captureKey`). */
export async function capturableKey(
  connection: PoolConnection,
  database: string,
  meta: TableMeta,
): Promise<TableKey | null> {
  const key = captureKey(meta);
  if (!key) return null;
  return (await hasCascadingForeignKey(connection, database, meta.name)) ? null : key;
}

/* ------------------------------------------------------------------------------------------------ */
/* Triggers                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

const LOG_INSERT_SQL = (table: string, keyExpression: string) =>
  `INSERT INTO ${quoteIdent(EXPORT_LOG_TABLE)} (table_name, pk, changed_at) ` +
  `VALUES (${quoteString(table)}, CAST(${keyExpression} AS CHAR), UTC_TIMESTAMP(6))`;

/**
 * The trigger's body (what information_schema.TRIGGERS.ACTION_STATEMENT shows): a block labelled with the
 * installation's nonce (a label is part of the syntax, so no server drops it as it may drop a comment). An
 * update that changes the key logs the old key too (that row is gone).
 */
export function exportTriggerBody(
  event: TriggerEvent,
  table: string,
  keyColumn: string,
  nonce: string,
): string {
  const k = quoteIdent(keyColumn);
  const label = `lx_${nonce}`;
  const logOld = `${LOG_INSERT_SQL(table, `OLD.${k}`)};`;
  const logNew = `${LOG_INSERT_SQL(table, `NEW.${k}`)};`;
  const statements =
    event === 'insert'
      ? logNew
      : event === 'delete'
        ? logOld
        : `IF NOT (OLD.${k} <=> NEW.${k}) THEN ${logOld} END IF; ${logNew}`;
  return `${label}: BEGIN ${statements} END ${label}`;
}

export function exportTriggerDdl(
  event: TriggerEvent,
  table: string,
  keyColumn: string,
  nonce: string,
): string {
  const name = quoteIdent(exportTriggerName(event, table));
  const body = exportTriggerBody(event, table, keyColumn, nonce);
  return `
CREATE TRIGGER ${name} AFTER ${EVENT_SQL[event]} ON ${quoteIdent(table)} FOR EACH ROW ${body}`;
}

interface InstalledTrigger {
  name: string;
  table: string;
  event: string;
  timing: string;
  body: string;
  created: string;
}

const INSTALLED_TRIGGERS_SQL = (count: number) => `
SELECT TRIGGER_NAME AS name, EVENT_OBJECT_TABLE AS tbl, EVENT_MANIPULATION AS event, ACTION_TIMING AS timing,
       ACTION_STATEMENT AS body, CAST(CREATED AS CHAR) AS created
  FROM information_schema.TRIGGERS
 WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME IN (${placeholders(count)})`;

/** Lockstep's export triggers present for the table (by name: one left on a renamed table is found too). */
async function installedTriggers(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<Map<string, InstalledTrigger>> {
  const names = EVENTS.map((event) => exportTriggerName(event, table));
  const found = await rows(connection, INSTALLED_TRIGGERS_SQL(names.length), [database, ...names]);
  return new Map(
    found.map((row) => [
      String(row['name']),
      {
        name: String(row['name']),
        table: String(row['tbl']),
        event: String(row['event']),
        timing: String(row['timing']),
        body: String(row['body']),
        created: row['created'] === null ? '' : String(row['created']),
      },
    ]),
  );
}

const normalize = (sql: string): string => sql.replace(/\s+/g, ' ').trim();

/** Whether an installed trigger is exactly the one this code makes for the table and key (its own nonce). */
function isCorrect(
  trigger: InstalledTrigger | undefined,
  event: TriggerEvent,
  table: string,
  keyColumn: string,
): boolean {
  if (!trigger || trigger.table !== table || trigger.timing !== 'AFTER' || trigger.event !== EVENT_SQL[event])
    return false;
  const nonce = /^\s*lx_([0-9a-f]{12}):/.exec(trigger.body)?.[1];
  return (
    nonce !== undefined &&
    normalize(trigger.body) === normalize(exportTriggerBody(event, table, keyColumn, nonce))
  );
}

/**
 * Runs `work` with a short metadata-lock wait: CREATE / DROP TRIGGER waits for every open transaction that
 * used the table, and every new query on the table queues behind it, so it gives up (ConnectorError
 * `transient`) rather than stall the application for the server's default (a day on MariaDB).
 */
async function withShortLockWait<T>(
  connection: PoolConnection,
  seconds: number,
  work: () => Promise<T>,
): Promise<T> {
  await exec(connection, 'SET SESSION lock_wait_timeout = ?', [seconds]);
  try {
    return await work();
  } finally {
    await exec(connection, 'SET SESSION lock_wait_timeout = DEFAULT').catch(() => undefined);
  }
}

/* ------------------------------------------------------------------------------------------------ */
/* Install, token, removal                                                                           */
/* ------------------------------------------------------------------------------------------------ */

const MARKER_SQL = `
SELECT id, pk FROM ${quoteIdent(EXPORT_LOG_TABLE)} WHERE table_name = ? ORDER BY id LIMIT 1`;

const INSERT_MARKER_SQL = `
INSERT INTO ${quoteIdent(EXPORT_LOG_TABLE)} (table_name, pk, changed_at) VALUES (?, ?, UTC_TIMESTAMP(6))`;

async function marker(connection: PoolConnection): Promise<{ id: string; nonce: string } | null> {
  const [row] = await rows(connection, MARKER_SQL, [MARKER_TABLE]);
  return row ? { id: String(row['id']), nonce: String(row['pk']) } : null;
}

export interface InstallOptions {
  lockWaitSeconds?: number;
}

/**
 * Under the setup lock: creates the log (and its marker) if missing and whichever of the three triggers is
 * missing or not the one this code makes (dropped and created again). Correct triggers are left alone, so
 * the token stays the same. ConnectorError `permission` when the role may not create tables or triggers.
 */
export async function installExportCapture(
  connection: PoolConnection,
  database: string,
  table: string,
  key: TableKey,
  options: InstallOptions = {},
): Promise<void> {
  await withSetupLock(connection, database, async () => {
    // Created only when missing: CREATE TABLE IF NOT EXISTS needs the CREATE privilege even when it exists.
    if (!(await logExists(connection, database, EXPORT_LOG_TABLE))) await exec(connection, EXPORT_LOG_DDL);
    if (!(await marker(connection))) {
      await exec(connection, INSERT_MARKER_SQL, [MARKER_TABLE, randomBytes(16).toString('hex')]);
    }
    const present = await installedTriggers(connection, database, table);
    const missing = EVENTS.filter(
      (event) => !isCorrect(present.get(exportTriggerName(event, table)), event, table, key.column),
    );
    if (missing.length === 0) return;
    const nonce = randomBytes(6).toString('hex');
    await withShortLockWait(connection, options.lockWaitSeconds ?? TRIGGER_LOCK_WAIT_SECONDS, async () => {
      for (const event of missing) {
        if (present.has(exportTriggerName(event, table)))
          await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(exportTriggerName(event, table))}`);
        await exec(connection, exportTriggerDdl(event, table, key.column, nonce));
      }
    });
  });
}

/**
 * The token of the capture installed on the table now, or null when the log, its marker or a correct
 * trigger is missing.
 */
export async function exportCaptureToken(
  connection: PoolConnection,
  database: string,
  table: string,
  key: TableKey,
): Promise<string | null> {
  if (!(await logExists(connection, database, EXPORT_LOG_TABLE))) return null;
  const log = await marker(connection);
  if (!log) return null;
  const present = await installedTriggers(connection, database, table);
  const parts: string[][] = [];
  for (const event of EVENTS) {
    const trigger = present.get(exportTriggerName(event, table));
    if (!trigger || !isCorrect(trigger, event, table, key.column)) return null;
    parts.push([trigger.name, trigger.created, normalize(trigger.body)]);
  }
  return `myxt1.${createHash('sha1')
    .update(JSON.stringify([log.id, log.nonce, parts]))
    .digest('hex')
    .slice(0, 32)}`;
}

const TABLE_ENTRIES_SQL = `
SELECT id
  FROM ${quoteIdent(EXPORT_LOG_TABLE)}
 WHERE table_name = ? AND id <= ?
 ORDER BY id
 LIMIT ?`;

/**
 * Drops the table's three triggers (under the setup lock) and deletes its log entries, a batch at a time and
 * only up to the newest id at the drop: a capture installed again meanwhile keeps what it logs. Idempotent.
 */
export async function removeExportCapture(
  connection: PoolConnection,
  database: string,
  table: string,
  options: InstallOptions = {},
): Promise<void> {
  if (table === MARKER_TABLE) throw new ConnectorError('invalid_data', 'The table name is empty');
  await withSetupLock(connection, database, () =>
    withShortLockWait(connection, options.lockWaitSeconds ?? TRIGGER_LOCK_WAIT_SECONDS, async () => {
      for (const event of EVENTS)
        await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(exportTriggerName(event, table))}`);
    }),
  );
  if (!(await logExists(connection, database, EXPORT_LOG_TABLE))) return;
  const log = quoteIdent(EXPORT_LOG_TABLE);
  // Dropping the triggers waited for every transaction that had written to the table: its entries are all
  // committed now, at or below this id.
  const [max] = await rows(connection, `SELECT COALESCE(MAX(id), 0) AS high FROM ${log}`);
  for (;;) {
    const found = await rows(connection, TABLE_ENTRIES_SQL, [table, max['high'], DELETE_BATCH]);
    if (found.length === 0) return;
    const ids = found.map((row) => String(row['id']));
    await exec(connection, `DELETE FROM ${log} WHERE id IN (${placeholders(ids.length)})`, ids);
    if (found.length < DELETE_BATCH) return;
  }
}
