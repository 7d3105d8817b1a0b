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

export class SchemaCache {
  private tables: AirtableTable[] | null = null;
  private readAt = 0;

  constructor(
    private readonly api: AirtableApi,
    readonly baseId: string,
    private readonly ttlMs = SCHEMA_TTL_MS,
  ) {}

  async all(): Promise<AirtableTable[]> {
    if (!this.tables || Date.now() - this.readAt > this.ttlMs) {
      this.tables = await baseSchema(this.api, this.baseId);
      this.readAt = Date.now();
    }
    return this.tables;
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
