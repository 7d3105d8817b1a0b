/**
 * Table descriptions and schema changes. A description (catalog.ts `TableMeta`) is cached per connection
 * (`MetadataCache`); the checks made against it (`requireKey`, ...) raise metadata errors, which, like the
 * driver codes of `SCHEMA_CHANGE_CODES`, suggest that a cached description is stale: `withMeta` then runs
 * the call once more with a fresh one.
 *
 * `createTable` / `createField` pick the native type (native-types.ts) and adopt what a previous attempt
 * made. The service id column and its fill trigger are shared with table setup (setup.ts).
 */
import {
  ConnectorError,
  MetadataCache,
  type CacheHit,
  type FieldInfo,
  type FieldSpec,
  type TableInfo,
} from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import {
  CHANGE_LOG_TABLE,
  EXPORT_LOG_TABLE,
  listTableRows,
  loadTableMeta,
  SERVICE_ID_COLUMN,
  type TableKey,
  type TableMeta,
} from './catalog';
import { exec, rows, type Db } from './db';
import { derivedName, quoteIdent, quoteString } from './sql';
import { hasExpressionDefaults, nativeColumnType, type ServerInfo } from './native-types';
import type { ClassifiedColumn } from './types';

/** How long a cached table description is used before it is read again (a change made elsewhere shows up). */
export const DEFAULT_METADATA_TTL_MS = 60_000;

/** Errors raised by checks against a table description (which may come from the cache, and be stale). */
const metadataErrors = new WeakSet<object>();

export function metadataError(kind: ConnectorError['kind'], message: string): ConnectorError {
  const error = new ConnectorError(kind, message);
  metadataErrors.add(error);
  return error;
}

/** Driver codes that suggest a table changed under a cached description (unknown column or table). */
const SCHEMA_CHANGE_CODES = new Set(['ER_BAD_FIELD_ERROR', 'ER_NO_SUCH_TABLE', 'ER_BAD_TABLE_ERROR']);

/** Whether `error` (raw or translated) suggests the table is not what its description says. */
export function suggestsSchemaChange(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (metadataErrors.has(error)) return true;
  const { code, appCode } = error as { code?: unknown; appCode?: unknown };
  const driverCode = typeof appCode === 'string' ? appCode : code;
  return typeof driverCode === 'string' && SCHEMA_CHANGE_CODES.has(driverCode);
}

/** The key, or ConnectorError `unsupported` explaining that the table must be prepared first. */
export function requireKey(meta: TableMeta): TableKey {
  if (meta.key) return meta.key;
  const what = meta.isView
    ? `View "${meta.name}" has no readable column to use as its key`
    : `Table "${meta.name}" has no single-column primary key`;
  throw metadataError(
    'unsupported',
    `${what}, so its records have no stable id; ` +
      `prepare the table first (it adds a "${SERVICE_ID_COLUMN}" column)`,
  );
}

// ---------------------------------------------------------------------------------------------------
// table descriptions (cached)

/** The table descriptions of one connection (its database is fixed), by table name. */
export class TableDescriptions {
  private readonly cache: MetadataCache<TableMeta>;

  constructor(
    private readonly db: Db,
    private readonly base: () => string,
    ttlMs = DEFAULT_METADATA_TTL_MS,
  ) {
    this.cache = new MetadataCache<TableMeta>(ttlMs);
  }

  /** This connection's database (ConnectorError when no base was chosen). */
  database(): string {
    return this.base();
  }

  /** The table's description read now from information_schema on `connection` (and cached). */
  async fresh(connection: PoolConnection, table: string): Promise<TableMeta> {
    const server = await this.db.server();
    return this.cache.refresh(table, () => loadTableMeta(connection, this.base(), table, server));
  }

  /** The table's description, from the cache when it holds one (else read on a pooled connection). */
  async cached(table: string, context?: string): Promise<CacheHit<TableMeta>> {
    const base = this.base();
    const server = await this.db.server();
    return this.cache.get(table, () =>
      this.db.withConnection((connection) => loadTableMeta(connection, base, table, server), context),
    );
  }

