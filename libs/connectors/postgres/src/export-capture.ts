/**
 * Change capture for live export sources (`LiveExportSourceCapture`, see
 * libs/connectors/core/src/live-export.ts): the export's own triggers and log, separate from the sync's
 * (change-capture.ts), so installing or removing one never touches the other.
 *
 * Four STATEMENT-level AFTER triggers per table, all running `lockstep.capture_export()` (one trigger per
 * event because PostgreSQL refuses transition tables on a trigger with several events):
 * - `lockstep_export_ins` (NEW TABLE new_rows), `lockstep_export_upd` (OLD TABLE old_rows, NEW TABLE
 *   new_rows), `lockstep_export_del` (OLD TABLE old_rows) log the keys of the statement's rows into
 *   `lockstep.export_log` with ONE `INSERT ... SELECT` per statement, so a bulk write costs one set-based
 *   insert instead of a function call per row. An update logs the distinct keys of both sides, so a key
 *   change also logs the old key (its reader finds it gone: a delete). An empty transition table logs
 *   nothing.
 * - `lockstep_export_trunc` (AFTER TRUNCATE): TRUNCATE fires no row or insert/delete statement trigger and
 *   its rows are gone when the trigger runs, so it records a reset in `lockstep.export_resets` instead; the
 *   newest reset id is part of the token, so the token changes and the reader compares everything.
 *
 * The key column travels as a trigger argument, by attribute NUMBER (a rename of the column keeps the capture
 * working); the function finds its name in pg_attribute and builds the statement with `format('%I')` and
 * EXECUTE (dynamic SQL sees the transition tables: PL/pgSQL registers them for every SPI query of the call).
 * A key is logged as its type's OUTPUT text (`format('%s', key)`), which is what the pool's raw-text reads
 * return: `key::text` differs for `char(n)` (trailing blanks trimmed), `boolean` (`true`, not `t`) and `inet`
 * (`/32` added). The function runs with the pool's session settings (TimeZone, DateStyle, IntervalStyle,
 * extra_float_digits) as `SET` clauses, so a date, time or float key is logged exactly as Lockstep reads it
 * whatever the writer's session says. Keys whose text depends on other settings (`bytea`, `money`, `reg*`) or
 * that are arrays or composites are not captured.
 *
 * Only plain tables outside inheritance trees are captured: statement triggers of a partitioned or parent
 * table do not fire for writes made directly to a partition or child, and those of a partition or child do
 * not fire for writes made through its parent. Views and foreign tables are not captured either.
 *
 * Checkpoints are the snapshots of change-capture.ts (same format, same technique: a read returns the log
 * rows whose transaction is visible in a new snapshot but was not in the previous one, paged in (xid, id)
 * order).
 */
import { createHash } from 'node:crypto';
import type { TableMeta } from './catalog';
import { DEFAULT_RETENTION_DAYS, KEY_COLUMN_FROM_ARGUMENT, LOCKSTEP_SCHEMA } from './change-capture';
import { SESSION_SQL } from './config';
import { ident, qualified } from './sql';

export const EXPORT_LOG = `${LOCKSTEP_SCHEMA}.export_log`;
export const EXPORT_RESETS = `${LOCKSTEP_SCHEMA}.export_resets`;
export const EXPORT_FUNCTION = `${LOCKSTEP_SCHEMA}.capture_export`;
/** Log entries older than this are purged by readers (the contract's retention). */
export const EXPORT_RETENTION_DAYS = DEFAULT_RETENTION_DAYS;
/** Entries one purge deletes at most (a bounded batch, so it never holds many row locks). */
export const EXPORT_PURGE_BATCH = 10_000;
/** How often one PostgresLiveExport purges. */
export const EXPORT_PURGE_EVERY_MS = 10 * 60_000;
/**
 * Creating or dropping a trigger takes a SHARE ROW EXCLUSIVE lock, and while it waits for a long transaction
 * every later writer of the table queues behind it: give up (transient) rather than stall the application.
 */
