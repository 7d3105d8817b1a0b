/**
 * Table setup (`prepareTable`) and its undoing (`unprepareTable`), each under the database's setup lock
 * (`withSetupLock`), so two workers never set up the same table at once. The change capture's SQL is
 * change-capture.ts's; the service id column's type and fill trigger are schema.ts's.
 */
import type { PreparedTable, PrepareOptions } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { SERVICE_ID_COLUMN, SERVICE_ID_COMMENT, type TableMeta } from './catalog';
import {
  installChangeCapture,
  removeChangeCapture,
  removeUnusedCaptureTables,
  withSetupLock,
} from './change-capture';
import { exec, rows, type Db } from './db';
import { fillTriggerName, installFillTrigger, SERVICE_ID_TYPE, type TableDescriptions } from './schema';
import { quoteIdent, quoteString } from './sql';
import { hasExpressionDefaults, hasInvisibleColumns } from './native-types';

/**
 * Marks a `lockstep_id` column table setup added to an application's table, so that `unprepareTable` drops
 * only such a column: not one the application made (its comment is its own), nor the key of a table Lockstep
 * created, nor one added before the mark existed (such a column stays; `ALTER TABLE ... DROP COLUMN
 * lockstep_id` removes it by hand once no sync reads the table).
 */
const ADDED_BY_LOCKSTEP = ` COMMENT ${quoteString(SERVICE_ID_COMMENT)}`;

const SERVICE_ID_COLUMN_COMMENT_SQL = `
SELECT c.COLUMN_COMMENT AS comment
  FROM information_schema.COLUMNS c
  JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
 WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ? AND c.COLUMN_NAME = ? AND t.TABLE_TYPE = 'BASE TABLE'`;

const FILL_SERVICE_IDS_SQL = (table: string) => {
  const column = quoteIdent(SERVICE_ID_COLUMN);
  return `
UPDATE ${quoteIdent(table)} SET ${column} = UUID() WHERE ${column} IS NULL`;
};

const DROP_SERVICE_ID_SQL = (table: string) => `
ALTER TABLE ${quoteIdent(table)} DROP COLUMN ${quoteIdent(SERVICE_ID_COLUMN)}`;

/**
 * Adds the service id column to a table without a usable single-column primary key (and, with the
 * `serviceIdColumn` option, to a table with one: its primary key stays the remote id, and creates adopt
 * rows by service id), and installs the change-capture triggers when asked. Idempotent; serialised per
 * database with a named lock so two workers cannot set up the same table at once. Views are read-only
 * and need (and get) nothing.
 */
export async function prepareTable(
  db: Db,
  tables: TableDescriptions,
  database: string,
  tableRemoteId: string,
  options: PrepareOptions,
): Promise<PreparedTable> {
  return tables.withTable(
    tableRemoteId,
    async (connection, meta) => {
      if (meta.isView) return { serviceIdField: null, changeCapture: false };
      return withSetupLock(connection, database, async () => {
        let current = await tables.fresh(connection, tableRemoteId);
        const needsServiceId =
          current.key === null ||
          (options.serviceIdColumn === true &&
            (current.serviceIdColumn === null || !current.serviceIdUnique));
        if (needsServiceId) {
          tables.invalidate(tableRemoteId);
          await addServiceIdColumn(db, connection, database, current);
          current = await tables.fresh(connection, tableRemoteId);
        }
        if (options.changeCapture) await installChangeCapture(connection, database, current, db.origin);
        return { serviceIdField: current.serviceIdColumn, changeCapture: options.changeCapture };
      });
    },
    `Table setup failed for "${tableRemoteId}"`,
  );
}

/**
 * Removes this connection's reader of the table. When no other sync reads it, what `prepareTable`
 * installed goes: the change triggers and the table's change-log entries, the `lockstep_id` column (with
 * its unique key and fill trigger) when Lockstep added it (`SERVICE_ID_COMMENT`), and the change log and
 * readers table once no table of the database is read. The rows and the application's columns stay; so
 * does a `lockstep_id` that is the key of a table Lockstep created, or that the application made.
 * Idempotent.
 */
export async function unprepareTable(
  db: Db,
  tables: TableDescriptions,
  database: string,
  tableRemoteId: string,
): Promise<void> {
  tables.invalidate(tableRemoteId);
  await db.withConnection(
    (connection) =>
      withSetupLock(connection, database, async () => {
        if (!(await removeChangeCapture(connection, database, tableRemoteId, db.origin))) return;
        await removeUnusedCaptureTables(connection, database);
        await removeServiceIdColumn(connection, tables, database, tableRemoteId);
      }),
    `Could not remove sync setup from "${tableRemoteId}"`,
  );
}

/** Drops the service id column that setup added (marked SERVICE_ID_COMMENT) and its fill trigger. */
async function removeServiceIdColumn(
  connection: PoolConnection,
  tables: TableDescriptions,
  database: string,
  table: string,
): Promise<void> {
  const [column] = await rows(connection, SERVICE_ID_COLUMN_COMMENT_SQL, [
    database,
    table,
    SERVICE_ID_COLUMN,
  ]);
  if (!column || String(column.comment) !== SERVICE_ID_COMMENT) return;
  await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(fillTriggerName(table))}`);
  // The unique key on the column alone goes with it.
  await exec(connection, DROP_SERVICE_ID_SQL(table));
  tables.invalidate(table);
}

async function addServiceIdColumn(
  db: Db,
  connection: PoolConnection,
  database: string,
  meta: TableMeta,
): Promise<void> {
  const server = await db.server();
  const table = quoteIdent(meta.name);
  const column = quoteIdent(SERVICE_ID_COLUMN);
  const hasColumn = meta.columns.some((candidate) => candidate.name === SERVICE_ID_COLUMN);
  // A `lockstep_id` column the application made may lack the unique key (or have one already).
  const uniqueKey = `ADD UNIQUE KEY ${column} (${column})`;
  const addUnique = meta.serviceIdUnique ? '' : `, ${uniqueKey}`;
  if (hasExpressionDefaults(server)) {
    // Every existing row gets its own UUID() from the default (the table is rebuilt, the default evaluated
    // per row; the unique key added in the same statement guarantees it); INVISIBLE keeps `SELECT *` and
    // `INSERT ... VALUES` without a column list working as before for the application.
    const invisible = hasInvisibleColumns(server) ? ' INVISIBLE' : '';
    const definition = `${column} ${SERVICE_ID_TYPE} NOT NULL DEFAULT (uuid())${invisible}`;
    if (hasColumn) {
      await exec(connection, FILL_SERVICE_IDS_SQL(meta.name));
      await exec(connection, `ALTER TABLE ${table} MODIFY COLUMN ${definition}${addUnique}`);
    } else {
      await exec(
        connection,
        `ALTER TABLE ${table} ADD COLUMN ${definition}${ADDED_BY_LOCKSTEP}, ${uniqueKey}`,
      );
    }
    return;
  }
  // Older servers cannot default to UUID(): a nullable column, filled now and by a BEFORE INSERT trigger.
  if (!hasColumn)
    await exec(
      connection,
      `ALTER TABLE ${table} ADD COLUMN ${column} ${SERVICE_ID_TYPE} NULL${ADDED_BY_LOCKSTEP}, ${uniqueKey}`,
    );
  await exec(connection, FILL_SERVICE_IDS_SQL(meta.name));
  if (hasColumn && !meta.serviceIdUnique) await exec(connection, `ALTER TABLE ${table} ${uniqueKey}`);
  await installFillTrigger(connection, database, meta.name);
}
