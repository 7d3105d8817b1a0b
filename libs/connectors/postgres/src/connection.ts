/**
 * A PostgreSQL connection: one pool per (credentials, base). The base is a schema; table and field remote
 * ids are the table and column names inside it. Rows are addressed by their key column (the single-column
 * primary key, else the `lockstep_id` service id column that `prepareTable` adds); the remote id is the key's
 * text form. Table descriptions are cached per connection (schema.ts, README "Metadata cache").
 *
 * This class implements the SDK's `Connection` and delegates: records.ts (reads), creates.ts, inserts.ts and
 * writes.ts (writes), schema.ts (descriptions, DDL), change-feed.ts (changes, watch), setup.ts (prepare,
 * unprepare), catalog.ts (discovery), db.ts (the pool). Every call translates driver errors (errors.ts) in
 * `guard`.
 */
import {
  ConnectorError,
  writeOriginTag,
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
import type { Client, ClientConfig, Pool } from 'pg';
import { listBases, listTables, schemaExists, type Queryable } from './catalog';
import { DEFAULT_RETENTION_DAYS } from './change-capture';
import * as feed from './change-feed';
import { decodeCheckpoint, encodeCheckpoint } from './change-feed';
import * as creates from './creates';
import { createPool, queryable, type PgContext } from './db';
import { translatePgError } from './errors';
import { PostgresLiveExport } from './live-export';
import * as records from './records';
import * as schema from './schema';
import * as setup from './setup';
import * as writes from './writes';

export { DEFAULT_METADATA_TTL_MS } from './schema';

/** How often a reader purges old change-log entries. */
const PURGE_EVERY_MS = 10 * 60_000;

export interface PostgresConnectionOptions {
  poolSize?: number;
  writeOrigin?: string;
  metadataTtlMs?: number;
  changeLogRetentionDays?: number;
}

export class PostgresConnection implements Connection {
  readonly type = 'postgres';
  private readonly pool: Pool;
  private readonly watchers = new Set<Client>();
  /** The `lockstep.origin` of this connection's sessions, which its writes carry (change-capture.ts). */
  private readonly origin: string;
  /** What the parts of this connection share (db.ts). */
  private readonly context: PgContext;
  /** Table descriptions by table remote id (this connection's base is fixed). */
  private readonly tables: schema.TableDescriptions;
  /** Change-log entries older than this many days are purged (see purgeOccasionally). */
  private readonly retentionDays: number;
  private lastPurge = 0;

  constructor(
    private readonly clientConfig: ClientConfig,
    private readonly base: string | null,
    private readonly secrets: string[],
    options: PostgresConnectionOptions = {},
  ) {
    this.retentionDays = options.changeLogRetentionDays ?? DEFAULT_RETENTION_DAYS;
    this.origin = writeOriginTag(options.writeOrigin);
    this.pool = createPool(clientConfig, this.origin, options.poolSize);
    this.context = {
      pool: this.pool,
      origin: this.origin,
      schema: () => this.schema(),
      translate: (error, context) => this.translate(error, context),
    };
    this.tables = new schema.TableDescriptions(this.context, options.metadataTtlMs);
  }

  // ---------------------------------------------------------------------------------------------------
  // helpers

  private translate(error: unknown, context?: string): ConnectorError {
    return translatePgError(error, { secrets: this.secrets, context });
  }

  private async guard<T>(action: () => Promise<T>, context?: string): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw this.translate(error, context);
    }
  }

  private get db(): Queryable {
    return queryable(this.pool);
  }

  private schema(): string {
    if (!this.base)
      throw new ConnectorError('invalid_data', 'No base (schema) was chosen for this PostgreSQL connection');
    return this.base;
  }

  // ---------------------------------------------------------------------------------------------------
  // credentials and discovery

  async checkCredentials(): Promise<void> {
    await this.guard(async () => {
      await this.pool.query('SELECT 1');
    });
  }

  async listBases(): Promise<BaseInfo[]> {
    return this.guard(() => listBases(this.db));
  }

  async listTables(): Promise<TableInfo[]> {
    return this.guard(async () => {
      const schema = this.schema();
      if (!(await schemaExists(this.db, schema))) {
        throw new ConnectorError('not_found', `Schema "${schema}" does not exist`, { appCode: '3F000' });
      }
      return listTables(this.db, schema);
    });
  }

  /** Discovery always reads the catalog (and refreshes the cached description). */
  async listFields(tableRemoteId: string): Promise<FieldInfo[]> {
    return this.guard(async () => (await this.tables.freshTable(tableRemoteId)).fields);
  }

  // ---------------------------------------------------------------------------------------------------
  // reads (records.ts)

  async readPage(tableRemoteId: string, options: ReadPageOptions): Promise<RecordPage> {
    const after = options.after ?? null;
    records.checkAfter(after);
    records.checkAfter(options.before ?? null);
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta) => records.readPage(this.pool, meta, options, after)),
    );
  }

  async countRecords(tableRemoteId: string): Promise<number> {
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta) => records.countRecords(this.pool, meta)),
    );
  }

  async splitKeyRanges(tableRemoteId: string, count: number): Promise<KeyRange[]> {
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta) => records.splitKeyRanges(this.pool, meta, count)),
    );
  }

  async readByIds(tableRemoteId: string, remoteIds: string[]): Promise<SourceRecord[]> {
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta) => records.selectByKeys(this.pool, meta, remoteIds)),
    );
  }

  async readByServiceIds(tableRemoteId: string, serviceIds: string[]): Promise<SourceRecord[]> {
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta) => records.selectByServiceIds(this.pool, meta, serviceIds)),
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // change feed (change-feed.ts)

  async currentCheckpoint(_tableRemoteId: string): Promise<string> {
    return this.guard(async () => encodeCheckpoint({ v: 1, s: await feed.snapshot(this.db) }));
  }

  async readChanges(tableRemoteId: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch> {
    const checkpoint = decodeCheckpoint(since);
    const reader: feed.FeedReader = {
      db: this.db,
      schema: () => this.schema(),
      origin: this.origin,
      purge: () => this.purgeOccasionally(),
      readRecords: (remoteIds) =>
        this.tables.withTable(tableRemoteId, (meta) => records.selectByKeys(this.pool, meta, remoteIds)),
    };
    return this.guard(() => feed.readChanges(reader, tableRemoteId, checkpoint, options));
  }

  /**
   * Retention: every PURGE_EVERY_MS a reader deletes change-log entries older than the retention (a bounded
   * batch). Housekeeping only: a failure here does not fail the read.
   */
  private async purgeOccasionally(): Promise<void> {
    if (Date.now() - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    await this.purgeChangeLog().catch(() => undefined);
  }

  /** Deletes up to `batch` change-log entries older than the retention; returns how many. */
  async purgeChangeLog(batch = 10_000): Promise<number> {
    return feed.purgeChangeLog(this.db, this.retentionDays, batch);
  }

  async watch(
    tableRemoteIds: string[],
    onChange: (tableRemoteId: string) => void,
  ): Promise<() => Promise<void>> {
    const client = await feed.listen(this.clientConfig, this.schema(), tableRemoteIds, onChange, (action) =>
      this.guard(action),
    );
    this.watchers.add(client);
    return async () => {
      this.watchers.delete(client);
      client.removeAllListeners('notification');
      await client.end().catch(() => undefined);
    };
  }

  // ---------------------------------------------------------------------------------------------------
  // writes (creates.ts, writes.ts)

  private readonly translateRow = (error: unknown): ConnectorError => this.translate(error);

  async createRecords(tableRemoteId: string, rows: RecordCreate[]): Promise<WriteResult[]> {
    if (rows.length === 0) return [];
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta, cached) =>
        creates.create(this.pool, meta, rows, cached, this.translateRow),
      ),
    );
  }

  async updateRecords(tableRemoteId: string, rows: RecordUpdate[]): Promise<WriteResult[]> {
    if (rows.length === 0) return [];
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta, cached) =>
        writes.update(this.pool, meta, rows, cached, this.translateRow),
      ),
    );
  }

  async deleteRecords(tableRemoteId: string, remoteIds: string[]): Promise<WriteResult[]> {
    if (remoteIds.length === 0) return [];
    return this.guard(() =>
      this.tables.withTable(tableRemoteId, (meta, cached) =>
        writes.deleteRows(this.pool, meta, remoteIds, cached, this.translateRow),
      ),
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // schema changes (schema.ts) and table setup (setup.ts)

  async createTable(name: string, fields: FieldSpec[]): Promise<TableInfo> {
    const definitions = schema.tableDefinitions(name, fields);
    return this.guard(
      () => schema.createTable(this.context, this.tables, name, definitions),
      `Could not create table "${name}"`,
    );
  }

  async createField(tableRemoteId: string, field: FieldSpec): Promise<FieldInfo> {
    const definition = schema.columnDefinition(field);
    return this.guard(
      () => schema.createField(this.context, this.tables, tableRemoteId, field, definition),
      `Could not create field "${field.name}"`,
    );
  }

  async prepareTable(tableRemoteId: string, options: PrepareOptions): Promise<PreparedTable> {
    return this.guard(
      () => setup.prepareTable(this.context, this.tables, tableRemoteId, options),
      `Could not prepare table "${tableRemoteId}" for sync`,
    );
  }

  async unprepareTable(tableRemoteId: string): Promise<void> {
    await this.guard(
      () => setup.unprepareTable(this.context, this.tables, tableRemoteId),
      `Could not remove sync setup from table "${tableRemoteId}"`,
    );
  }

  private exportTarget: PostgresLiveExport | null = null;

  /** Live export destination operations (live-export.ts). */
  get liveExport(): PostgresLiveExport {
    this.exportTarget ??= new PostgresLiveExport({
      pool: this.pool,
      schema: () => this.schema(),
      translate: (error, context) => this.translate(error, context),
      invalidate: (table) => this.tables.invalidate(table),
    });
    return this.exportTarget;
  }

  async close(): Promise<void> {
    this.tables.clear();
    for (const client of [...this.watchers]) await client.end().catch(() => undefined);
    this.watchers.clear();
    await this.pool.end();
  }
}