  /**
   * Runs `attempt` with the table's description. With a cached description, `attempt` runs again once with
   * a fresh one when it failed in a way that suggests the table changed since (`suggestsSchemaChange`);
   * `attempt` gets `cached` to stop at the first such failure rather than report it per row.
   */
  async withMeta<T>(
    table: string,
    attempt: (meta: TableMeta, cached: boolean) => Promise<T>,
    context?: string,
  ): Promise<T> {
    const hit = await this.cached(table, context);
    if (!hit.cached) return attempt(hit.value, false);
    try {
      return await attempt(hit.value, true);
    } catch (error) {
      if (!suggestsSchemaChange(error)) throw error;
      this.cache.invalidate(table);
      return attempt((await this.cached(table, context)).value, false);
    }
  }

  /** Runs `work` with a table's description on one pooled connection. */
  withTable<T>(
    table: string,
    work: (connection: PoolConnection, meta: TableMeta) => Promise<T>,
    context?: string,
  ): Promise<T> {
    return this.withMeta(
      table,
      (meta) => this.db.withConnection((connection) => work(connection, meta), context),
      context,
    );
  }

  invalidate(table: string): void {
    this.cache.invalidate(table);
  }

  clear(): void {
    this.cache.clear();
  }
}

export function toFieldInfo(column: ClassifiedColumn): FieldInfo {
  return {
    remoteId: column.name,
    name: column.name,
    type: column.type,
    typeClass: column.typeClass,
    read: column.read,
    write: column.write,
    required: column.required,
    primary: column.primary,
    typeDetails: column.typeDetails,
  };
}

// ---------------------------------------------------------------------------------------------------
// the service id column

export const SERVICE_ID_TYPE = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_general_ci';

/** The BEFORE INSERT trigger that fills the service id where the server cannot default it to UUID(). */
export function fillTriggerName(table: string): string {
  return derivedName('lockstep_bi', table);
}

const TRIGGER_PRESENT_SQL = `
SELECT 1 AS present
  FROM information_schema.TRIGGERS
 WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME = ?`;

const FILL_TRIGGER_SQL = (table: string) => {
  const column = quoteIdent(SERVICE_ID_COLUMN);
  return `
CREATE TRIGGER ${quoteIdent(fillTriggerName(table))} BEFORE INSERT ON ${quoteIdent(table)} FOR EACH ROW
SET NEW.${column} = COALESCE(NEW.${column}, UUID())`;
};

export async function installFillTrigger(
  connection: PoolConnection,
  database: string,
  table: string,
): Promise<void> {
  const [present] = await rows(connection, TRIGGER_PRESENT_SQL, [database, fillTriggerName(table)]);
  if (present) return;
  await exec(connection, FILL_TRIGGER_SQL(table));
}

// ---------------------------------------------------------------------------------------------------
// schema changes

function checkName(name: string, what: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
  // A NUL cannot be quoted into a statement at all (quoteIdent throws a plain Error).
  if (name.includes('\u0000'))
    throw new ConnectorError('invalid_data', `The ${what} name contains a NUL character`);
  if (name !== name.trimEnd())
    throw new ConnectorError(
      'invalid_data',
      `The ${what} name "${name.slice(0, 40)}" ends with a space, which MySQL does not allow`,
    );
  if ([...name].length > 64)
    throw new ConnectorError(
      'invalid_data',
      `The ${what} name "${name.slice(0, 40)}…" is longer than MySQL's 64 characters`,
    );
}

function columnDefinition(field: FieldSpec, server: ServerInfo): string {
  checkName(field.name, 'field');
  if (field.name === SERVICE_ID_COLUMN)
    throw new ConnectorError('invalid_data', `"${SERVICE_ID_COLUMN}" is the service id column's name`);
  const native = nativeColumnType(field, server);
  if (!native)
    throw new ConnectorError(
      'unsupported',
      `A field of class "${field.typeClass}" cannot be created in MySQL`,
    );
  const comment = native.comment ? ` COMMENT ${quoteString(native.comment)}` : '';
  return `${quoteIdent(field.name)} ${native.sql} NULL${comment}`;
}

