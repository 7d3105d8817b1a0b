/**
 * An Airtable connection: one HTTP client (`db.ts`) per (token, base). The base is an Airtable base, given by
 * id (`app...`) or exact name; tables and fields are addressed by Airtable's ids (`tbl...`, `fld...`; exact
 * names are accepted too) and records by theirs (`rec...`). The base schema is cached briefly (`schema.ts`).
 *
 * This class implements the SDK's `Connection` and delegates: records.ts (reads), writes.ts (writes),
 * schema.ts and native-types.ts (descriptions, created tables and fields), change-capture.ts (webhooks),
 * setup.ts (prepare, unprepare), sql.ts (the requests). Every call translates errors (errors.ts) in `guard`.
 */
import {
  type BaseInfo,
  type ChangeBatch,
  type Connection,
  ConnectorError,
  type ExportAbortedError,
  type FieldInfo,
  isExportAborted,
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
import { collectAll } from '@lockstep/connectors-http';
import * as capture from './change-capture';
import type { AirtableApi } from './db';
import { translateAirtableError } from './errors';
import { AirtableExportTarget } from './export-target';
import { checkName, nativeField, orderForCreate } from './native-types';
import * as records from './records';
import { fieldInfos, SchemaCache, tableInfo } from './schema';
import * as setup from './setup';
import * as requests from './sql';
import { describeField } from './types';
import { checkScopes } from './scopes';
import * as writes from './writes';

/**
 * Wake-up probes (the worker's change hub): one every 5 s, answered for every table of the base by one list
 * of its webhooks, so an idle sync spends about 0.2 of the base's 4.75 requests/s on them.
 */
export const CHECKPOINT_POLLING = { intervalMs: 5000, perTable: true } as const;
/** How long one list of webhooks answers checkpoint probes (the tables of one probe share it). */
const WEBHOOK_LIST_TTL_MS = 1000;
/** How long a webhook this connection created may answer the next checkpoint probe without a list. */
const CREATED_WEBHOOK_TTL_MS = 10_000;

export class AirtableConnection implements Connection {
  readonly type = 'airtable';
  readonly checkpointPolling = CHECKPOINT_POLLING;
  private schemaCache: SchemaCache | null = null;
  private webhookList: { at: number; list: Promise<capture.WebhookInfo[]> } | null = null;
  /** Webhooks this connection created, by table: their cursor is known without a list (`createdWebhook`). */
  private readonly createdWebhooks = new Map<string, { at: number; webhook: capture.WebhookInfo }>();

  /** Live export destination in this base (`export-target.ts`); as a source the run reads `readPage`. */
  readonly liveExport: LiveExportTarget;

  constructor(
    private readonly api: AirtableApi,
    private readonly baseRef: string | null,
  ) {
    this.liveExport = guarded(new AirtableExportTarget(api, () => this.schema()), (what, action) =>
      this.guard(what, action),
    );
  }

  checkCredentials(): Promise<void> {
    return this.guard('Checking the token', () => checkScopes(this.api, this.baseRef));
  }

  listBases(): Promise<BaseInfo[]> {
    return this.guard('Listing bases', async () => {
      const bases = await collectAll(requests.basePages(this.api));
      return bases.map((base) => ({ id: base.id, name: base.name }));
    });
  }

  listTables(): Promise<TableInfo[]> {
    return this.guard('Listing tables', async () => (await (await this.schema()).all()).map(tableInfo));
  }

  listFields(table: string): Promise<FieldInfo[]> {
    return this.guard(`Listing fields of "${table}"`, async () =>
      fieldInfos(await (await this.schema()).table(table)),
    );
  }

  readPage(table: string, options: ReadPageOptions): Promise<RecordPage> {
    return this.withTable(table, 'Reading records', (base, info) =>
      records.readPage(this.api, base, info, options),
    );
  }

  countRecords(table: string): Promise<number> {
    return this.withTable(table, 'Counting records', (base, info) =>
      records.countRecords(this.api, base, info),
    );
  }

  readByIds(table: string, remoteIds: string[], options?: { view?: string | null }): Promise<SourceRecord[]> {
    return this.withTable(table, 'Reading records', (base, info) =>
      records.readByIds(this.api, base, info, remoteIds, options?.view ?? null),
    );
  }

  readByServiceIds(table: string, serviceIds: string[]): Promise<SourceRecord[]> {
    return this.withTable(table, 'Reading records by service id', (base, info) =>
      records.readByServiceIds(this.api, base, info, serviceIds),
    );
  }

  /** A table given by id needs no schema read: a probe costs at most the one list of webhooks. */
  currentCheckpoint(table: string): Promise<string> {
    return this.guard(`Reading the change position of "${table}"`, async () => {
      const schema = await this.schema();
      const tableId = /^tbl[A-Za-z0-9]+$/.test(table) ? table : (await schema.table(table)).id;
      return capture.checkpointOf(await this.webhookOf(schema.baseId, tableId));
    });
  }

  /**
   * The table's webhook from a list at most `WEBHOOK_LIST_TTL_MS` old; a table whose webhook the list lacks
   * lists again, so a webhook installed since is never missed (a cursor read a moment ago is only earlier,
   * which reads a payload twice at worst).
   */
  private async webhookOf(baseId: string, tableId: string): Promise<capture.WebhookInfo | undefined> {
    // The checkpoint that follows `prepareTable` (the engine's next call) needs no list of its own; once only,
    // so later probes see the cursor move.
    const created = this.createdWebhooks.get(tableId);
    this.createdWebhooks.delete(tableId);
    if (created && Date.now() - created.at < CREATED_WEBHOOK_TTL_MS) return created.webhook;
    const cached = this.webhookList;
    if (cached && Date.now() - cached.at < WEBHOOK_LIST_TTL_MS) {
      const hit = capture.webhookOf(await cached.list, tableId);
      if (hit) return hit;
    }
    const fresh = { at: Date.now(), list: capture.listWebhooks(this.api, baseId) };
    this.webhookList = fresh;
    try {
      return capture.webhookOf(await fresh.list, tableId);
    } catch (error) {
      if (this.webhookList === fresh) this.webhookList = null;
      throw error;
    }
  }

  readChanges(table: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch> {
    return this.withTable(table, 'Reading changes', (base, info) =>
      capture.readChanges(this.api, base, info, since, options),
    );
  }

  createRecords(table: string, rows: RecordCreate[]): Promise<WriteResult[]> {
    return this.withWrite(table, 'Creating records', rows, (base, info) =>
      writes.createRecords(this.api, base, info, rows),
    );
  }

  updateRecords(table: string, rows: RecordUpdate[]): Promise<WriteResult[]> {
    return this.withWrite(table, 'Updating records', rows, (base, info) =>
      writes.updateRecords(this.api, base, info, rows),
    );
  }

  deleteRecords(table: string, remoteIds: string[]): Promise<WriteResult[]> {
    return this.withWrite(table, 'Deleting records', [], (base, info) =>
      writes.deleteRecords(this.api, base, info, remoteIds),
    );
  }

  createTable(name: string, fields: FieldSpec[]): Promise<TableInfo> {
    return this.guard(`Creating table "${name}"`, async () => {
      checkName(name, 'Table');
      fields.forEach((field) => checkName(field.name, 'Field'));
      const schema = await this.schema();
      const existing = await schema.find(name);
      if (existing) return tableInfo(existing);
      const tables = await schema.all();
      // Every created table has the service id field, so creates into it are idempotent from the start.
      const bodies = [
        ...orderForCreate(fields.map((field) => nativeField(field, tables))),
        { ...setup.SERVICE_ID_FIELD },
      ];
      const created = await requests.createTable(this.api, schema.baseId, name, bodies);
      schema.invalidate();
      return tableInfo(created);
    });
  }

  createField(table: string, spec: FieldSpec): Promise<FieldInfo> {
    return this.guard(`Creating field "${spec.name}"`, async () => {
      checkName(spec.name, 'Field');
      const schema = await this.schema();
      const info = await schema.table(table);
      const existing = info.fields.find((field) => field.name === spec.name);
      if (existing) return describeField(existing, info.primaryFieldId);
      const body = nativeField(spec, await schema.all());
      const created = await requests.createField(this.api, schema.baseId, info.id, body);
      schema.invalidate();
      return describeField(created, info.primaryFieldId);
    });
  }

  prepareTable(table: string, options: PrepareOptions): Promise<PreparedTable> {
    return this.guard(`Preparing table "${table}"`, async () => {
      const schema = await this.schema();
      return setup.prepareTable(this.api, schema, table, options, {
        find: (tableId) => this.webhookOf(schema.baseId, tableId),
        created: (webhook) =>
          this.createdWebhooks.set(webhook.specification.options!.filters!.recordChangeScope!, {
            at: Date.now(),
            webhook,
          }),
      });
    });
  }

  unprepareTable(table: string): Promise<void> {
    return this.guard(`Removing the setup of table "${table}"`, async () => {
      // The webhooks this connection knows of may be gone now.
      this.webhookList = null;
      this.createdWebhooks.clear();
      await setup.unprepareTable(this.api, await this.schema(), table);
    });
  }

  async close(): Promise<void> {
    // Nothing to release: the HTTP client keeps no connection of its own past a request.
  }

  /** The base's schema cache, resolving a base given by name to its id (once). */
  private async schema(): Promise<SchemaCache> {
    if (this.schemaCache) return this.schemaCache;
    if (!this.baseRef) throw new ConnectorError('not_found', 'No Airtable base was given');
    const baseId = await this.resolveBase(this.baseRef);
    this.schemaCache = new SchemaCache(this.api, baseId);
    return this.schemaCache;
  }

  /**
   * A base by id (`app...`) or exact name. Airtable answers a base the token cannot see with the same 403 as a
   * missing scope, so the list of bases tells a base that is not there (`not_found`) from a scope.
   */
  private async resolveBase(ref: string): Promise<string> {
    const bases = await collectAll(requests.basePages(this.api));
    const found = bases.find((base) => base.id === ref) ?? bases.find((base) => base.name === ref);
    if (!found) {
      throw new ConnectorError('not_found', `The base "${ref}" does not exist or the token cannot reach it`, {
        appCode: 'INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND',
      });
    }
    return found.id;
  }

  private withTable<T>(
    table: string,
    what: string,
    action: (baseId: string, info: requests.AirtableTable) => Promise<T>,
  ): Promise<T> {
    return this.guard(`${what} of "${table}"`, async () => {
      const schema = await this.schema();
      return action(schema.baseId, await schema.table(table));
    });
  }

  /**
   * A write through the schema cache's `writing` (no schema read by time while writes follow each other); a
   * row naming a field the cached table lacks reads the schema again first (the field may be new).
   */
  private withWrite(
    table: string,
    what: string,
    rows: { values: Record<string, unknown> }[],
    action: (baseId: string, info: requests.AirtableTable) => Promise<WriteResult[]>,
  ): Promise<WriteResult[]> {
    return this.guard(`${what} of "${table}"`, async () => {
      const schema = await this.schema();
      return schema.writing(async () => {
        let info = await schema.table(table);
        const known = (key: string) => info.fields.some((field) => field.id === key || field.name === key);
        if (!rows.every((row) => Object.keys(row.values).every(known))) {
          schema.invalidate();
          info = await schema.table(table);
        }
        return action(schema.baseId, info);
      });
    });
  }

  private async guard<T>(context: string, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw translateAirtableError(error, { secrets: this.api.secrets, context });
    }
  }
}

/** The target's calls with Airtable's errors translated, as every connection call is; an abort stays one. */
function guarded(
  target: AirtableExportTarget,
  translate: <T>(what: string, action: () => Promise<T>) => Promise<T>,
): LiveExportTarget {
  const guard = async <T>(what: string, action: () => Promise<T>): Promise<T> => {
    let aborted: ExportAbortedError | null = null;
    try {
      return await translate(what, () =>
        action().catch((error: unknown) => {
          if (isExportAborted(error)) aborted = error;
          throw error;
        }),
      );
    } catch (error) {
      throw aborted ?? error;
    }
  };
  return {
    provisionExportTable: (spec) =>
      guard(`Setting up export table "${spec.name}"`, () => target.provisionExportTable(spec)),
    inspectExportTable: (name) =>
      guard(`Reading export table "${name}"`, () => target.inspectExportTable(name)),
    readExportHashes: (name, options) =>
      guard(`Reading export table "${name}"`, () => target.readExportHashes(name, options)),
    scanExportHashes: (name, onRow, options) =>
      guard(`Reading export table "${name}"`, () => target.scanExportHashes(name, onRow, options)),
    writeExportBatch: (name, batch, options) =>
      guard(`Writing export table "${name}"`, () => target.writeExportBatch(name, batch, options)),
  };
}
