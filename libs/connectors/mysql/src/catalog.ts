/**
 * Schema discovery from information_schema: tables and views of the base (the database), their columns
 * classified by `types.ts`, and the key a table's records are addressed by.
 *
 * Record key (a record's remote id is the key's text):
 * 1. the primary key, when it is a single column of a readable type;
 * 2. otherwise the service id column `lockstep_id`, which `prepareTable` adds (CHAR(36), unique); with the
 *    `serviceIdColumn` prepare option a table with a single-column primary key gets it too, and then its
 *    records carry it as `serviceId` while the primary key stays their remote id;
 * 3. a view has no key of its own: its `id` column, else its `lockstep_id` column, else its first column is
 *    taken as the key (as the PostgreSQL connector does);
 * 4. otherwise none: the table can be listed but not read until it is prepared.
 *
 * The service id column is listed as a read-only `uuid` field (type_details `service_id: true`).
 */
import { ConnectorError } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { rows, type Row } from './db';
import type { ServerInfo } from './native-types';
import { classifyColumn, type ClassifiedColumn, type ColumnDescription } from './types';

export const SERVICE_ID_COLUMN = 'lockstep_id';
/** The comment of a `lockstep_id` column table setup added (setup.ts), which teardown drops. */
export const SERVICE_ID_COMMENT = 'Added by Lockstep (service id); dropped when no sync reads this table';
export const CHANGE_LOG_TABLE = 'lockstep_change_log';
/** Who reads each table's changes (change-capture.ts, readers). */
export const READERS_TABLE = 'lockstep_capture_readers';
/** The live export's change log (export-capture.ts); like the sync's, never listed as a table. */
export const EXPORT_LOG_TABLE = 'lockstep_export_log';

export interface TableKey {
  column: string;
  /** The key is the service id column. */
  serviceId: boolean;
  /** Integer keys are compared as integers (parameters sent as BigInt, exact past 2^53). */
  integer: boolean;
}

export interface TableMeta {
  name: string;
  isView: boolean;
  /** Every column, in table order (the service id column read-only). */
  columns: ClassifiedColumn[];
  byName: Map<string, ClassifiedColumn>;
  primaryKey: string[];
  key: TableKey | null;
  /** `lockstep_id` when the table has it. */
  serviceIdColumn: string | null;
  /**
   * The table has a unique key (or the primary key) on `lockstep_id` alone, so a create's service id cannot
   * be written twice; `prepareTable` adds it where it is missing.
   */
  serviceIdUnique: boolean;
  /** The AUTO_INCREMENT column, if any (its new values come back as the insert id). */
  autoIncrementColumn: string | null;
}

const LIST_TABLES_SQL = `
SELECT TABLE_NAME AS name, TABLE_TYPE AS type
  FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = ?
   AND TABLE_TYPE IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')
   AND TABLE_NAME NOT IN (?, ?, ?)
 ORDER BY TABLE_NAME`;

const TABLE_TYPE_SQL = `
SELECT TABLE_TYPE AS type
  FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND TABLE_NAME NOT IN (?, ?, ?)`;

const COLUMNS_SQL = `
SELECT COLUMN_NAME AS name, DATA_TYPE AS dataType, COLUMN_TYPE AS columnType, IS_NULLABLE AS nullable,
       COLUMN_DEFAULT AS columnDefault, EXTRA AS extra, COLUMN_COMMENT AS comment,
       CHARACTER_MAXIMUM_LENGTH AS charMaxLength, NUMERIC_PRECISION AS numericPrecision,
       NUMERIC_SCALE AS numericScale
  FROM information_schema.COLUMNS
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
 ORDER BY ORDINAL_POSITION`;

const KEY_COLUMNS_SQL = `
SELECT COLUMN_NAME AS name, CONSTRAINT_NAME AS constraintName, REFERENCED_TABLE_SCHEMA AS refSchema,
       REFERENCED_TABLE_NAME AS refTable, REFERENCED_COLUMN_NAME AS refColumn
  FROM information_schema.KEY_COLUMN_USAGE
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
 ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION`;

