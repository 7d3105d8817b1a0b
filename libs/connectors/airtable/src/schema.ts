/**
 * Table descriptions: the base schema (`GET /v0/meta/bases/{baseId}/tables`) cached per connection for a
 * short time (re-read after the connector changes it), tables found by id (`tbl...`) or exact name, and the
 * spec 2.7 description of tables (with their views) and fields.
 */
import { ConnectorError, type FieldInfo, type TableInfo } from '@lockstep/connectors-core';
import type { AirtableApi } from './db';
import { type AirtableField, type AirtableTable, baseSchema } from './sql';
import { describeField, SERVICE_ID_FIELD_NAME } from './types';

export const SCHEMA_TTL_MS = 30_000;
/** The oldest schema a stream of writes keeps using (see `SchemaCache.writing`). */
export const SCHEMA_WRITING_TTL_MS = 300_000;
/** A write that began within this time of the last one's end continues the stream. */
const WRITE_STREAM_GAP_MS = 1000;

export class SchemaCache {
  private tables: AirtableTable[] | null = null;
  private readAt = 0;
  private writes = 0;
  private lastWriteEnd = 0;

  constructor(
    private readonly api: AirtableApi,
    readonly baseId: string,
    private readonly ttlMs = SCHEMA_TTL_MS,
  ) {}

  async all(): Promise<AirtableTable[]> {
    const age = Date.now() - this.readAt;
    const streaming = this.writes > 0 || Date.now() - this.lastWriteEnd < WRITE_STREAM_GAP_MS;
    if (!this.tables || age > (streaming ? SCHEMA_WRITING_TTL_MS : this.ttlMs)) {
      this.tables = await baseSchema(this.api, this.baseId);
      this.readAt = Date.now();
    }
    return this.tables;
  }

  /**
   * Runs a write. While writes follow each other (one in flight, or the last ended under a second ago: an
   * initial sync's pages), the schema is not read again by time before `SCHEMA_WRITING_TTL_MS`: that read
   * would take a request of the base's budget from the writes. A write Airtable refuses for a field the schema
   * does not describe as it is (unknown, or of another type now) drops it, so the next call reads it again.
   */
  async writing<T extends { ok: boolean; error?: { appCode?: string } }[]>(
    write: () => Promise<T>,
  ): Promise<T> {
    this.writes += 1;
    try {
      const results = await write();
      if (results.some((result) => !result.ok && STALE_SCHEMA_CODES.has(result.error?.appCode ?? '')))
        this.invalidate();
      return results;
    } catch (error) {
      if (error instanceof ConnectorError && STALE_SCHEMA_CODES.has(error.appCode ?? '')) this.invalidate();
      throw error;
    } finally {
      this.writes -= 1;
      this.lastWriteEnd = Date.now();
    }
  }

  invalidate(): void {
    this.tables = null;
  }

  /** The table by id or exact name, read again once when it is not in the cached schema. */
  async find(idOrName: string): Promise<AirtableTable | undefined> {
    const lookup = (tables: AirtableTable[]) =>
      tables.find((table) => table.id === idOrName) ?? tables.find((table) => table.name === idOrName);
    const cached = lookup(await this.all());
    if (cached) return cached;
    this.invalidate();
    return lookup(await this.all());
  }

  async table(idOrName: string): Promise<AirtableTable> {
    const table = await this.find(idOrName);
    if (!table) throw new ConnectorError('not_found', `Table "${idOrName}" does not exist in the base`);
    return table;
  }
}

/** Airtable's refusals of a write that a schema read since would have avoided. */
const STALE_SCHEMA_CODES = new Set(['UNKNOWN_FIELD_NAME', 'INVALID_VALUE_FOR_COLUMN']);

export function tableInfo(table: AirtableTable): TableInfo {
  return {
    remoteId: table.id,
    name: table.name,
    views: { required: false, options: table.views.map((view) => ({ value: view.id, name: view.name })) },
    readOnly: false,
  };
}

export function fieldInfos(table: AirtableTable): FieldInfo[] {
  return table.fields.map((field) => describeField(field, table.primaryFieldId));
}

/** The service id field of a table (a single line text "Lockstep ID"), when `prepareTable` added it. */
export function serviceIdField(table: AirtableTable): AirtableField | undefined {
  return table.fields.find(
    (field) => field.name === SERVICE_ID_FIELD_NAME && field.type === 'singleLineText',
  );
}

/** A field by id or exact name (the engine passes ids; people and tests may pass names). */
export function fieldOf(table: AirtableTable, idOrName: string): AirtableField {
  const field =
    table.fields.find((candidate) => candidate.id === idOrName) ??
    table.fields.find((candidate) => candidate.name === idOrName);
  if (!field) {
    throw new ConnectorError('not_found', `Field "${idOrName}" does not exist in table "${table.name}"`, {
      appCode: 'UNKNOWN_FIELD_NAME',
    });
  }
  return field;
}
