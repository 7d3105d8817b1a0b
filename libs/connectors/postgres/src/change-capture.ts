/**
 * Change capture: triggers write every insert, update and delete of a prepared table into
 * `lockstep.change_log`, tagged with the writing transaction's id (xid8) and with `origin = 'lockstep'`
 * (or `lockstep:<writeOrigin>`) when Lockstep's own connection wrote it (each session of its pool runs
 * `set_config('lockstep.origin', ..., false)` when it connects). Each statement that logged something also
 * sends `pg_notify('lockstep_changes', ...)` to wake a watcher.
 *
 * Three STATEMENT-level AFTER triggers per table (the approach of export-capture.ts), all running
 * `lockstep.capture_changes()`; one trigger per event because PostgreSQL refuses transition tables on a
 * trigger with several events:
 * - `lockstep_capture_ins` (NEW TABLE new_rows) logs an 'upsert' of every inserted key;
 * - `lockstep_capture_del` (OLD TABLE old_rows) logs a 'delete' of every deleted key;
 * - `lockstep_capture_upd` (OLD TABLE old_rows, NEW TABLE new_rows) logs a 'delete' of every old key that is
 *   not among the new keys (a key change), then an 'upsert' of every new key. Transition tables carry no row
 *   identity that survives an update (a ctid changes), so old and new rows are not paired: compared as sets,
 *   which logs what a row trigger logs for each row, and correctly when keys move between rows (a swap or a
 *   shift `SET id = id + 1`, where per-row pairs would end with a delete of a key that still exists).
 * Each logs with ONE set-based `INSERT ... SELECT` per statement instead of a function call (and two dynamic
 * queries) per row: a bulk write costs a fraction of what row triggers cost (a single-row statement costs
 * somewhat more: one dynamic query is planned per statement). An empty transition table logs nothing and
 * notifies nothing. TRUNCATE is not captured (the engine's full scan finds it).
 *
 * A partitioned table gets the statement triggers too: they see the rows its statements change in every
 * partition (a move between partitions is a delete and an insert there), but not writes made directly to a
 * partition, which the engine's full scan finds. (A row trigger would not do better: PostgreSQL clones it to
 * the partitions, where it fires with the partition's name and logs changes no reader of the table asks for.)
 * Partitions, inheritance children and foreign tables get one ROW-level trigger (`lockstep_capture_row`, same
 * function) instead: statement triggers of a child do not fire for writes made through its parent, its row
 * triggers do; foreign tables take no transition tables.
 *
 * The key column travels as a trigger argument by attribute NUMBER (a rename of the column keeps the capture
 * working), and a key is logged as its type's OUTPUT text (`format('%s', key)`) under the pool's session
 * settings (`SET` clauses of the function): exactly the remote id `readPage` and `readByIds` return, whatever
 * the writer's session says (`key::text` differs for `char(n)`, `boolean` and `inet`). The function is
 * SECURITY DEFINER with a fixed search_path, so another role writing the table needs no rights on the log.
 *
 * Tables prepared by earlier versions have one row trigger `lockstep_capture` running
 * `lockstep.capture_change('<key column name>')`; `prepareTable` replaces it. The old function is dropped
 * with the last trigger that uses it (`DROP_LEGACY_FUNCTION_SQL`); until then other tables keep using it.
 *
 * Reading the log (checkpoints, `readChanges`, purge, `watch`) is change-feed.ts's.
 */
import { SESSION_SQL } from './config';
import { ident, qualified } from './sql';

export const LOCKSTEP_SCHEMA = 'lockstep';
export const CHANGE_LOG = `${LOCKSTEP_SCHEMA}.change_log`;
export const NOTIFY_CHANNEL = 'lockstep_changes';
export const CAPTURE_FUNCTION = `${LOCKSTEP_SCHEMA}.capture_changes`;
/** Who reads each table's changes (see `REGISTER_READER_SQL`). */
export const CAPTURE_READERS = `${LOCKSTEP_SCHEMA}.capture_readers`;
/** The reader row of tables prepared before readers were registered: their readers are unknown. */
export const UNKNOWN_READERS = '*';
/** The row trigger of earlier versions (replaced by `prepareTable`, dropped by `unprepareTable`). */
export const LEGACY_TRIGGER_NAME = 'lockstep_capture';
export const ORIGIN_SETTING = 'lockstep.origin';

