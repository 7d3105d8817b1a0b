/**
 * Reading the live export's change log (export-capture.ts installs the triggers that fill it): the rows of a
 * window between two snapshots, as change-feed.ts reads the sync's log, and the log's retention.
 */
import { EXPORT_LOG } from './export-capture';

/**
 * Log rows of one table whose transaction became visible between snapshot $3 (previous read) and $4 (this
 * read), after position ($5, $6) inside the window: READ_CHANGES_SQL of change-feed.ts on the export log.
 */
export const READ_EXPORT_CHANGES_SQL = `
SELECT l.id::text AS id, l.xid::text AS xid, l.pk
FROM ${EXPORT_LOG} l
WHERE l.table_schema = $1 AND l.table_name = $2
  AND l.xid >= pg_snapshot_xmin($3::pg_snapshot) AND l.xid < pg_snapshot_xmax($4::pg_snapshot)
  AND pg_visible_in_snapshot(l.xid, $4::pg_snapshot) AND NOT pg_visible_in_snapshot(l.xid, $3::pg_snapshot)
  AND ($5::xid8 IS NULL OR (l.xid, l.id) > ($5::xid8, $6::bigint))
ORDER BY l.xid, l.id
LIMIT $7`;

/** Deletes up to $2 of the oldest log entries older than $1 days (all tables). */
export const PURGE_EXPORT_LOG_SQL = `
DELETE FROM ${EXPORT_LOG}
 WHERE id IN (
   SELECT id
     FROM ${EXPORT_LOG}
    WHERE logged_at < now() - make_interval(days => $1::int)
    ORDER BY logged_at
    LIMIT $2)`;

/** The distinct keys of log rows, in the order they were first logged. */
export function distinctKeys(rows: { pk: unknown }[]): string[] {
  return [...new Set(rows.map((row) => String(row.pk)))];
}
