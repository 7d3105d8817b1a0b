/**
 * A connection to one MySQL / MariaDB database (the side's base). See the README for the design: type
 * mapping, table setup, change capture, idempotent writes and the table metadata cache.
 */
import {
  ConnectorError,
  type BaseInfo,
  type ChangeBatch,
  type Connection,
  type FieldInfo,
  type FieldSpec,
  type PreparedTable,
  type PrepareOptions,
  type ReadChangesOptions,
  type ReadPageOptions,
  type RecordCreate,
  type RecordPage,
  type RecordUpdate,
  type SourceRecord,
  type TableInfo,
  type WriteResult,
} from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import {
  currentCheckpoint,
  DEFAULT_HOLD_WINDOW_MS,
  installChangeCapture,
  purgeChangeLog,
  readChanges,
  removeChangeCapture,
  removeUnusedCaptureTables,
  resetOwnWriteLogging,
  setOwnWriteLogging,
  triggerName,
  withSetupLock,
} from './change-capture';
import { exec, rows, type Db } from './db';
import { MetadataCache, type CacheHit } from '@lockstep/connectors-core';
import * as records from './records';
import {
  CHANGE_LOG_TABLE,
  EXPORT_LOG_TABLE,
  listTableRows,
  loadTableMeta,
  SERVICE_ID_COLUMN,
  SERVICE_ID_COMMENT,
  suggestsSchemaChange,
  type TableMeta,
} from './schema';
import { quoteIdent, quoteString } from './sql';
import {
  hasExpressionDefaults,
  hasInvisibleColumns,
  nativeColumnType,
  type ClassifiedColumn,
  type ServerInfo,
} from './types';
import * as writes from './writes';
import { MysqlLiveExport } from './live-export';

/** Databases that are the server's own, never offered as bases. */
export const SYSTEM_DATABASES: readonly string[] = [
  'mysql',
  'information_schema',
  'performance_schema',
  'sys',
];

export interface ChangeLogSettings {
  /** How long an id missing from the change log is waited for (an open transaction) before it counts as rolled back. */
  holdWindowMs: number;
  /** Change-log entries older than this are deleted (a reader further behind relies on the full scan). */
  retentionDays: number;
  /** How long a cached table description is used before it is read again (a change made elsewhere shows up). */
  metadataTtlMs?: number;
}

export const DEFAULT_METADATA_TTL_MS = 60_000;

export const DEFAULT_CHANGE_LOG_SETTINGS: ChangeLogSettings = Object.freeze({
  holdWindowMs: DEFAULT_HOLD_WINDOW_MS,
  retentionDays: 7,
});

const PURGE_EVERY_MS = 10 * 60_000;
const SERVICE_ID_TYPE = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_general_ci';
/**
 * Marks a `lockstep_id` column table setup added to an application's table, so that `unprepareTable` drops
 * only such a column: not one the application made (its comment is its own), nor the key of a table Lockstep
 * created, nor one added by versions before the mark (they stay; `ALTER TABLE ... DROP COLUMN lockstep_id`
 * removes one by hand once no sync reads the table).
 */
const ADDED_BY_LOCKSTEP = ` COMMENT ${quoteString(SERVICE_ID_COMMENT)}`;