export interface SyncCaptureTrigger {
  name: string;
  event: 'INSERT' | 'UPDATE' | 'DELETE';
  oldTable: string | null;
  newTable: string | null;
}

/** The statement-level triggers of a plain table. */
export const STATEMENT_TRIGGERS: readonly SyncCaptureTrigger[] = [
  { name: 'lockstep_capture_ins', event: 'INSERT', oldTable: null, newTable: 'new_rows' },
  { name: 'lockstep_capture_upd', event: 'UPDATE', oldTable: 'old_rows', newTable: 'new_rows' },
  { name: 'lockstep_capture_del', event: 'DELETE', oldTable: 'old_rows', newTable: null },
];

/** The row-level trigger of tables statement triggers cannot capture (see `captureLevel`). */
export const ROW_TRIGGER_NAME = 'lockstep_capture_row';

/** Every trigger name the sync's capture has used, current and earlier. */
export const ALL_TRIGGER_NAMES: readonly string[] = [
  ...STATEMENT_TRIGGERS.map((trigger) => trigger.name),
  ROW_TRIGGER_NAME,
  LEGACY_TRIGGER_NAME,
];

/** Serialises concurrent setups (CREATE SCHEMA IF NOT EXISTS can race). */
const SETUP_LOCK_KEY = 7_215_530_101;

/** The pool's session settings (config.ts) as the function's SET clauses: `SET TimeZone = 'UTC' SET ...`. */
const SESSION_SETTINGS = SESSION_SQL.split(';')
  .map((statement) => statement.trim())
  .filter((statement) => statement !== '')
  .join(' ');

const ORIGIN = `nullif(current_setting('${ORIGIN_SETTING}', true), '')`;
const NOTIFY = `PERFORM pg_notify(
      '${NOTIFY_CHANNEL}', json_build_object('schema', TG_TABLE_SCHEMA, 'table', TG_TABLE_NAME)::text)`;
/**
 * PL/pgSQL shared by the capture functions (this file's and export-capture.ts's): the key column named by
 * the trigger's argument (an attribute number, so a rename keeps working) into `key_column`; nothing is done
 * when the column is gone. Its text is part of export-capture.ts's function body, which is compared with the
 * installed one: it must not change, not even in whitespace.
 */
export const KEY_COLUMN_FROM_ARGUMENT = `  SELECT a.attname INTO key_column FROM pg_attribute a
  WHERE a.attrelid = TG_RELID AND a.attnum = TG_ARGV[0]::int2 AND NOT a.attisdropped;
  IF key_column IS NULL THEN
    RETURN NULL;
  END IF;`;

/** The dynamic INSERT of log rows; the keys' query (with `%1$I` for the key column) is appended. */
const LOG_INSERT = `'INSERT INTO ${CHANGE_LOG} (table_schema, table_name, op, pk, origin) SELECT $1, $2, $3, k, $4 FROM ('`;

/**
 * The function body. Keys are the output text of the key column's values (`format('%s', ...)`), non-null.
 * Dynamic SQL sees the transition tables (PL/pgSQL registers them for every SPI query of the call).
 */