export const CAPTURE_LOCK_TIMEOUT = '10s';

export interface CaptureTrigger {
  name: string;
  event: 'INSERT' | 'UPDATE' | 'DELETE' | 'TRUNCATE';
  /** pg_trigger.tgtype of an AFTER ... FOR EACH STATEMENT trigger on this event. */
  tgtype: number;
  oldTable: string | null;
  newTable: string | null;
  /** Whether the key's attribute number is passed as the argument. */
  keyed: boolean;
}

export const CAPTURE_TRIGGERS: readonly CaptureTrigger[] = [
  {
    name: 'lockstep_export_ins',
    event: 'INSERT',
    tgtype: 4,
    oldTable: null,
    newTable: 'new_rows',
    keyed: true,
  },
  {
    name: 'lockstep_export_upd',
    event: 'UPDATE',
    tgtype: 16,
    oldTable: 'old_rows',
    newTable: 'new_rows',
    keyed: true,
  },
  {
    name: 'lockstep_export_del',
    event: 'DELETE',
    tgtype: 8,
    oldTable: 'old_rows',
    newTable: null,
    keyed: true,
  },
  {
    name: 'lockstep_export_trunc',
    event: 'TRUNCATE',
    tgtype: 32,
    oldTable: null,
    newTable: null,
    keyed: false,
  },
];

/** The pool's session settings (config.ts) as the function's SET clauses: `SET TimeZone = 'UTC' SET ...`. */
const SESSION_SETTINGS = SESSION_SQL.split(';')
  .map((statement) => statement.trim())
  .filter((statement) => statement !== '')
  .join(' ');

/**
 * The function body. It is compared with pg_proc.prosrc to decide whether the function must be (re)created,
 * so the settings line makes a change of SESSION_SQL replace the function too, and its text (whitespace
 * included) must not change otherwise: every installed capture would be replaced.
 */
export const CAPTURE_FUNCTION_BODY = `
-- lockstep export capture v1; runs with: ${SESSION_SETTINGS}
DECLARE
  key_column name;
  keys text;
BEGIN
  -- A log dropped by hand must not make the application's writes fail: nothing is logged, and the capture's
  -- token is null until the capture is installed again (the reader then compares everything).
  IF TG_OP = 'TRUNCATE' THEN
    IF to_regclass('${EXPORT_RESETS}') IS NOT NULL THEN
      INSERT INTO ${EXPORT_RESETS} (table_schema, table_name) VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME);
    END IF;
    RETURN NULL;
  END IF;
  IF to_regclass('${EXPORT_LOG}') IS NULL THEN
    RETURN NULL;
  END IF;
${KEY_COLUMN_FROM_ARGUMENT}
  IF TG_OP = 'INSERT' THEN
    keys := format('SELECT format(''%%s'', r.%1$I) FROM new_rows r WHERE r.%1$I IS NOT NULL', key_column);
  ELSIF TG_OP = 'DELETE' THEN
    keys := format('SELECT format(''%%s'', r.%1$I) FROM old_rows r WHERE r.%1$I IS NOT NULL', key_column);
  ELSE
    -- Compared as text: two equal keys with different text (numeric 1.0 and 1.00) are two remote ids.
    keys := format('SELECT format(''%%s'', r.%1$I) FROM new_rows r WHERE r.%1$I IS NOT NULL
                    UNION SELECT format(''%%s'', r.%1$I) FROM old_rows r WHERE r.%1$I IS NOT NULL', key_column);
  END IF;
  EXECUTE 'INSERT INTO ${EXPORT_LOG} (table_schema, table_name, pk) SELECT $1, $2, k FROM (' || keys || ') s(k)'
    USING TG_TABLE_SCHEMA, TG_TABLE_NAME;
  RETURN NULL;
END
`;

