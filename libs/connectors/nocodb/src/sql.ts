/**
 * The request helpers: one function per NocoDB endpoint the connector uses (path, query, body shape), each
 * naming its documentation page (https://nocodb.com/docs, "REST APIs": the meta and data APIs v2; the shapes
 * were checked against NocoDB 0.301 running in the tests, `tools/test/nocodb`). An app connector's `sql.ts`.
 */
import type { NocodbApi } from './db';

/** NocoDB's own cap on `limit` (its `DB_QUERY_LIMIT_MAX` default). A server set lower answers fewer rows. */
export const MAX_PAGE_SIZE = 1000;
/** Records per write request: NocoDB refuses more from an API token (`NC_DATA_PAYLOAD_LIMIT`, default 100). */
export const MAX_BATCH = 100;

export interface NocodbColumn {
  id: string;
  title: string;
  column_name?: string;
  uidt: string;
  dt?: string | null;
  dtxp?: string | null;
  pk?: boolean | null;
  pv?: boolean | null;
  ai?: boolean | null;
  rqd?: boolean | null;
  system?: boolean | null;
  meta?: Record<string, unknown> | string | null;
  colOptions?: Record<string, unknown> | null;
}

export interface NocodbView {
  id: string;
  title: string;
  type: number;
}

export interface NocodbTable {
  id: string;
  title: string;
  table_name?: string;
  base_id?: string;
  columns: NocodbColumn[];
  views?: NocodbView[];
}

export interface NocodbTableSummary {
  id: string;
  title: string;
  table_name?: string;
  type?: string;
}

export type NocodbRow = Record<string, unknown>;

export interface RowPage {
  list: NocodbRow[];
  pageInfo?: { totalRows?: number; isLastPage?: boolean; pageSize?: number };
  /** NocoDB's clock when it answered (`Date` header, to the second). */
  serverTime: number | null;
}

const enc = encodeURIComponent;

/** Meta API: list bases (https://nocodb.com/docs, "Meta APIs" > Bases). */
export async function listBases(api: NocodbApi): Promise<{ id: string; title: string }[]> {
  const page = await api.get<{ list: { id: string; title: string }[] }>('/api/v2/meta/bases', {
    context: 'Listing bases',
  });
  return page.list;
}

/** Meta API: the tables of a base (without their columns). */
export async function listTables(api: NocodbApi, baseId: string): Promise<NocodbTableSummary[]> {
  const page = await api.get<{ list: NocodbTableSummary[] }>(`/api/v2/meta/bases/${enc(baseId)}/tables`, {
    context: 'Listing tables',
  });
  return page.list.filter((table) => table.type === undefined || table.type === 'table');
}

/** Meta API: a table with its columns and views. */
export function readTable(api: NocodbApi, tableId: string): Promise<NocodbTable> {
  return api.get<NocodbTable>(`/api/v2/meta/tables/${enc(tableId)}`, { context: 'Reading the table' });
}

export interface ColumnBody {
  title: string;
  column_name?: string;
  uidt: string;
  dtxp?: string;
  meta?: Record<string, unknown>;
  /** Select options. */
  colOptions?: { options: { title: string }[] };
  /** Links: the linked table and the relation's kind. */
  childId?: string;
  parentId?: string;
  type?: 'hm' | 'mm' | 'bt' | 'oo';
}

/** Meta API: create a table (NocoDB adds its `Id`, CreatedAt, UpdatedAt and system fields). */
export async function createTable(api: NocodbApi, baseId: string, title: string, columns: ColumnBody[]) {
  const response = await api.request<NocodbTable>({
    method: 'POST',
    path: `/api/v2/meta/bases/${enc(baseId)}/tables`,
    json: { title, table_name: title, columns },
    context: `Creating table "${title}"`,
  });
  return response.data;
}

/** Meta API: create a column; answers the table with its columns. */
export async function createColumn(api: NocodbApi, tableId: string, body: ColumnBody) {
  const response = await api.request<NocodbTable>({
    method: 'POST',
    path: `/api/v2/meta/tables/${enc(tableId)}/columns`,
    json: body,
    context: `Creating field "${body.title}"`,
  });
  return response.data;
}

export interface ListOptions {
  offset?: number;
  limit?: number;
  /** Field titles. */
  fields?: string[];
  sort?: string;
  where?: string;
  viewId?: string | null;
}

function serverTimeOf(headers: Record<string, string | string[] | undefined>): number | null {
  const value = headers['date'];
  const parsed = Date.parse(Array.isArray(value) ? value[0]! : (value ?? ''));
  return Number.isNaN(parsed) ? null : parsed;
}