export const CAPTURE_FUNCTION_BODY = `
-- lockstep sync capture v3; runs with: ${SESSION_SETTINGS}
DECLARE
  key_column name;
  origin text := ${ORIGIN};
  logged bigint := 0;
  counted bigint;
  readers bigint;
  others bigint;
  old_key text;
  new_key text;
BEGIN
  -- A log dropped by hand must not make the application's writes fail: nothing is logged.
  IF to_regclass('${CHANGE_LOG}') IS NULL THEN
    RETURN NULL;
  END IF;
  -- A Lockstep connection's own write is logged only for the table's other readers (another sync that
  -- shares it); a table with no reader registered (set up by an earlier version, or by hand) logs everything.
  IF origin IS NOT NULL AND to_regclass('${CAPTURE_READERS}') IS NOT NULL THEN
    SELECT count(*), count(*) FILTER (WHERE r.reader <> origin) INTO readers, others
    FROM ${CAPTURE_READERS} r WHERE r.table_schema = TG_TABLE_SCHEMA AND r.table_name = TG_TABLE_NAME;
    IF readers > 0 AND others = 0 THEN
      RETURN NULL;
    END IF;
  END IF;
${KEY_COLUMN_FROM_ARGUMENT}
  IF TG_LEVEL = 'ROW' THEN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      EXECUTE format('SELECT format(''%%s'', ($1).%I)', key_column) INTO old_key USING OLD;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      EXECUTE format('SELECT format(''%%s'', ($1).%I)', key_column) INTO new_key USING NEW;
    END IF;
    IF old_key IS NOT NULL AND (TG_OP = 'DELETE' OR old_key IS DISTINCT FROM new_key) THEN
      INSERT INTO ${CHANGE_LOG} (table_schema, table_name, op, pk, origin)
      VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, 'delete', old_key, origin);
    END IF;
    IF new_key IS NOT NULL THEN
      INSERT INTO ${CHANGE_LOG} (table_schema, table_name, op, pk, origin)
      VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, 'upsert', new_key, origin);
    END IF;
    ${NOTIFY};
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    -- Old keys no longer present (compared as text: numeric 1.0 and 1.00 are two remote ids) are deletes.
    EXECUTE ${LOG_INSERT}
      || format('SELECT o.k FROM (SELECT format(''%%s'', r.%1$I) AS k
          FROM old_rows r WHERE r.%1$I IS NOT NULL) o
        WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE format(''%%s'', n.%1$I) = o.k)', key_column)
      || ') s(k)'
      USING TG_TABLE_SCHEMA, TG_TABLE_NAME, 'delete', origin;
    GET DIAGNOSTICS logged = ROW_COUNT;
  END IF;
  IF TG_OP = 'DELETE' THEN
    EXECUTE ${LOG_INSERT}
      || format('SELECT format(''%%s'', r.%1$I) FROM old_rows r WHERE r.%1$I IS NOT NULL', key_column)
      || ') s(k)'
      USING TG_TABLE_SCHEMA, TG_TABLE_NAME, 'delete', origin;
  ELSE
    EXECUTE ${LOG_INSERT}
      || format('SELECT format(''%%s'', r.%1$I) FROM new_rows r WHERE r.%1$I IS NOT NULL', key_column)
      || ') s(k)'
      USING TG_TABLE_SCHEMA, TG_TABLE_NAME, 'upsert', origin;
  END IF;
  GET DIAGNOSTICS counted = ROW_COUNT;
  IF logged + counted > 0 THEN
    ${NOTIFY};
  END IF;
  RETURN NULL;
END
`;

/** Statements that create the lockstep schema, the change log and the trigger function (idempotent). */
export const INFRASTRUCTURE_SQL = [
  `SELECT pg_advisory_xact_lock(${SETUP_LOCK_KEY})`,
  `CREATE SCHEMA IF NOT EXISTS ${LOCKSTEP_SCHEMA}`,
  `CREATE TABLE IF NOT EXISTS ${CHANGE_LOG} (
     id bigserial PRIMARY KEY,
     xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
     table_schema text NOT NULL,
     table_name text NOT NULL,
     op text NOT NULL CHECK (op IN ('upsert', 'delete')),
     pk text NOT NULL,
     origin text,
     committed_at timestamptz NOT NULL DEFAULT clock_timestamp()
   )`,
  `CREATE INDEX IF NOT EXISTS change_log_table_xid ON ${CHANGE_LOG} (table_schema, table_name, xid, id)`,
  `CREATE INDEX IF NOT EXISTS change_log_committed_at ON ${CHANGE_LOG} (committed_at)`,
  // Created once; tables that already had capture triggers then get the unknown reader, so they keep logging
  // every write (their syncs were prepared before readers were registered).
  `DO $$
BEGIN
  IF to_regclass('${CAPTURE_READERS}') IS NULL THEN
    CREATE TABLE ${CAPTURE_READERS} (
      table_schema text NOT NULL,
      table_name text NOT NULL,
      reader text NOT NULL,
      registered_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (table_schema, table_name, reader)
    );
    INSERT INTO ${CAPTURE_READERS} (table_schema, table_name, reader)
    SELECT DISTINCT n.nspname, c.relname, '${UNKNOWN_READERS}' FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE t.tgname IN (${ALL_TRIGGER_NAMES.map((name) => `'${name}'`).join(', ')});
  END IF;
END
$$`,
  // SECURITY DEFINER: another application's role writing the table needs no rights on the change log.
  `CREATE OR REPLACE FUNCTION ${CAPTURE_FUNCTION}() RETURNS trigger
   LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp ${SESSION_SETTINGS}
   AS $fn$${CAPTURE_FUNCTION_BODY}$fn$`,
];