const PRIMARY_KEYS_SQL = `
SELECT TABLE_NAME AS tableName, COLUMN_NAME AS name
  FROM information_schema.KEY_COLUMN_USAGE
 WHERE TABLE_SCHEMA = ? AND CONSTRAINT_NAME = 'PRIMARY' AND TABLE_NAME IN (?)`;

const CHECK_CLAUSES_SQL = `
SELECT CHECK_CLAUSE AS clause
  FROM information_schema.CHECK_CONSTRAINTS
 WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`;

function text(value: unknown): string {
  return value === null || value === undefined ? '' : String(value);
}

function numberOrNull(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const number = Number(value);
  return Number.isFinite(number) ? number : null;
}

export async function listTableRows(connection: PoolConnection, database: string): Promise<Row[]> {
  return rows(connection, LIST_TABLES_SQL, [database, CHANGE_LOG_TABLE, EXPORT_LOG_TABLE, READERS_TABLE]);
}

/** The table's description, or null when the database has no such table. */
export async function findTableMeta(
  connection: PoolConnection,
  database: string,
  table: string,
  server: ServerInfo,
): Promise<TableMeta | null> {
  try {
    return await loadTableMeta(connection, database, table, server);
  } catch (error) {
    if (error instanceof ConnectorError && error.kind === 'not_found') return null;
    throw error;
  }
}

/** Reads a table's description; ConnectorError `not_found` when there is no such table or view. */
export async function loadTableMeta(
  connection: PoolConnection,
  database: string,
  table: string,
  server: ServerInfo,
): Promise<TableMeta> {
  const [tableRow] = await rows(connection, TABLE_TYPE_SQL, [
    database,
    table,
    CHANGE_LOG_TABLE,
    EXPORT_LOG_TABLE,
    READERS_TABLE,
  ]);
  if (!tableRow)
    throw new ConnectorError('not_found', `Table "${table}" does not exist in database "${database}"`);
  const isView = text(tableRow.type) === 'VIEW';

  const columnRows = await rows(connection, COLUMNS_SQL, [database, table]);
  const keyRows = await rows(connection, KEY_COLUMNS_SQL, [database, table]);
  const primaryKey = keyRows
    .filter((row) => text(row.constraintName) === 'PRIMARY')
    .map((row) => text(row.name));
  const serviceIdUnique = [...groupKeys(keyRows, false).values()].some(
    (list) => list.length === 1 && text(list[0].name) === SERVICE_ID_COLUMN,
  );
  // Single-column unique keys other than the primary key (type_details.unique).
  const uniqueColumns = new Set(
    [...groupKeys(keyRows, false).entries()]
      .filter(([name, list]) => name !== 'PRIMARY' && list.length === 1)
      .filter(([, list]) => text(list[0].name) !== SERVICE_ID_COLUMN)
      .map(([, list]) => text(list[0].name)),
  );
  const references = await relationTargets(connection, database, keyRows);
  // MariaDB's JSON is LONGTEXT with a json_valid() CHECK constraint; MySQL has a real JSON type.
  const jsonColumns =
    server.flavor === 'mariadb' && !isView
      ? await jsonCheckedColumns(connection, database, table)
      : new Set<string>();

  let serviceIdColumn: string | null = null;
  let autoIncrementColumn: string | null = null;
  const columns: ClassifiedColumn[] = [];
  for (const row of columnRows) {
    const description = describeColumn(row, {
      primary: primaryKey.includes(text(row.name)),
      unique: uniqueColumns.has(text(row.name)),
      jsonCheck: jsonColumns.has(text(row.name)),
      references: references.get(text(row.name)) ?? null,
      inView: isView,
    });
    if (description.autoIncrement) autoIncrementColumn = description.name;
    let classified = classifyColumn(description);
    if (classified.name === SERVICE_ID_COLUMN && !isView && classified.read) {
      serviceIdColumn = SERVICE_ID_COLUMN;
      classified = asServiceIdColumn(classified);
    }
    columns.push(classified);
  }

  const byName = new Map(columns.map((column) => [column.name, column]));
  return {
    name: table,
    isView,
    columns,
    byName,
    primaryKey,
    key: chooseKey(primaryKey, byName, isView),
    serviceIdColumn,
    serviceIdUnique: !isView && serviceIdUnique,
    autoIncrementColumn,
  };
}