/** Data API v2: list records (`limit` / `offset`, `where`, `sort`, `fields`, `viewId`). */
export async function listRows(api: NocodbApi, tableId: string, options: ListOptions): Promise<RowPage> {
  const response = await api.request<{ list: NocodbRow[]; pageInfo?: RowPage['pageInfo'] }>({
    method: 'GET',
    path: `/api/v2/tables/${enc(tableId)}/records`,
    query: {
      offset: options.offset ?? 0,
      limit: Math.min(options.limit ?? MAX_PAGE_SIZE, MAX_PAGE_SIZE),
      fields: options.fields?.join(','),
      sort: options.sort,
      where: options.where,
      viewId: options.viewId ?? undefined,
    },
    context: 'Reading records',
  });
  return { ...response.data, serverTime: serverTimeOf(response.headers) };
}

/** Data API v2: count records (`where`, `viewId`). */
export async function countRows(api: NocodbApi, tableId: string, viewId?: string | null): Promise<number> {
  const data = await api.get<{ count: number }>(`/api/v2/tables/${enc(tableId)}/records/count`, {
    query: { viewId: viewId ?? undefined },
    context: 'Counting records',
  });
  return Number(data.count);
}

/** Data API v2: create records (at most `MAX_BATCH`); answers their primary keys in order. */
export async function insertRows(api: NocodbApi, tableId: string, rows: NocodbRow[]): Promise<NocodbRow[]> {
  const response = await api.request<NocodbRow[]>({
    method: 'POST',
    path: `/api/v2/tables/${enc(tableId)}/records`,
    json: rows,
    context: 'Creating records',
  });
  return response.data;
}

/** Data API v2: update records (each names its primary key; at most `MAX_BATCH`). */
export async function updateRows(api: NocodbApi, tableId: string, rows: NocodbRow[]): Promise<void> {
  await api.request({
    method: 'PATCH',
    path: `/api/v2/tables/${enc(tableId)}/records`,
    json: rows,
    // Setting the same values twice leaves the same record: safe to send again after a timeout.
    idempotent: true,
    context: 'Updating records',
  });
}

/** Data API v2: delete records by primary key (at most `MAX_BATCH`). */
export async function deleteRows(api: NocodbApi, tableId: string, keys: NocodbRow[]): Promise<void> {
  await api.request({
    method: 'DELETE',
    path: `/api/v2/tables/${enc(tableId)}/records`,
    json: keys,
    context: 'Deleting records',
  });
}

/** Data API v2: the records linked to `rowId` through the link field `columnId` (their keys only). */
export async function listLinks(
  api: NocodbApi,
  tableId: string,
  columnId: string,
  rowId: string,
  keyTitle: string,
  offset = 0,
): Promise<{ list: NocodbRow[]; pageInfo?: RowPage['pageInfo'] }> {
  return api.get(`/api/v2/tables/${enc(tableId)}/links/${enc(columnId)}/records/${enc(rowId)}`, {
    query: { fields: keyTitle, limit: MAX_PAGE_SIZE, offset },
    context: 'Reading linked records',
  });
}

/** Data API v2: link (`POST`) or unlink (`DELETE`) records to `rowId` through `columnId`. */
export async function changeLinks(
  api: NocodbApi,
  method: 'POST' | 'DELETE',
  tableId: string,
  columnId: string,
  rowId: string,
  targets: NocodbRow[],
): Promise<void> {
  await api.request({
    method,
    path: `/api/v2/tables/${enc(tableId)}/links/${enc(columnId)}/records/${enc(rowId)}`,
    json: targets,
    idempotent: true,
    context: method === 'POST' ? 'Linking records' : 'Unlinking records',
  });
}

export interface NocodbHook {
  id: string;
  title: string;
  active?: boolean;
  notification?: string | Record<string, unknown>;
}

/** Meta API: the webhooks of a table. */
export async function listHooks(api: NocodbApi, tableId: string): Promise<NocodbHook[]> {
  const page = await api.get<{ list: NocodbHook[] }>(`/api/v2/meta/tables/${enc(tableId)}/hooks`, {
    context: 'Listing webhooks',
  });
  return page.list;
}

/** Meta API: create a webhook (version v3: one hook for insert, update and delete, bulk included). */
export async function createHook(api: NocodbApi, tableId: string, body: Record<string, unknown>) {
  const response = await api.request<NocodbHook>({
    method: 'POST',
    path: `/api/v2/meta/tables/${enc(tableId)}/hooks`,
    json: body,
    context: 'Creating the webhook',
  });
  return response.data;
}

export async function deleteHook(api: NocodbApi, hookId: string): Promise<void> {
  await api.request({
    method: 'DELETE',
    path: `/api/v2/meta/hooks/${enc(hookId)}`,
    context: 'Deleting the webhook',
  });
}

/** A value in a `where` clause: NocoDB splits on commas and parentheses, so such values cannot be matched. */
export function whereValue(value: string): string | null {
  return /[,()~]/.test(value) ? null : value;
}
