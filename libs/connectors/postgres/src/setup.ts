/**
 * Table setup (`prepareTable`) and its undoing (`unprepareTable`), each one transaction under the setup
 * advisory lock (`INFRASTRUCTURE_SQL[0]`), so concurrent setups of a database are serialised. The SQL is
 * change-capture.ts's.
 */
import { ConnectorError, type PreparedTable, type PrepareOptions } from '@lockstep/connectors-core';
import type { PoolClient } from 'pg';
import { loadTable, type TableMeta } from './catalog';
import {
  addServiceIdSql,
  CAPTURE_READERS,
  CAPTURE_TARGET_SQL,
  captureLevel,
  CHANGE_LOG,
  COLUMN_COMMENT_SQL,
  DROP_UNUSED_CAPTURE_SQL,
  dropTriggerSql,
  FORGET_TABLE_READERS_SQL,
  INFRASTRUCTURE_SQL,
  installTriggerSql,
  REGISTER_READER_SQL,
  SERVICE_ID_COMMENT,
  UNREGISTER_READER_SQL,
} from './change-capture';
import { queryable, withWriteTransaction, type PgContext, type Row } from './db';
import type { TableDescriptions } from './schema';
import { ident, qualified } from './sql';
import { SERVICE_ID_COLUMN } from './types';

const CAPTURE_PRESENT_SQL = `
SELECT to_regclass('${CHANGE_LOG}') IS NOT NULL AS present,
       to_regclass('${CAPTURE_READERS}') IS NOT NULL AS readers`;

export async function prepareTable(
  context: PgContext,
  tables: TableDescriptions,
  tableRemoteId: string,
  options: PrepareOptions,
): Promise<PreparedTable> {
  const meta = await tables.freshTable(tableRemoteId);
  if (meta.isView) return { serviceIdField: null, changeCapture: false };
  tables.invalidate(tableRemoteId);
  await withWriteTransaction(context.pool, async (client) => {
    await client.query(INFRASTRUCTURE_SQL[0]!); // serialise concurrent setups
    // A table without a single-column primary key is keyed by the service id column; with the
    // `serviceIdColumn` option a keyed table gets one too (its primary key stays the remote id), so creates
    // are idempotent there as well (`ON CONFLICT (lockstep_id)` and adoption in inserts.ts).
    // A `lockstep_id` column without a unique index only gets the unique constraint.
    const needsServiceId =
      meta.serviceIdColumn === null && (meta.primaryKey.length !== 1 || options.serviceIdColumn === true);
    if (needsServiceId) {
      const hasColumn = meta.columns.some((column) => column.name === SERVICE_ID_COLUMN);
      for (const statement of addServiceIdSql(meta.schema, meta.name, SERVICE_ID_COLUMN, hasColumn))
        await client.query(statement);
    }
    if (options.changeCapture) await installCapture(client, meta, context.origin);
  });
  const after = await tables.freshTable(tableRemoteId);
  return { serviceIdField: after.serviceIdColumn, changeCapture: options.changeCapture };
}

/** Installs the capture triggers on the table and registers `origin` as a reader of its changes. */
async function installCapture(client: PoolClient, meta: TableMeta, origin: string): Promise<void> {
  for (const statement of INFRASTRUCTURE_SQL.slice(1)) await client.query(statement);
  const key = meta.primaryKey.length === 1 ? meta.primaryKey[0]! : SERVICE_ID_COLUMN;
  const { rows } = await client.query<Row>(CAPTURE_TARGET_SQL, [meta.schema, meta.name, key]);
  const target = rows[0];
  if (!target || target['attnum'] === null)
    throw new ConnectorError('not_found', `The key column "${key}" of table "${meta.name}" was not found`);
  const level = captureLevel(String(target['relkind']), target['child'] === 't');
  for (const statement of installTriggerSql(meta.schema, meta.name, Number(target['attnum']), level))
    await client.query(statement);
  // After CREATE TRIGGER: its lock has waited for the table's open writes, and holds off new ones until this
  // commit, so a write made without logging for this reader commits before it starts reading.
  await client.query(REGISTER_READER_SQL, [meta.schema, meta.name, origin]);
}

/**
 * Removes this connection's reader of the table; when no other sync reads it, the triggers, the table's
 * change-log entries and the service id column setup added go too. The rows stay.
 */
export async function unprepareTable(
  context: PgContext,
  tables: TableDescriptions,
  tableRemoteId: string,
): Promise<void> {
  tables.invalidate(tableRemoteId);
  const meta = await loadTable(queryable(context.pool), context.schema(), tableRemoteId);
  if (!meta || meta.isView) return;
  await withWriteTransaction(context.pool, async (client) => {
    await client.query(INFRASTRUCTURE_SQL[0]!); // serialise with setups
    const { rows } = await client.query<Row>(CAPTURE_PRESENT_SQL);
    if (rows[0]?.['readers'] === 't') {
      // Another sync still reads the table's changes: only this connection's reader goes.
      const { rows: left } = await client.query<Row>(UNREGISTER_READER_SQL, [
        meta.schema,
        meta.name,
        context.origin,
      ]);
      if (Number(left[0]?.['remaining'] ?? 0) > 0) return;
      await client.query(FORGET_TABLE_READERS_SQL, [meta.schema, meta.name]);
    }
    for (const statement of dropTriggerSql(meta.schema, meta.name)) await client.query(statement);
    if (rows[0]?.['present'] === 't') {
      await client.query(`DELETE FROM ${CHANGE_LOG} WHERE table_schema = $1 AND table_name = $2`, [
        meta.schema,
        meta.name,
      ]);
    }
    // No sync reads the table any more: the service id column setup added goes (its unique constraint with
    // it), and the change log once no table of the database is read.
    const { rows: column } = await client.query<Row>(COLUMN_COMMENT_SQL, [
      meta.schema,
      meta.name,
      SERVICE_ID_COLUMN,
    ]);
    if (column[0]?.['comment'] === SERVICE_ID_COMMENT) {
      await client.query(
        `ALTER TABLE ${qualified(meta.schema, meta.name)} DROP COLUMN ${ident(SERVICE_ID_COLUMN)}`,
      );
    }
    await client.query(DROP_UNUSED_CAPTURE_SQL);
  });
  tables.invalidate(tableRemoteId);
}