function toFieldInfo(column: ClassifiedColumn): FieldInfo {
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

function checkName(name: string, what: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
  // A NUL cannot be quoted into a statement at all (quoteIdent throws a plain Error).
  if (name.includes('\u0000')) throw new ConnectorError('invalid_data', `The ${what} name contains a NUL character`);
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

export class MysqlConnection implements Connection {
  readonly type = 'mysql';
  private lastPurge = 0;
  /** Table descriptions by table name (this connection's database is fixed). */
  private readonly tables: MetadataCache<TableMeta>;
  private autoIncrementSettings: Promise<writes.AutoIncrement> | null = null;

  constructor(
    private readonly db: Db,
    private readonly settings: ChangeLogSettings = DEFAULT_CHANGE_LOG_SETTINGS,
  ) {
    this.tables = new MetadataCache<TableMeta>(settings.metadataTtlMs ?? DEFAULT_METADATA_TTL_MS);
  }

  private base(): string {
    const database = this.db.database;
    if (!database)
      throw new ConnectorError('invalid_data', 'No database (base) was chosen for this MySQL side');
    return database;
  }

  // ---------------------------------------------------------------------------------------------------
  // table descriptions (cached)

  /** The table's description read now from information_schema on `connection` (and cached). */
  private async freshMeta(connection: PoolConnection, table: string): Promise<TableMeta> {
    const server = await this.db.server();
    return this.tables.refresh(table, () => loadTableMeta(connection, this.base(), table, server));
  }

  /** The table's description, from the cache when it holds one (else read on a pooled connection). */
  private async cachedMeta(table: string, context?: string): Promise<CacheHit<TableMeta>> {
    const base = this.base();
    const server = await this.db.server();
    return this.tables.get(table, () =>
      this.db.withConnection((connection) => loadTableMeta(connection, base, table, server), context),
    );
  }

  /**
   * Runs `attempt` with the table's description. With a cached description, `attempt` runs again once with
   * a fresh one when it failed in a way that suggests the table changed since (`suggestsSchemaChange`);
   * `attempt` gets `cached` to stop at the first such failure rather than report it per row.
   */
  private async withMeta<T>(
    table: string,
    attempt: (meta: TableMeta, cached: boolean) => Promise<T>,
    context?: string,
  ): Promise<T> {
    const hit = await this.cachedMeta(table, context);
    if (!hit.cached) return attempt(hit.value, false);
    try {
      return await attempt(hit.value, true);
    } catch (error) {
      if (!suggestsSchemaChange(error)) throw error;
      this.tables.invalidate(table);
      return attempt((await this.cachedMeta(table, context)).value, false);
    }
  }

  /** Runs `work` with a table's description on one pooled connection. */
  private withTable<T>(
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

  private autoIncrement(): Promise<writes.AutoIncrement> {
    this.autoIncrementSettings ??= this.db
      .withConnection((connection) => writes.autoIncrementSettings(connection))
      .catch((error: unknown) => {
        this.autoIncrementSettings = null;
        throw error;
      });
    return this.autoIncrementSettings;
  }

  // ---------------------------------------------------------------------------------------------------
  // credentials and discovery

  async checkCredentials(): Promise<void> {
    await this.db.withConnection(async (connection) => {
      await connection.query('SELECT 1');
    });
  }

  async listBases(): Promise<BaseInfo[]> {
    const found = await this.db.rows(
      `SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN (?) ORDER BY SCHEMA_NAME`,
      [SYSTEM_DATABASES],
    );
    return found.map((row) => ({ id: String(row.name), name: String(row.name) }));
  }

  async listTables(): Promise<TableInfo[]> {
    const base = this.base();
    const found = await this.db.withConnection((connection) => listTableRows(connection, base));
    return found.map((row) => ({
      remoteId: String(row.name),
      name: String(row.name),
      views: null,
      readOnly: String(row.type) === 'VIEW',
    }));
  }

  /** Discovery always reads information_schema (and refreshes the cached description). */
  async listFields(tableRemoteId: string): Promise<FieldInfo[]> {
    const meta = await this.db.withConnection((connection) => this.freshMeta(connection, tableRemoteId));
    return meta.columns.map(toFieldInfo);
  }

  // ---------------------------------------------------------------------------------------------------
  // reading

  async readPage(tableRemoteId: string, options: ReadPageOptions): Promise<RecordPage> {
    return this.withTable(tableRemoteId, (connection, meta) => records.readPage(connection, meta, options));
  }

  async countRecords(tableRemoteId: string): Promise<number> {
    return this.withTable(tableRemoteId, (connection, meta) => records.countRecords(connection, meta));
  }

  async readByIds(tableRemoteId: string, remoteIds: string[]): Promise<SourceRecord[]> {
    if (remoteIds.length === 0) return [];
    return this.withTable(tableRemoteId, (connection, meta) =>
      records.readByKeys(connection, meta, remoteIds),
    );
  }

  async readByServiceIds(tableRemoteId: string, serviceIds: string[]): Promise<SourceRecord[]> {
    if (serviceIds.length === 0) return [];
    return this.withTable(tableRemoteId, (connection, meta) =>
      records.readByServiceIds(connection, meta, serviceIds),
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // change capture (polled: there is no `watch`)

  async currentCheckpoint(tableRemoteId: string): Promise<string> {
    const base = this.base();
    return this.withTable(tableRemoteId, (connection) => currentCheckpoint(connection, base));
  }

  async readChanges(tableRemoteId: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch> {
    const base = this.base();
    await this.purgeOccasionally();
    return this.withTable(tableRemoteId, (connection, meta) =>
      readChanges(connection, {
        database: base,
        meta,
        since,
        limit: options.limit,
        ignoreOwnWrites: options.ignoreOwnWrites ?? false,
        origin: this.db.origin,
        holdWindowMs: this.settings.holdWindowMs,
      }),
    );
  }

  private async purgeOccasionally(): Promise<void> {
    if (Date.now() - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    const base = this.base();
    await this.db
      .withConnection(async (connection) => {
        const [log] = await rows(
          connection,
          `SELECT 1 AS present FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
          [base, CHANGE_LOG_TABLE],
        );
        if (log) await purgeChangeLog(connection, this.settings.retentionDays);
      })
      // Housekeeping only: a failure here must not fail the read.
      .catch(() => undefined);
  }

  // ---------------------------------------------------------------------------------------------------
  // writing

  /**
   * Runs `work` in one transaction with the table's description. A retry with a fresh description (see
   * `withMeta`) runs in a new transaction: the failed attempt's is rolled back first.
   */
  private write<T>(
    tableRemoteId: string,
    work: (connection: PoolConnection, meta: TableMeta, options: writes.WriteOptions) => Promise<T>,
  ): Promise<T> {
    return this.withMeta(tableRemoteId, (meta, cached) =>
      this.db.transaction(async (connection) => {
        // Own writes are logged only when another reader of the table is registered (change-capture.ts, readers).
        await setOwnWriteLogging(connection, meta.name, this.db.origin);
        try {
          return await work(connection, meta, {
            translate: (error) => this.db.translate(error),
            stopOnSchemaChange: cached,
            autoIncrement: () => this.autoIncrement(),
          });
        } finally {
          await resetOwnWriteLogging(connection).catch(() => undefined);
        }
      }),
    );
  }

  async createRecords(tableRemoteId: string, rowsToCreate: RecordCreate[]): Promise<WriteResult[]> {
    if (rowsToCreate.length === 0) return [];
    return this.write(tableRemoteId, (connection, meta, options) =>
      writes.createRecords(connection, meta, rowsToCreate, options),
    );
  }

  async updateRecords(tableRemoteId: string, rowsToUpdate: RecordUpdate[]): Promise<WriteResult[]> {
    if (rowsToUpdate.length === 0) return [];
    return this.write(tableRemoteId, (connection, meta, options) =>
      writes.updateRecords(connection, meta, rowsToUpdate, options),
    );
  }

  async deleteRecords(tableRemoteId: string, remoteIds: string[]): Promise<WriteResult[]> {
    if (remoteIds.length === 0) return [];
    return this.write(tableRemoteId, (connection, meta, options) =>
      writes.deleteRecords(connection, meta, remoteIds, options),
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // schema changes

  private columnDefinition(field: FieldSpec, server: ServerInfo): string {
    checkName(field.name, 'field');
    if (field.name === SERVICE_ID_COLUMN)
      throw new ConnectorError('invalid_data', `"${SERVICE_ID_COLUMN}" is the service id column's name`);
    const native = nativeColumnType(field, server);
    if (!native)
      throw new ConnectorError(
        'unsupported',
        `A field of class "${field.typeClass}" cannot be created in MySQL`,
      );
    return `${quoteIdent(field.name)} ${native.sql} NULL${native.comment ? ` COMMENT ${quoteString(native.comment)}` : ''}`;
  }

  /**
   * Creates a table keyed by the service id (`lockstep_id` CHAR(36) primary key, defaulted to UUID()), with
   * nullable columns for the fields. A retried create adopts the table a previous attempt made and adds the
   * fields it lacks.
   */
  async createTable(name: string, fields: FieldSpec[]): Promise<TableInfo> {
    checkName(name, 'table');
    const names = fields.map((field) => field.name);
    if (new Set(names).size !== names.length)
      throw new ConnectorError('invalid_data', 'Two fields have the same name');
    if (name === CHANGE_LOG_TABLE || name === EXPORT_LOG_TABLE)
      throw new ConnectorError('invalid_data', `"${name}" is the name of one of Lockstep's change logs`);
    const base = this.base();
    this.tables.invalidate(name);
    return this.db.withConnection(async (connection) => {
      const server = await this.db.server();
      const definitions = fields.map((field) => ({
        name: field.name,
        sql: this.columnDefinition(field, server),
      }));
      const expressionDefault = hasExpressionDefaults(server);
      const serviceId = `${quoteIdent(SERVICE_ID_COLUMN)} ${SERVICE_ID_TYPE} NOT NULL${expressionDefault ? ' DEFAULT (uuid())' : ''} PRIMARY KEY`;
      await exec(
        connection,
        `CREATE TABLE IF NOT EXISTS ${quoteIdent(name)} (${[serviceId, ...definitions.map((definition) => definition.sql)].join(', ')}) ` +
          `ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Created by Lockstep'`,
      );
      if (!expressionDefault) await this.installFillTrigger(connection, name);
      const meta = await this.freshMeta(connection, name);
      if (meta.isView) throw new ConnectorError('invalid_data', `"${name}" already exists as a view`);
      const missing = definitions.filter((definition) => !meta.byName.has(definition.name));
      if (missing.length > 0) this.tables.invalidate(name);
      for (const definition of missing) {
        await exec(connection, `ALTER TABLE ${quoteIdent(name)} ADD COLUMN ${definition.sql}`);
      }
      const [table] = (await listTableRows(connection, base)).filter((row) => String(row.name) === name);
      if (!table) throw new ConnectorError('transient', `Table "${name}" was created but is not listed`);
      return { remoteId: name, name, views: null, readOnly: false };
    }, `Could not create table "${name}"`);
  }

  /** Adds a nullable column of the closest native type; a field that already exists is adopted as it is. */
  async createField(tableRemoteId: string, field: FieldSpec): Promise<FieldInfo> {
    return this.db.withConnection(async (connection) => {
      const definition = this.columnDefinition(field, await this.db.server());
      // Fresh, not cached: a field added elsewhere since must be adopted, not added again.
      const meta = await this.freshMeta(connection, tableRemoteId);
      const existing = meta.byName.get(field.name);
      if (existing) return toFieldInfo(existing);
      if (meta.isView)
        throw new ConnectorError('unsupported', `"${meta.name}" is a view; fields cannot be added to it`);
      this.tables.invalidate(tableRemoteId);
      await exec(connection, `ALTER TABLE ${quoteIdent(meta.name)} ADD COLUMN ${definition}`);
      const created = (await this.freshMeta(connection, tableRemoteId)).byName.get(field.name);
      if (!created)
        throw new ConnectorError('transient', `Field "${field.name}" was created but is not listed`);
      return toFieldInfo(created);
    }, `Could not create field "${field.name}"`);
  }

  // ---------------------------------------------------------------------------------------------------
  // table setup

  /**
   * Adds the service id column to a table without a usable single-column primary key (and, with the
   * `serviceIdColumn` option, to a table with one: its primary key stays the remote id, and creates adopt
   * rows by service id), and installs the change-capture triggers when asked. Idempotent; serialised per
   * database with a named lock so two workers cannot set up the same table at once. Views are read-only
   * and need (and get) nothing.
   */
  async prepareTable(tableRemoteId: string, options: PrepareOptions): Promise<PreparedTable> {
    const base = this.base();
    return this.withTable(
      tableRemoteId,
      async (connection, meta) => {
        if (meta.isView) return { serviceIdField: null, changeCapture: false };
        return withSetupLock(connection, base, async () => {
          let current = await this.freshMeta(connection, tableRemoteId);
          const needsServiceId =
            current.key === null ||
            (options.serviceIdColumn === true && (current.serviceIdColumn === null || !current.serviceIdUnique));
          if (needsServiceId) {
            this.tables.invalidate(tableRemoteId);
            await this.addServiceIdColumn(connection, current);
            current = await this.freshMeta(connection, tableRemoteId);
          }
          if (options.changeCapture) await installChangeCapture(connection, base, current, this.db.origin);
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
  async unprepareTable(tableRemoteId: string): Promise<void> {
    const base = this.base();
    this.tables.invalidate(tableRemoteId);
    await this.db.withConnection(
      (connection) =>
        withSetupLock(connection, base, async () => {
          if (!(await removeChangeCapture(connection, base, tableRemoteId, this.db.origin))) return;
          await removeUnusedCaptureTables(connection, base);
          await this.removeServiceIdColumn(connection, tableRemoteId);
        }),
      `Could not remove sync setup from "${tableRemoteId}"`,
    );
  }

  /** Drops the service id column that setup added (marked SERVICE_ID_COMMENT) and its fill trigger. */
  private async removeServiceIdColumn(connection: PoolConnection, table: string): Promise<void> {
    const [column] = await rows(
      connection,
      `SELECT c.COLUMN_COMMENT AS comment FROM information_schema.COLUMNS c
       JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
       WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ? AND c.COLUMN_NAME = ? AND t.TABLE_TYPE = 'BASE TABLE'`,
      [this.base(), table, SERVICE_ID_COLUMN],
    );
    if (!column || String(column.comment) !== SERVICE_ID_COMMENT) return;
    await exec(connection, `DROP TRIGGER IF EXISTS ${quoteIdent(triggerName('fill', table))}`);
    // The unique key on the column alone goes with it.
    await exec(connection, `ALTER TABLE ${quoteIdent(table)} DROP COLUMN ${quoteIdent(SERVICE_ID_COLUMN)}`);
    this.tables.invalidate(table);
  }

  private async addServiceIdColumn(connection: PoolConnection, meta: TableMeta): Promise<void> {
    const server = await this.db.server();
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
        await exec(connection, `UPDATE ${table} SET ${column} = UUID() WHERE ${column} IS NULL`);
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
    await exec(connection, `UPDATE ${table} SET ${column} = UUID() WHERE ${column} IS NULL`);
    if (hasColumn && !meta.serviceIdUnique) await exec(connection, `ALTER TABLE ${table} ${uniqueKey}`);
    await this.installFillTrigger(connection, meta.name);
  }

  private async installFillTrigger(connection: PoolConnection, table: string): Promise<void> {
    const column = quoteIdent(SERVICE_ID_COLUMN);
    const [present] = await rows(
      connection,
      `SELECT 1 AS present FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME = ?`,
      [this.base(), triggerName('fill', table)],
    );
    if (present) return;
    await exec(
      connection,
      `CREATE TRIGGER ${quoteIdent(triggerName('fill', table))} BEFORE INSERT ON ${quoteIdent(table)} FOR EACH ROW ` +
        `SET NEW.${column} = COALESCE(NEW.${column}, UUID())`,
    );
  }

  private exportTarget: MysqlLiveExport | null = null;

  /** Live export destination operations (live-export.ts). */
  get liveExport(): MysqlLiveExport {
    this.exportTarget ??= new MysqlLiveExport(
      this.db,
      () => this.base(),
      (table) => this.tables.invalidate(table),
    );
    return this.exportTarget;
  }

  async close(): Promise<void> {
    this.tables.clear();
    await this.db.close();
  }
}
