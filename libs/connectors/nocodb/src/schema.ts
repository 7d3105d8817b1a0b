/**
 * Table descriptions: the base's tables and each table's columns and views (meta API), cached per connection
 * for a short time (re-read after the connector changes them), found by id (`m...`) or exact title, and the
 * spec 2.7 description of tables (with their grid views) and fields.
 */
import { ConnectorError, type FieldInfo, type TableInfo } from '@lockstep/connectors-core';
import type { NocodbApi } from './db';
import { listTables, type NocodbColumn, type NocodbTable, type NocodbTableSummary, readTable } from './sql';
import { describeField, isListed, SERVICE_ID_FIELD_NAME } from './types';

export const SCHEMA_TTL_MS = 30_000;
/** NocoDB's view type of a grid view (nocodb-sdk `ViewTypes.GRID`): the views whose filters limit a sync. */
const GRID_VIEW = 3;

export class SchemaCache {
  private summaries: { at: number; list: NocodbTableSummary[] } | null = null;
  private readonly tables = new Map<string, { at: number; table: Promise<NocodbTable> }>();

  constructor(
    private readonly api: NocodbApi,
    readonly baseId: string,
    private readonly ttlMs = SCHEMA_TTL_MS,
  ) {}

  async list(): Promise<NocodbTableSummary[]> {
    if (!this.summaries || Date.now() - this.summaries.at > this.ttlMs) {
      this.summaries = { at: Date.now(), list: await listTables(this.api, this.baseId) };
    }
    return this.summaries.list;
  }

  invalidate(tableId?: string): void {
    this.summaries = null;
    if (tableId) this.tables.delete(tableId);
    else this.tables.clear();
  }

  /** The table by id or exact title, or undefined; the list is read again once when it is not in it. */
  async find(idOrTitle: string): Promise<NocodbTable | undefined> {
    const lookup = (list: NocodbTableSummary[]) =>
      list.find((table) => table.id === idOrTitle) ?? list.find((table) => table.title === idOrTitle);
    let summary = lookup(await this.list());
    if (!summary) {
      this.summaries = null;
      summary = lookup(await this.list());
    }
    return summary ? this.byId(summary.id) : undefined;
  }

  async table(idOrTitle: string): Promise<NocodbTable> {
    const table = await this.find(idOrTitle);
    if (!table) {
      throw new ConnectorError('not_found', `Table "${idOrTitle}" does not exist in the base`, {
        appCode: 'ERR_TABLE_NOT_FOUND',
      });
    }
    return table;
  }

  private byId(id: string): Promise<NocodbTable> {
    const cached = this.tables.get(id);
    if (cached && Date.now() - cached.at <= this.ttlMs) return cached.table;
    const table = readTable(this.api, id);
    this.tables.set(id, { at: Date.now(), table });
    table.catch(() => this.tables.delete(id));
    return table;
  }
}

export function tableInfo(table: NocodbTable): TableInfo {
  const grids = (table.views ?? []).filter((view) => view.type === GRID_VIEW);
  return {
    remoteId: table.id,
    name: table.title,
    views: { required: false, options: grids.map((view) => ({ value: view.id, name: view.title })) },
    readOnly: false,
  };
}

export function fieldInfos(table: NocodbTable): FieldInfo[] {
  return table.columns.filter(isListed).map((column) => describeField(column));
}

/** The table's one primary key column (NocoDB's `Id` for the tables it makes). */
export function keyColumn(table: NocodbTable): NocodbColumn {
  const keys = table.columns.filter((column) => column.pk);
  if (keys.length !== 1) {
    throw new ConnectorError(
      'unsupported',
      `Table "${table.title}" has ${keys.length === 0 ? 'no' : 'a composite'} primary key; Lockstep syncs NocoDB tables with one`,
    );
  }
  return keys[0]!;
}

/** The service id field of a table (a single line text "Lockstep ID"), when `prepareTable` added it. */
export function serviceIdColumn(table: NocodbTable): NocodbColumn | undefined {
  return table.columns.find(
    (column) => column.title === SERVICE_ID_FIELD_NAME && column.uidt === 'SingleLineText',
  );
}

/** A column by id or exact title (the engine passes ids; people and tests may pass titles). */
export function columnOf(table: NocodbTable, idOrTitle: string): NocodbColumn {
  const column =
    table.columns.find((candidate) => candidate.id === idOrTitle) ??
    table.columns.find((candidate) => candidate.title === idOrTitle);
  if (!column || !isListed(column)) {
    throw new ConnectorError('not_found', `Field "${idOrTitle}" does not exist in table "${table.title}"`, {
      appCode: 'ERR_FIELD_NOT_FOUND',
    });
  }
  return column;
}

/** The system column NocoDB keeps a record's created or last modified time in. */
export function timeColumn(
  table: NocodbTable,
  uidt: 'CreatedTime' | 'LastModifiedTime',
): NocodbColumn | undefined {
  return (
    table.columns.find((column) => column.uidt === uidt && column.system) ??
    table.columns.find((column) => column.uidt === uidt)
  );
}
