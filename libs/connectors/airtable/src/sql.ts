/**
 * The request helpers: one function per Airtable Web API endpoint the connector uses (path, query, body
 * shape), each naming its documentation page, and the paging over them. An app connector's `sql.ts`.
 */
import { paginate } from '@lockstep/connectors-http';
import type { AirtableApi } from './db';

export const MAX_PAGE_SIZE = 100;
export const MAX_BATCH = 10;

export interface AirtableField {
  id: string;
  name: string;
  type: string;
  options?: Record<string, unknown>;
  description?: string;
}

export interface AirtableView {
  id: string;
  name: string;
  type: string;
}

export interface AirtableTable {
  id: string;
  name: string;
  primaryFieldId: string;
  fields: AirtableField[];
  views: AirtableView[];
}

export interface AirtableRecord {
  id: string;
  createdTime: string;
  fields: Record<string, unknown>;
}

const enc = encodeURIComponent;

/** https://airtable.com/developers/web/api/get-user-id-scopes */
export function whoami(api: AirtableApi) {
  return api.get<{ id: string; scopes?: string[] }>('/v0/meta/whoami', { context: 'Checking the token' });
}

/** https://airtable.com/developers/web/api/list-bases (paged by `offset`). */
export function basePages(api: AirtableApi) {
  return paginate<{ id: string; name: string }>(async (offset) => {
    const page = await api.get<{ bases: { id: string; name: string }[]; offset?: string }>('/v0/meta/bases', {
      query: { offset },
      context: 'Listing bases',
    });
    return { items: page.bases, next: page.offset };
  });
}

/** https://airtable.com/developers/web/api/get-base-schema */
export async function baseSchema(api: AirtableApi, baseId: string): Promise<AirtableTable[]> {
  const schema = await api.get<{ tables: AirtableTable[] }>(`/v0/meta/bases/${enc(baseId)}/tables`, {
    baseId,
    context: 'Reading the base schema',
  });
  return schema.tables;
}

export interface ListOptions {
  offset?: string | null;
  pageSize?: number;
  fields?: string[];
  view?: string | null;
  filterByFormula?: string;
}

/** https://airtable.com/developers/web/api/list-records (values keyed by field id). */
export function listRecords(api: AirtableApi, baseId: string, tableId: string, options: ListOptions) {
  return api.get<{ records: AirtableRecord[]; offset?: string }>(`/v0/${enc(baseId)}/${enc(tableId)}`, {
    baseId,
    query: {
      returnFieldsByFieldId: true,
      pageSize: Math.min(options.pageSize ?? MAX_PAGE_SIZE, MAX_PAGE_SIZE),
      offset: options.offset ?? undefined,
      view: options.view ?? undefined,
      filterByFormula: options.filterByFormula,
      'fields[]': options.fields,
    },
    context: 'Reading records',
  });
}

export interface WriteItem {
  id?: string;
  fields: Record<string, unknown>;
}

/** https://airtable.com/developers/web/api/create-records (at most 10). */
export async function createRecords(api: AirtableApi, baseId: string, tableId: string, items: WriteItem[]) {
  const response = await api.request<{ records: AirtableRecord[] }>({
    method: 'POST',
    path: `/v0/${enc(baseId)}/${enc(tableId)}`,
    baseId,
    json: { records: items, returnFieldsByFieldId: true, typecast: false },
    context: 'Creating records',
  });
  return response.data.records;
}

/**
 * https://airtable.com/developers/web/api/update-multiple-records (PATCH: the fields given change, the
 * others stay). With `mergeOn`, an upsert: a record whose merge fields hold the same values is updated,
 * else one is created; sending it twice writes one record, so it is retried like a read.
 */
export async function patchRecords(
  api: AirtableApi,
  baseId: string,
  tableId: string,
  items: WriteItem[],
  mergeOn?: string[],
) {
  const response = await api.request<{ records: AirtableRecord[] }>({
    method: 'PATCH',
    path: `/v0/${enc(baseId)}/${enc(tableId)}`,
    baseId,
    json: {
      records: items,
      returnFieldsByFieldId: true,
      typecast: false,
      ...(mergeOn ? { performUpsert: { fieldsToMergeOn: mergeOn } } : {}),
    },
    idempotent: mergeOn !== undefined,
    context: mergeOn ? 'Creating records' : 'Updating records',
  });
  return response.data.records;
}

/** https://airtable.com/developers/web/api/delete-multiple-records (`records[]`, at most 10). */
export async function deleteRecords(api: AirtableApi, baseId: string, tableId: string, ids: string[]) {
  await api.request({
    method: 'DELETE',
    path: `/v0/${enc(baseId)}/${enc(tableId)}`,
    baseId,
    query: { 'records[]': ids },
    context: 'Deleting records',
  });
}

export interface FieldBody {
  name: string;
  type: string;
  description?: string;
  options?: Record<string, unknown>;
}

/** https://airtable.com/developers/web/api/create-table (the first field is the primary field). */
export async function createTable(api: AirtableApi, baseId: string, name: string, fields: FieldBody[]) {
  const response = await api.request<AirtableTable>({
    method: 'POST',
    path: `/v0/meta/bases/${enc(baseId)}/tables`,
    baseId,
    json: { name, fields },
    context: `Creating table "${name}"`,
  });
  return response.data;
}

/** https://airtable.com/developers/web/api/create-field */
export async function createField(api: AirtableApi, baseId: string, tableId: string, field: FieldBody) {
  const response = await api.request<AirtableField>({
    method: 'POST',
    path: `/v0/meta/bases/${enc(baseId)}/tables/${enc(tableId)}/fields`,
    baseId,
    json: field,
    context: `Creating field "${field.name}"`,
  });
  return response.data;
}

/** Quotes a value for a `filterByFormula` string literal (https://support.airtable.com/docs/formula-field-reference). */
export function formulaString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