/**
 * KEY_COLUMN_USAGE lists the primary and unique keys (no REFERENCED_TABLE_NAME) and the foreign keys: the
 * rows of one kind, by constraint name.
 */
function groupKeys(keyRows: Row[], foreign: boolean): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const row of keyRows) {
    const isForeign = row.refTable !== null && row.refTable !== undefined;
    if (isForeign !== foreign) continue;
    const list = groups.get(text(row.constraintName)) ?? [];
    list.push(row);
    groups.set(text(row.constraintName), list);
  }
  return groups;
}

/**
 * Relations: single-column foreign keys, in this database, to the single-column primary key of the target.
 * Column name -> target table.
 */
async function relationTargets(
  connection: PoolConnection,
  database: string,
  keyRows: Row[],
): Promise<Map<string, string>> {
  const candidates = [...groupKeys(keyRows, true).values()]
    .filter((list) => list.length === 1 && text(list[0].refSchema) === database)
    .map((list) => list[0]);
  const references = new Map<string, string>();
  if (candidates.length === 0) return references;
  const targets = [...new Set(candidates.map((row) => text(row.refTable)))];
  const targetKeys = await rows(connection, PRIMARY_KEYS_SQL, [database, targets]);
  for (const row of candidates) {
    const pk = targetKeys
      .filter((key) => text(key.tableName) === text(row.refTable))
      .map((key) => text(key.name));
    if (pk.length === 1 && pk[0] === text(row.refColumn)) references.set(text(row.name), text(row.refTable));
  }
  return references;
}

/** MariaDB: the columns with a `json_valid(column)` CHECK constraint (its JSON type). */
async function jsonCheckedColumns(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<Set<string>> {
  const jsonColumns = new Set<string>();
  const checks = await rows(connection, CHECK_CLAUSES_SQL, [database, table]);
  for (const check of checks) {
    const match = /^\s*json_valid\(\s*`((?:[^`]|``)+)`\s*\)\s*$/i.exec(text(check.clause));
    if (match) jsonColumns.add(match[1].replace(/``/g, '`'));
  }
  return jsonColumns;
}

function describeColumn(
  row: Row,
  joined: Pick<ColumnDescription, 'primary' | 'unique' | 'jsonCheck' | 'references' | 'inView'>,
): ColumnDescription {
  const extra = text(row.extra).toLowerCase();
  return {
    name: text(row.name),
    dataType: text(row.dataType).toLowerCase(),
    columnType: text(row.columnType).toLowerCase(),
    nullable: text(row.nullable) === 'YES',
    hasDefault: row.columnDefault !== null && row.columnDefault !== undefined,
    autoIncrement: extra.includes('auto_increment'),
    generated: /\b(virtual|stored|persistent) generated\b/.test(extra),
    comment: text(row.comment),
    charMaxLength: numberOrNull(row.charMaxLength),
    numericPrecision: numberOrNull(row.numericPrecision),
    numericScale: numberOrNull(row.numericScale),
    ...joined,
  };
}

/** The service id column as it is listed: a read-only uuid, marked `service_id`. */
function asServiceIdColumn(column: ClassifiedColumn): ClassifiedColumn {
  return {
    ...column,
    typeClass: 'uuid',
    storage: 'uuid',
    write: false,
    required: false,
    typeDetails: { ...column.typeDetails, service_id: true },
  };
}

function chooseKey(
  primaryKey: string[],
  all: Map<string, ClassifiedColumn>,
  isView: boolean,
): TableKey | null {
  const keyOf = (name: string): TableKey | null => {
    const column = all.get(name);
    if (!column || !column.read) return null;
    return { column: name, serviceId: name === SERVICE_ID_COLUMN, integer: column.storage === 'integer' };
  };
  if (primaryKey.length === 1) {
    const key = keyOf(primaryKey[0]);
    if (key) return key;
  }
  if (!isView) return all.has(SERVICE_ID_COLUMN) ? keyOf(SERVICE_ID_COLUMN) : null;
  const first = all.keys().next();
  return keyOf('id') ?? keyOf(SERVICE_ID_COLUMN) ?? (first.done ? null : keyOf(first.value));
}