/** What `startSourceCapture` creates when it is missing, keyed by what the presence check reports. */
export const CAPTURE_INFRASTRUCTURE = {
  schema: `CREATE SCHEMA IF NOT EXISTS ${LOCKSTEP_SCHEMA}`,
  log: [
    `CREATE TABLE IF NOT EXISTS ${EXPORT_LOG} (
       id bigserial PRIMARY KEY,
       xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
       table_schema text NOT NULL,
       table_name text NOT NULL,
       pk text NOT NULL,
       logged_at timestamptz NOT NULL DEFAULT clock_timestamp()
     )`,
    `CREATE INDEX IF NOT EXISTS export_log_table_xid ON ${EXPORT_LOG} (table_schema, table_name, xid, id)`,
    `CREATE INDEX IF NOT EXISTS export_log_logged_at ON ${EXPORT_LOG} (logged_at)`,
  ],
  resets: [
    `CREATE TABLE IF NOT EXISTS ${EXPORT_RESETS} (
       id bigserial PRIMARY KEY,
       table_schema text NOT NULL,
       table_name text NOT NULL,
       reset_at timestamptz NOT NULL DEFAULT clock_timestamp()
     )`,
    `CREATE INDEX IF NOT EXISTS export_resets_table ON ${EXPORT_RESETS} (table_schema, table_name, id)`,
  ],
  // SECURITY DEFINER: another application's role writing the table needs no rights on the log.
  function: `CREATE OR REPLACE FUNCTION ${EXPORT_FUNCTION}() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp ${SESSION_SETTINGS}
    AS $fn$${CAPTURE_FUNCTION_BODY}$fn$`,
};

/**
 * Which parts exist. Each CREATE runs only when its object is missing: CREATE SCHEMA / TABLE IF NOT EXISTS
 * still require the CREATE privilege, and CREATE OR REPLACE FUNCTION ownership, so a role that did not
 * install them can still capture its own tables once they exist.
 */
export const INFRASTRUCTURE_STATE_SQL = `
SELECT to_regnamespace('${LOCKSTEP_SCHEMA}') IS NOT NULL AS schema,
       to_regclass('${EXPORT_LOG}') IS NOT NULL AS log,
       to_regclass('${EXPORT_RESETS}') IS NOT NULL AS resets,
       (SELECT p.prosrc FROM pg_proc p WHERE p.oid = to_regprocedure('${EXPORT_FUNCTION}()')) AS source`;

export function infrastructureSql(present: {
  schema: boolean;
  log: boolean;
  resets: boolean;
  source: string | null;
}): string[] {
  const statements: string[] = [];
  if (!present.schema) statements.push(CAPTURE_INFRASTRUCTURE.schema);
  if (!present.log) statements.push(...CAPTURE_INFRASTRUCTURE.log);
  if (!present.resets) statements.push(...CAPTURE_INFRASTRUCTURE.resets);
  if (present.source !== CAPTURE_FUNCTION_BODY) statements.push(CAPTURE_INFRASTRUCTURE.function);
  return statements;
}

// ---------------------------------------------------------------------------------------------------------
// Which tables, and the state of a table's capture

/** Base types whose output text depends on a setting the function does not fix. */
const UNSTABLE_KEY_TYPES = new Set(['bytea', 'money']);

/**
 * The column to capture: the key column the source reads use (`TableMeta.keyColumn`: the single-column
 * primary key, else the unique `lockstep_id`), of a plain table; null when the table cannot be captured.
 */
export function captureKey(meta: TableMeta): string | null {
  if (meta.relkind !== 'r' || meta.isView) return null;
  const key = meta.keyColumn;
  if (key === null) return null;
  const isPrimary = meta.primaryKey.length === 1 && meta.primaryKey[0] === key;
  if (!isPrimary && meta.serviceIdColumn !== key) return null;
  const column = meta.columnByName.get(key);
  if (!column) return null;
  if (UNSTABLE_KEY_TYPES.has(column.baseName) || column.baseName.startsWith('reg')) return null;
  if (column.baseCategory === 'A' || column.baseTyptype === 'c') return null;
  return key;
}