/** How long change-log entries are kept (a reader further behind relies on the engine's full scan). */
export const DEFAULT_RETENTION_DAYS = 7;

/**
 * What `installTriggerSql` needs to know of a table ($1 schema, $2 table, $3 key column): its relkind,
 * whether it is a partition or an inheritance child, and the key's attribute number. No row when the table
 * is gone.
 */
export const CAPTURE_TARGET_SQL = `
SELECT c.relkind,
       (c.relispartition OR EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)) AS child,
       (SELECT a.attnum FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped) AS attnum
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2`;

/**
 * Statement triggers for a partitioned table and for a plain table outside an inheritance tree or at its top
 * (a parent's statement triggers see the rows its statements change in children); a row trigger for a
 * partition, an inheritance child or a foreign table (see the file comment).
 */
export function captureLevel(relkind: string, child: boolean): 'statement' | 'row' {
  return relkind === 'p' || (relkind === 'r' && !child) ? 'statement' : 'row';
}

/**
 * Drops every capture trigger (the earlier row trigger included, and its function once no trigger uses it)
 * and creates those of `level`, passing the key's attribute number. Triggers keep the default enablement
 * (fire unless session_replication_role is replica).
 */
export function installTriggerSql(
  schema: string,
  table: string,
  keyAttnum: number,
  level: 'statement' | 'row',
): string[] {
  const target = qualified(schema, table);
  const statements = dropTriggerSql(schema, table);
  const argument = `'${Math.trunc(keyAttnum)}'`;
  if (level === 'row') {
    statements.push(
      `CREATE TRIGGER ${ident(ROW_TRIGGER_NAME)} AFTER INSERT OR UPDATE OR DELETE ON ${target}
       FOR EACH ROW EXECUTE FUNCTION ${CAPTURE_FUNCTION}(${argument})`,
    );
    return statements;
  }
  for (const trigger of STATEMENT_TRIGGERS) {
    const referencing = [
      trigger.oldTable && `OLD TABLE AS ${trigger.oldTable}`,
      trigger.newTable && `NEW TABLE AS ${trigger.newTable}`,
    ]
      .filter(Boolean)
      .join(' ');
    statements.push(
      `CREATE TRIGGER ${ident(trigger.name)} AFTER ${trigger.event} ON ${target} REFERENCING ${referencing}
       FOR EACH STATEMENT EXECUTE FUNCTION ${CAPTURE_FUNCTION}(${argument})`,
    );
  }
  return statements;
}

/** Drops every capture trigger of the table, current and earlier, and the earlier function once unused. */
export function dropTriggerSql(schema: string, table: string): string[] {
  return [
    ...ALL_TRIGGER_NAMES.map(
      (name) => `DROP TRIGGER IF EXISTS ${ident(name)} ON ${qualified(schema, table)}`,
    ),
    DROP_LEGACY_FUNCTION_SQL,
  ];
}

/** The function of the earlier row trigger (`lockstep.capture_change()`; trigger arguments are not in it). */
export const LEGACY_FUNCTION = `${LOCKSTEP_SCHEMA}.capture_change()`;

/**
 * Drops the earlier versions' function once no trigger anywhere uses it. Without the rights to drop it, or
 * when a trigger was created on it meanwhile, it stays, and the table's setup goes on (the exception block).
 */
export const DROP_LEGACY_FUNCTION_SQL = `DO $$
BEGIN
  IF to_regprocedure('${LEGACY_FUNCTION}') IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = to_regprocedure('${LEGACY_FUNCTION}')) THEN
    DROP FUNCTION ${LEGACY_FUNCTION};
  END IF;
EXCEPTION WHEN insufficient_privilege OR dependent_objects_still_exist THEN
  NULL;
END
$$`;

/**
 * The comment of a `lockstep_id` column table setup added to a table, so that `unprepareTable` drops only
 * such a column: not one the application made, nor the key of a table Lockstep created, nor one added
 * before the mark existed (those stay; `ALTER TABLE ... DROP COLUMN lockstep_id` removes one by hand).
 */