const CREATE_TABLE_SQL = (table: string, definitions: string[]) => `
CREATE TABLE IF NOT EXISTS ${quoteIdent(table)} (${definitions.join(', ')})
ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Created by Lockstep'`;

const ADD_COLUMN_SQL = (table: string, definition: string) => `
ALTER TABLE ${quoteIdent(table)} ADD COLUMN ${definition}`;

/**
 * Creates a table keyed by the service id (`lockstep_id` CHAR(36) primary key, defaulted to UUID()), with
 * nullable columns for the fields. A retried create adopts the table a previous attempt made and adds the
 * fields it lacks.
 */
export async function createTable(
  db: Db,
  tables: TableDescriptions,
  name: string,
  fields: FieldSpec[],
): Promise<TableInfo> {
  checkName(name, 'table');
  const names = fields.map((field) => field.name);
  if (new Set(names).size !== names.length)
    throw new ConnectorError('invalid_data', 'Two fields have the same name');
  if (name === CHANGE_LOG_TABLE || name === EXPORT_LOG_TABLE)
    throw new ConnectorError('invalid_data', `"${name}" is the name of one of Lockstep's change logs`);
  const database = tables.database();
  tables.invalidate(name);
  return db.withConnection(async (connection) => {
    const server = await db.server();
    const definitions = fields.map((field) => ({ name: field.name, sql: columnDefinition(field, server) }));
    const expressionDefault = hasExpressionDefaults(server);
    const serviceId =
      `${quoteIdent(SERVICE_ID_COLUMN)} ${SERVICE_ID_TYPE} NOT NULL` +
      `${expressionDefault ? ' DEFAULT (uuid())' : ''} PRIMARY KEY`;
    await exec(connection, CREATE_TABLE_SQL(name, [serviceId, ...definitions.map(({ sql }) => sql)]));
    if (!expressionDefault) await installFillTrigger(connection, database, name);
    const meta = await tables.fresh(connection, name);
    if (meta.isView) throw new ConnectorError('invalid_data', `"${name}" already exists as a view`);
    const missing = definitions.filter((definition) => !meta.byName.has(definition.name));
    if (missing.length > 0) tables.invalidate(name);
    for (const definition of missing) await exec(connection, ADD_COLUMN_SQL(name, definition.sql));
    const [table] = (await listTableRows(connection, database)).filter((row) => String(row.name) === name);
    if (!table) throw new ConnectorError('transient', `Table "${name}" was created but is not listed`);
    return { remoteId: name, name, views: null, readOnly: false };
  }, `Could not create table "${name}"`);
}

/** Adds a nullable column of the closest native type; a field that already exists is adopted as it is. */
export async function createField(
  db: Db,
  tables: TableDescriptions,
  tableRemoteId: string,
  field: FieldSpec,
): Promise<FieldInfo> {
  return db.withConnection(async (connection) => {
    const definition = columnDefinition(field, await db.server());
    // Fresh, not cached: a field added elsewhere since must be adopted, not added again.
    const meta = await tables.fresh(connection, tableRemoteId);
    const existing = meta.byName.get(field.name);
    if (existing) return toFieldInfo(existing);
    if (meta.isView)
      throw new ConnectorError('unsupported', `"${meta.name}" is a view; fields cannot be added to it`);
    tables.invalidate(tableRemoteId);
    await exec(connection, ADD_COLUMN_SQL(meta.name, definition));
    const created = (await tables.fresh(connection, tableRemoteId)).byName.get(field.name);
    if (!created)
      throw new ConnectorError('transient', `Field "${field.name}" was created but is not listed`);
    return toFieldInfo(created);
  }, `Could not create field "${field.name}"`);
}