/**
 * The table, its place in an inheritance tree, the key's attribute number, the log, resets table and
 * function, the export triggers and the column list ($1 schema, $2 table, $3 key column). No row when the
 * table is gone.
 */
export const CAPTURE_STATE_SQL = `
WITH rel AS (
  SELECT c.oid, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = $1 AND c.relname = $2
)
SELECT json_build_object(
  'table', rel.oid::text,
  'relkind', rel.relkind,
  'inherits', EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = rel.oid OR i.inhparent = rel.oid),
  'keyAttnum', (SELECT a.attnum FROM pg_attribute a
                 WHERE a.attrelid = rel.oid AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped),
  'log', to_regclass('${EXPORT_LOG}')::oid::text,
  'resets', to_regclass('${EXPORT_RESETS}')::oid::text,
  'function', to_regprocedure('${EXPORT_FUNCTION}()')::oid::text,
  'triggers', (SELECT coalesce(json_agg(json_build_object(
      'name', t.tgname, 'oid', t.oid::text, 'function', t.tgfoid::text, 'type', t.tgtype,
      'enabled', t.tgenabled, 'nargs', t.tgnargs, 'args', encode(t.tgargs, 'hex'), 'old', t.tgoldtable,
      'new', t.tgnewtable, 'columns', t.tgattr::text, 'when', t.tgqual IS NOT NULL,
      'internal', t.tgisinternal OR t.tgconstraint <> 0)), '[]')
    FROM pg_trigger t WHERE t.tgrelid = rel.oid AND t.tgname LIKE 'lockstep\\_export\\_%'),
  'columns', (SELECT json_agg(json_build_array(a.attnum, a.attname, a.atttypid::text, a.atttypmod)
                              ORDER BY a.attnum)
    FROM pg_attribute a WHERE a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped)
)::text AS doc
FROM rel`;

/** The newest reset (TRUNCATE) of a table, 0 when none ($1 schema, $2 table). */
export const LAST_RESET_SQL = `
SELECT coalesce(max(id), 0)::text AS id
  FROM ${EXPORT_RESETS}
 WHERE table_schema = $1 AND table_name = $2`;

export interface TriggerRow {
  name: string;
  oid: string;
  function: string;
  type: number;
  enabled: string;
  nargs: number;
  args: string;
  old: string | null;
  new: string | null;
  columns: string;
  when: boolean;
  internal: boolean;
}

export interface CaptureStateDoc {
  table: string;
  relkind: string;
  inherits: boolean;
  keyAttnum: number | null;
  log: string | null;
  resets: string | null;
  function: string | null;
  triggers: TriggerRow[];
  columns: [number, string, string, number][] | null;
}

export interface CaptureState {
  /** The table can be captured (a plain table outside inheritance trees, its key found). */
  capturable: boolean;
  /** Export triggers that are missing or not exactly as installed (wrong definition, disabled...). */
  repair: CaptureTrigger[];
  /** Export triggers present but not as installed (dropped before they are created again). */
  replace: string[];
  /** Complete: the log, resets table and function exist and every trigger is as installed. */
  complete: boolean;
}

/** pg_trigger.tgargs of the arguments `args` (each NUL-terminated), in hex as the state query returns it. */
function argsHex(args: string[]): string {
  return Buffer.from(args.map((arg) => `${arg}\0`).join(''), 'utf8').toString('hex');
}

