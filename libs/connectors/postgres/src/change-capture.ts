/**
 * Change capture: row triggers write every insert, update and delete of a prepared table into
 * `lockstep.change_log`, tagged with the writing transaction's id (xid8) and with `origin = 'lockstep'`
 * when Lockstep's own connection wrote it (`set_config('lockstep.origin', 'lockstep', true)` in every write
 * transaction). Each change also sends `pg_notify('lockstep_changes', ...)` to wake a watcher.
 *
 * Checkpoints are snapshots, not ids (the PgQ design). A bigserial id is drawn when a row is inserted, not
 * when its transaction commits, so ids commit out of order: a reader that remembers "the last id I saw"
 * loses the row a slow transaction committed later with a smaller id. Instead a checkpoint holds the
 * snapshot (`pg_current_snapshot()`) of the previous read, and a read returns the log rows whose
 * transaction is visible in a new snapshot but was not in the previous one. Every transaction becomes
 * visible in exactly one such window, whatever order they commit in, so nothing is lost or repeated. A
 * window larger than `limit` is read in (xid, id) order with the position kept in the checkpoint.
 */
import { ConnectorError } from '@lockstep/connectors-core';
import { ident, qualified } from './sql';

export const LOCKSTEP_SCHEMA = 'lockstep';
export const CHANGE_LOG = `${LOCKSTEP_SCHEMA}.change_log`;
export const NOTIFY_CHANNEL = 'lockstep_changes';
export const TRIGGER_NAME = 'lockstep_capture';
export const ORIGIN_SETTING = 'lockstep.origin';
export const OWN_ORIGIN = 'lockstep';

/** Serialises concurrent setups (CREATE SCHEMA IF NOT EXISTS can race). */
const SETUP_LOCK_KEY = 7_215_530_101;

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
  // SECURITY DEFINER: another application's role writing the table needs no rights on the change log.
  `CREATE OR REPLACE FUNCTION ${LOCKSTEP_SCHEMA}.capture_change() RETURNS trigger
   LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
   DECLARE
     key_column text := TG_ARGV[0];
     origin text := nullif(current_setting('${ORIGIN_SETTING}', true), '');
     old_key text;
     new_key text;
   BEGIN
     IF TG_OP IN ('UPDATE', 'DELETE') THEN
       EXECUTE format('SELECT ($1).%I::text', key_column) INTO old_key USING OLD;
     END IF;
     IF TG_OP IN ('INSERT', 'UPDATE') THEN
       EXECUTE format('SELECT ($1).%I::text', key_column) INTO new_key USING NEW;
     END IF;
     IF old_key IS NOT NULL AND (TG_OP = 'DELETE' OR old_key IS DISTINCT FROM new_key) THEN
       INSERT INTO ${CHANGE_LOG} (table_schema, table_name, op, pk, origin)
       VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, 'delete', old_key, origin);
     END IF;
     IF new_key IS NOT NULL THEN
       INSERT INTO ${CHANGE_LOG} (table_schema, table_name, op, pk, origin)
       VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, 'upsert', new_key, origin);
     END IF;
     PERFORM pg_notify('${NOTIFY_CHANNEL}', json_build_object('schema', TG_TABLE_SCHEMA, 'table', TG_TABLE_NAME)::text);
     RETURN NULL;
   END
   $fn$`,
];

/** How long change-log entries are kept (a reader further behind relies on the engine's full scan). */
export const DEFAULT_RETENTION_DAYS = 7;

/**
 * Deletes change-log entries older than `days` (all tables), at most `batch` of the oldest per call, so the
 * purge never holds many row locks; the triggers of open transactions only insert and are not blocked.
 */
export const PURGE_SQL = `DELETE FROM ${CHANGE_LOG} WHERE id IN (
  SELECT id FROM ${CHANGE_LOG} WHERE committed_at < now() - make_interval(days => $1::int) ORDER BY committed_at LIMIT $2)`;

export function installTriggerSql(schema: string, table: string, keyColumn: string): string[] {
  return [
    `DROP TRIGGER IF EXISTS ${TRIGGER_NAME} ON ${qualified(schema, table)}`,
    `CREATE TRIGGER ${TRIGGER_NAME} AFTER INSERT OR UPDATE OR DELETE ON ${qualified(schema, table)}
     FOR EACH ROW EXECUTE FUNCTION ${LOCKSTEP_SCHEMA}.capture_change(${quoteLiteral(keyColumn)})`,
  ];
}

export function dropTriggerSql(schema: string, table: string): string {
  return `DROP TRIGGER IF EXISTS ${TRIGGER_NAME} ON ${qualified(schema, table)}`;
}

/** Trigger arguments are string literals in the DDL (they cannot be parameters). */
function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

export function addServiceIdSql(schema: string, table: string, column: string, hasColumn: boolean): string[] {
  const target = qualified(schema, table);
  const statements = hasColumn ? [] : [`ALTER TABLE ${target} ADD COLUMN ${ident(column)} uuid NOT NULL DEFAULT gen_random_uuid()`];
  const constraint = ident(`${table.slice(0, 40)}_${column}_key`);
  statements.push(`ALTER TABLE ${target} ADD CONSTRAINT ${constraint} UNIQUE (${ident(column)})`);
  return statements;
}

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
      (Array.isArray(candidate.a) && candidate.a.length === 2 && candidate.a.every((part) => typeof part === 'string' && /^\d+$/.test(part))));
  if (!valid) throw new ConnectorError('invalid_data', 'The change checkpoint is not one this PostgreSQL connector issued');
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

/** The origin tag a connection's writes carry: `lockstep`, or `lockstep:<writeOrigin>`. */
export function originTag(writeOrigin: string | undefined): string {
  return writeOrigin ? `${OWN_ORIGIN}:${writeOrigin}` : OWN_ORIGIN;
}
