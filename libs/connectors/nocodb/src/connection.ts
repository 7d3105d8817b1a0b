/**
 * A NocoDB connection: one HTTP client (`db.ts`) per (server, token, base). The base is a NocoDB base, given
 * by id (`p...`) or exact title; tables and fields are addressed by NocoDB's ids (`m...`, `c...`; exact titles
 * are accepted too) and records by their primary key. Table descriptions are cached briefly (`schema.ts`).
 *
 * This class implements the SDK's `Connection` and delegates: records.ts (reads), writes.ts and links.ts
 * (writes), schema.ts, types.ts and native-types.ts (descriptions, created tables and fields),
 * change-capture.ts (the feed and the probes), setup.ts (service id field, webhooks), sql.ts (the requests).
 * Every call translates errors (errors.ts) in `guard`.
 */
import {
  type BaseInfo,
  type ChangeBatch,
  type ChangeSignals,
  type Connection,
  ConnectorError,
  type FieldInfo,
  type FieldSpec,
  type LiveExportTarget,
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
import * as capture from './change-capture';
import type { NocodbApi } from './db';
import { translateNocodbError } from './errors';
import { NocodbExportTarget, guardedTarget } from './export-target';
import { checkName, nativeField } from './native-types';
import * as records from './records';
import { fieldInfos, SchemaCache, tableInfo } from './schema';
import * as setup from './setup';
import * as requests from './sql';
import { describeField } from './types';
import * as writes from './writes';

export interface ConnectionSettings {
  hooks: setup.HookSettings;
  pollMs: number;
  signals: ChangeSignals | null;
}

export class NocodbConnection implements Connection {
  readonly type = 'nocodb';
  private schemaCache: SchemaCache | null = null;
  private readonly stops = new Set<() => Promise<void>>();
  readonly liveExport: LiveExportTarget;

  constructor(
    private readonly api: NocodbApi,
    private readonly baseRef: string | null,
    private readonly settings: ConnectionSettings,
  ) {
    this.liveExport = guardedTarget(new NocodbExportTarget(api, () => this.schema()), (what, action) =>
      this.guard(what, action),
    );
  }

  checkCredentials(): Promise<void> {
    return this.guard('Checking the API token', async () => {
      await requests.listBases(this.api);
      if (this.baseRef) await this.schema();
    });
  }

  listBases(): Promise<BaseInfo[]> {
    return this.guard('Listing bases', async () =>
      (await requests.listBases(this.api)).map((base) => ({ id: base.id, name: base.title })),
    );
  }

  listTables(): Promise<TableInfo[]> {
    return this.guard('Listing tables', async () => {
      const schema = await this.schema();
      // Discovery reads afresh: tables, fields and views added in NocoDB a moment ago are listed.
      schema.invalidate();
      const tables = [];
      for (const summary of await schema.list()) tables.push(tableInfo(await schema.table(summary.id)));
      return tables;
    });
  }

  listFields(table: string): Promise<FieldInfo[]> {
    return this.guard(`Listing fields of "${table}"`, async () => {
      const schema = await this.schema();
      return fieldInfos(await schema.table(table));
    });
  }

  readPage(table: string, options: ReadPageOptions): Promise<RecordPage> {
    return this.withTable(table, 'Reading records', (context) => records.readPage(context, options));
  }

  countRecords(table: string): Promise<number> {
    return this.withTable(table, 'Counting records', (context) => records.countRecords(context));
  }

  readByIds(table: string, remoteIds: string[], options?: { view?: string | null }): Promise<SourceRecord[]> {
    return this.withTable(table, 'Reading records', (context) =>
      records.readByIds(context, remoteIds, options?.view ?? null),
    );
  }

  readByServiceIds(table: string, serviceIds: string[]): Promise<SourceRecord[]> {
    return this.withTable(table, 'Reading records by service id', (context) =>
      records.readByServiceIds(context, serviceIds),
    );
  }

  currentCheckpoint(table: string): Promise<string> {
    return this.withTable(table, 'Reading the change position', (context) =>
      capture.currentCheckpoint(this.captureContext(context)),
    );
  }

  readChanges(table: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch> {
    return this.withTable(table, 'Reading changes', (context) =>
      capture.readChanges(this.captureContext(context), since, options),
    );
  }

  /**
   * Wakes `onChange` for a table when its webhook calls (through the signal channel) and when its probe
   * (`capture.probe`, every `pollMs`) sees it changed. A probe that fails wakes it too: the runner finds out.
   */
  async watch(tables: string[], onChange: (table: string) => void): Promise<() => Promise<void>> {
    const schema = await this.guard('Watching tables', () => this.schema());
    const stops: (() => Promise<void>)[] = [];
    const last = new Map<string, string>();
    for (const table of tables) {
      const info = await this.guard('Watching tables', () => schema.table(table));
      if (this.settings.signals) {
        const channel = capture.signalChannel(capture.channelOf(this.api.settings.baseUrl, info.id));
        stops.push(await this.settings.signals.subscribe(channel, () => onChange(table)));
      }
    }
    let busy = false;
    const poll = async () => {
      if (busy) return;
      busy = true;
      try {
        for (const table of tables) {
          const signature = await this.withTable(table, 'Probing', (context) => capture.probe(context)).catch(
            () => null,
          );
          if (signature === null || (last.has(table) && last.get(table) !== signature)) onChange(table);
          if (signature !== null) last.set(table, signature);
        }
      } finally {
        busy = false;
      }
    };
    await poll();
    const timer = setInterval(() => void poll(), this.settings.pollMs);
    timer.unref();
    const stop = async () => {
      clearInterval(timer);
      this.stops.delete(stop);
      await Promise.all(stops.map((unsubscribe) => unsubscribe().catch(() => undefined)));
    };
    this.stops.add(stop);
    return stop;
  }

  createRecords(table: string, rows: RecordCreate[]): Promise<WriteResult[]> {
    return this.withTable(table, 'Creating records', (context) => writes.createRecords(context, rows));
  }

  updateRecords(table: string, rows: RecordUpdate[]): Promise<WriteResult[]> {
    return this.withTable(table, 'Updating records', (context) => writes.updateRecords(context, rows));
  }

  deleteRecords(table: string, remoteIds: string[]): Promise<WriteResult[]> {
    return this.withTable(table, 'Deleting records', (context) => writes.deleteRecords(context, remoteIds));
  }

  createTable(name: string, fields: FieldSpec[]): Promise<TableInfo> {
    return this.guard(`Creating table "${name}"`, async () => {
      checkName(name, 'Table');
      fields.forEach((field) => checkName(field.name, 'Field'));
      const schema = await this.schema();
      const existing = await schema.find(name);
      if (existing) return tableInfo(existing);
      // Every created table has the service id field, so creates into it are idempotent from the start.
      const bodies = [...fields.map((field) => nativeField(field)), { ...setup.SERVICE_ID_COLUMN }];
      const created = await requests.createTable(this.api, schema.baseId, name, bodies);
      schema.invalidate();
      return tableInfo(await schema.table(created.id));
    });
  }

  createField(table: string, spec: FieldSpec): Promise<FieldInfo> {
    return this.guard(`Creating field "${spec.name}"`, async () => {
      checkName(spec.name, 'Field');
      const schema = await this.schema();
      const info = await schema.table(table);
      const existing = info.columns.find((column) => column.title === spec.name);
      if (existing) return describeField(existing);
      await requests.createColumn(this.api, info.id, nativeField(spec));
      schema.invalidate(info.id);
      const created = (await schema.table(info.id)).columns.find((column) => column.title === spec.name);
      if (!created) throw new ConnectorError('transient', `NocoDB did not add the field "${spec.name}"`);
      return describeField(created);
    });
  }

  prepareTable(table: string, options: PrepareOptions): Promise<PreparedTable> {
    return this.guard(`Preparing table "${table}"`, async () =>
      setup.prepareTable(this.api, await this.schema(), table, options, this.settings.hooks),
    );
  }

  unprepareTable(table: string): Promise<void> {
    return this.guard(`Removing the setup of table "${table}"`, async () =>
      setup.unprepareTable(this.api, await this.schema(), table),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.stops].map((stop) => stop()));
  }

  private captureContext(context: records.ReadContext): capture.CaptureContext {
    return {
      ...context,
      signals: this.settings.signals,
      channel: capture.channelOf(this.api.settings.baseUrl, context.table.id),
    };
  }

  /** The base's schema cache, resolving a base given by title to its id (once). */
  private async schema(): Promise<SchemaCache> {
    if (this.schemaCache) return this.schemaCache;
    if (!this.baseRef) throw new ConnectorError('not_found', 'No NocoDB base was given');
    const bases = await requests.listBases(this.api);
    const found =
      bases.find((base) => base.id === this.baseRef) ?? bases.find((base) => base.title === this.baseRef);
    if (!found) {
      throw new ConnectorError(
        'not_found',
        `The base "${this.baseRef}" does not exist or the token cannot reach it`,
        {
          appCode: 'ERR_BASE_NOT_FOUND',
        },
      );
    }
    this.schemaCache = new SchemaCache(this.api, found.id);
    return this.schemaCache;
  }

  private withTable<T>(
    table: string,
    what: string,
    action: (context: records.ReadContext) => Promise<T>,
  ): Promise<T> {
    return this.guard(`${what} of "${table}"`, async () => {
      const schema = await this.schema();
      return action({ api: this.api, schema, table: await schema.table(table) });
    });
  }

  private async guard<T>(context: string, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw translateNocodbError(error, { secrets: this.api.secrets, context });
    }
  }
}