export const SERVICE_ID_COMMENT = 'Added by Lockstep (service id); dropped when no sync reads this table';

export function addServiceIdSql(schema: string, table: string, column: string, hasColumn: boolean): string[] {
  const target = qualified(schema, table);
  const statements = hasColumn
    ? []
    : [
        `ALTER TABLE ${target} ADD COLUMN ${ident(column)} uuid NOT NULL DEFAULT gen_random_uuid()`,
        `COMMENT ON COLUMN ${target}.${ident(column)} IS '${SERVICE_ID_COMMENT}'`,
      ];
  const constraint = ident(`${table.slice(0, 40)}_${column}_key`);
  statements.push(`ALTER TABLE ${target} ADD CONSTRAINT ${constraint} UNIQUE (${ident(column)})`);
  return statements;
}

/**
 * Readers. Each connection that sets up change capture on a table registers its write origin as a reader of
 * it (`REGISTER_READER_SQL`, in the transaction that creates the triggers, so it waits for the table's open
 * writes: CREATE TRIGGER takes a lock no writer can hold at the same time). The trigger logs a Lockstep
 * connection's own writes only when another reader is registered (a second sync sharing the table, or the
 * unknown reader of a table set up by an earlier version): nobody else asks for them, and the sync that wrote
 * them leaves them out anyway. A reader registered after a write that was not logged for it begins its
 * reading after that write committed, so it reads the row itself. `unprepareTable` removes its reader and
 * removes the triggers and the table's log only when no other reader is left (the unknown reader does not
 * keep them: earlier versions removed them too).
 */
export const REGISTER_READER_SQL = `
INSERT INTO ${CAPTURE_READERS} (table_schema, table_name, reader)
VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING`;

/** Removes the reader ($3) of a table; returns how many known readers are left (not counting the unknown). */
export const UNREGISTER_READER_SQL = `
WITH gone AS (
  DELETE FROM ${CAPTURE_READERS} WHERE table_schema = $1 AND table_name = $2 AND reader = $3
)
SELECT count(*)::int AS remaining
  FROM ${CAPTURE_READERS}
 WHERE table_schema = $1 AND table_name = $2 AND reader NOT IN ($3, '${UNKNOWN_READERS}')`;

/** The comment of the table's column $3 (null when none, or no such column): see SERVICE_ID_COMMENT. */
export const COLUMN_COMMENT_SQL = `
SELECT col_description(c.oid, a.attnum) AS comment
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = $3 AND NOT a.attisdropped`;

/**
 * Once no table of the database is read (no trigger uses either capture function, no reader is registered):
 * drops the change log, the readers table and the capture function, then the \`lockstep\` schema if nothing
 * else lives there (a live export's capture keeps it). Without the rights to drop them they stay (setup
 * elsewhere by another role); each part is a block of its own, so a schema that stays does not bring the
 * rest back.
 */
export const DROP_UNUSED_CAPTURE_SQL = `DO $$
BEGIN
  IF to_regprocedure('${CAPTURE_FUNCTION}()') IS NOT NULL
     AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = to_regprocedure('${CAPTURE_FUNCTION}()')) THEN
    RETURN;
  END IF;
  IF to_regprocedure('${LEGACY_FUNCTION}') IS NOT NULL
     AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = to_regprocedure('${LEGACY_FUNCTION}')) THEN
    RETURN;
  END IF;
  IF to_regclass('${CAPTURE_READERS}') IS NOT NULL THEN
    IF EXISTS (SELECT 1 FROM ${CAPTURE_READERS}) THEN
      RETURN;
    END IF;
  END IF;
  BEGIN
    DROP TABLE IF EXISTS ${CAPTURE_READERS};
    DROP TABLE IF EXISTS ${CHANGE_LOG};
    DROP FUNCTION IF EXISTS ${CAPTURE_FUNCTION}();
  EXCEPTION WHEN insufficient_privilege THEN
    RETURN;
  END;
  BEGIN
    DROP SCHEMA IF EXISTS ${LOCKSTEP_SCHEMA};
  EXCEPTION WHEN insufficient_privilege OR dependent_objects_still_exist THEN
    NULL;
  END;
END
$$`;

export const FORGET_TABLE_READERS_SQL = `
DELETE FROM ${CAPTURE_READERS} WHERE table_schema = $1 AND table_name = $2`;
