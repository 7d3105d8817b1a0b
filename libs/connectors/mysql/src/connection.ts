/**
 * A connection to one MySQL / MariaDB database (the side's base). See the README for the design: type
 * mapping, table setup, change capture, idempotent writes and the table metadata cache.
 *
 * This class implements the SDK's `Connection` and delegates: schema.ts (descriptions, DDL), catalog.ts
 * (discovery), records.ts (reads), creates.ts and writes.ts (writes), change-feed.ts (changes), setup.ts
 * (prepare, unprepare), live-export.ts (the live export target); db.ts (the pool) translates driver errors.
 */
import {
  ConnectorError,
  type BaseInfo,
  type ChangeBatch,
  type Connection,
  type FieldInfo,
  type FieldSpec,
  type KeyRange,
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
import { CHANGE_LOG_TABLE, listTableRows, type TableMeta } from './catalog';
import { logExists, resetOwnWriteLogging, setOwnWriteLogging } from './change-capture';
import { currentCheckpoint, DEFAULT_HOLD_WINDOW_MS, purgeChangeLog, readChanges } from './change-feed';
import type { Db } from './db';
import { MysqlLiveExport } from './live-export';
import * as records from './records';
import * as schema from './schema';
import * as setup from './setup';
import * as creates from './creates';
import * as writes from './writes';

export { DEFAULT_METADATA_TTL_MS } from './schema';

/** Databases that are the server's own, never offered as bases. */
export const SYSTEM_DATABASES: readonly string[] = [
  'mysql',
  'information_schema',
  'performance_schema',
  'sys',
];

export interface ChangeLogSettings {
  /**
   * How long an id missing from the change log is waited for (an open transaction) before it counts as
   * rolled back.
   */
  holdWindowMs: number;
  /** Change-log entries older than this are deleted (a reader further behind relies on the full scan). */
  retentionDays: number;
  /** How long a cached table description is used before it is read again (a change elsewhere shows up). */
  metadataTtlMs?: number;
}

export const DEFAULT_CHANGE_LOG_SETTINGS: ChangeLogSettings = Object.freeze({
  holdWindowMs: DEFAULT_HOLD_WINDOW_MS,
  retentionDays: 7,
});

const PURGE_EVERY_MS = 10 * 60_000;

const LIST_BASES_SQL = `
SELECT SCHEMA_NAME AS name
  FROM information_schema.SCHEMATA
 WHERE SCHEMA_NAME NOT IN (?)
 ORDER BY SCHEMA_NAME`;

export class MysqlConnection implements Connection {
  readonly type = 'mysql';
  private lastPurge = 0;
  /** Table descriptions by table name (this connection's database is fixed). */
  private readonly tables: schema.TableDescriptions;
  private autoIncrementSettings: Promise<creates.AutoIncrement> | null = null;
  private exportTarget: MysqlLiveExport | null = null;

  constructor(
    private readonly db: Db,
    private readonly settings: ChangeLogSettings = DEFAULT_CHANGE_LOG_SETTINGS,
  ) {
    this.tables = new schema.TableDescriptions(db, () => this.base(), settings.metadataTtlMs);
  }

  private base(): string {
    const database = this.db.database;
    if (!database)
      throw new ConnectorError('invalid_data', 'No database (base) was chosen for this MySQL side');
    return database;
  }

  private autoIncrement(): Promise<creates.AutoIncrement> {
    this.autoIncrementSettings ??= this.db
      .withConnection((connection) => creates.autoIncrementSettings(connection))
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
    const found = await this.db.rows(LIST_BASES_SQL, [SYSTEM_DATABASES]);
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
    const meta = await this.db.withConnection((connection) => this.tables.fresh(connection, tableRemoteId));
    return meta.columns.map(schema.toFieldInfo);
  }

  // ---------------------------------------------------------------------------------------------------
  // reading

  async readPage(tableRemoteId: string, options: ReadPageOptions): Promise<RecordPage> {
    return this.tables.withTable(tableRemoteId, (connection, meta) =>
      records.readPage(connection, meta, options),
    );
  }

  async countRecords(tableRemoteId: string): Promise<number> {
    return this.tables.withTable(tableRemoteId, (connection, meta) => records.countRecords(connection, meta));
  }

  async splitKeyRanges(tableRemoteId: string, count: number): Promise<KeyRange[]> {
    return this.tables.withTable(tableRemoteId, (connection, meta) =>
      records.splitKeyRanges(connection, meta, count),
    );
  }

  async readByIds(tableRemoteId: string, remoteIds: string[]): Promise<SourceRecord[]> {
    if (remoteIds.length === 0) return [];
    return this.tables.withTable(tableRemoteId, (connection, meta) =>
      records.readByKeys(connection, meta, remoteIds),
    );
  }

  async readByServiceIds(tableRemoteId: string, serviceIds: string[]): Promise<SourceRecord[]> {
    if (serviceIds.length === 0) return [];
    return this.tables.withTable(tableRemoteId, (connection, meta) =>
      records.readByServiceIds(connection, meta, serviceIds),
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // change capture (polled: there is no `watch`)

  async currentCheckpoint(tableRemoteId: string): Promise<string> {
    const base = this.base();
    return this.tables.withTable(tableRemoteId, (connection) => currentCheckpoint(connection, base));
  }

  async readChanges(tableRemoteId: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch> {
    const base = this.base();
    await this.purgeOccasionally();
    return this.tables.withTable(tableRemoteId, (connection, meta) =>
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
        if (await logExists(connection, base, CHANGE_LOG_TABLE))
          await purgeChangeLog(connection, this.settings.retentionDays);
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
    return this.tables.withMeta(tableRemoteId, (meta, cached) =>
      this.db.transaction(async (connection) => {
        // Own writes are logged only when another reader of the table is registered (change-capture.ts).
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
      creates.createRecords(connection, meta, rowsToCreate, options),
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
  // schema changes and table setup

  async createTable(name: string, fields: FieldSpec[]): Promise<TableInfo> {
    return schema.createTable(this.db, this.tables, name, fields);
  }

  async createField(tableRemoteId: string, field: FieldSpec): Promise<FieldInfo> {
    return schema.createField(this.db, this.tables, tableRemoteId, field);
  }

  async prepareTable(tableRemoteId: string, options: PrepareOptions): Promise<PreparedTable> {
    return setup.prepareTable(this.db, this.tables, this.base(), tableRemoteId, options);
  }

  async unprepareTable(tableRemoteId: string): Promise<void> {
    return setup.unprepareTable(this.db, this.tables, this.base(), tableRemoteId);
  }

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