export function triggerIsInstalled(
  expected: CaptureTrigger,
  row: TriggerRow,
  functionOid: string | null,
  keyAttnum: number | null,
): boolean {
  const args = expected.keyed ? [String(keyAttnum)] : [];
  return (
    functionOid !== null &&
    row.function === functionOid &&
    row.type === expected.tgtype &&
    // 'A': ENABLE ALWAYS, so writes under session_replication_role = replica (logical replication apply,
    // bulk loads skipping foreign keys) are logged too; a disabled trigger ('D') means changes were missed.
    row.enabled === 'A' &&
    row.nargs === args.length &&
    row.args === argsHex(args) &&
    row.old === expected.oldTable &&
    row.new === expected.newTable &&
    row.columns === '' &&
    !row.when &&
    !row.internal
  );
}

export function evaluateCapture(doc: CaptureStateDoc): CaptureState {
  const capturable = doc.relkind === 'r' && !doc.inherits && doc.keyAttnum !== null;
  const byName = new Map(doc.triggers.map((row) => [row.name, row]));
  const repair: CaptureTrigger[] = [];
  const replace: string[] = [];
  for (const expected of CAPTURE_TRIGGERS) {
    const row = byName.get(expected.name);
    if (row && triggerIsInstalled(expected, row, doc.function, doc.keyAttnum)) continue;
    repair.push(expected);
    if (row) replace.push(expected.name);
  }
  const complete = capturable && repair.length === 0 && doc.log !== null && doc.resets !== null;
  return { capturable, repair, replace, complete };
}

/**
 * The token of a complete capture: a digest of the table's, the log's and the resets table's oids, the four
 * triggers' oids (a capture dropped and installed again has new ones), the newest reset (a TRUNCATE) and the
 * table's columns (an ALTER TABLE that rewrites values, e.g. a type change, fires no trigger either).
 */
export function captureToken(doc: CaptureStateDoc, lastReset: string): string {
  const byName = new Map(doc.triggers.map((row) => [row.name, row.oid]));
  const parts = [
    doc.table,
    doc.log,
    doc.resets,
    ...CAPTURE_TRIGGERS.map((trigger) => byName.get(trigger.name) ?? ''),
    lastReset,
    JSON.stringify(doc.columns ?? []),
  ];
  return `pgx1-${createHash('sha1').update(parts.join('|')).digest('hex').slice(0, 32)}`;
}

/** DROP (when present but wrong) then CREATE and ENABLE ALWAYS of each trigger to repair. */
const CREATE_EXPORT_TRIGGER_SQL = (target: string, trigger: CaptureTrigger, keyAttnum: number) => {
  const referencing = [
    trigger.oldTable && `OLD TABLE AS ${trigger.oldTable}`,
    trigger.newTable && `NEW TABLE AS ${trigger.newTable}`,
  ]
    .filter(Boolean)
    .join(' ');
  const transitions = referencing ? ` REFERENCING ${referencing}` : '';
  const argument = trigger.keyed ? `'${keyAttnum}'` : '';
  return `
CREATE TRIGGER ${ident(trigger.name)} AFTER ${trigger.event} ON ${target}${transitions}
FOR EACH STATEMENT EXECUTE FUNCTION ${EXPORT_FUNCTION}(${argument})`;
};

export function repairTriggerSql(
  schema: string,
  table: string,
  state: CaptureState,
  keyAttnum: number,
): string[] {
  const target = qualified(schema, table);
  const statements: string[] = [];
  for (const trigger of state.repair) {
    if (state.replace.includes(trigger.name))
      statements.push(`DROP TRIGGER IF EXISTS ${ident(trigger.name)} ON ${target}`);
    statements.push(
      CREATE_EXPORT_TRIGGER_SQL(target, trigger, keyAttnum),
      `ALTER TABLE ${target} ENABLE ALWAYS TRIGGER ${ident(trigger.name)}`,
    );
  }
  return statements;
}

/** Names of the export triggers a table has ($1 schema, $2 table); no row when the table is gone. */
export const PRESENT_TRIGGERS_SQL = `
SELECT t.tgname AS name
  FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2 AND t.tgname = ANY ($3::text[])`;
