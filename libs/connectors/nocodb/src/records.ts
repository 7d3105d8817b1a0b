/**
 * Reads: pages in primary key order (`sort` on the key, `where` key > the previous page's last key: a stable
 * order that an insert or delete while paging cannot shift), records by id or by service id through `where`,
 * and NocoDB's own count. Values are decoded per field type (`values.ts`); link fields, which the data API
 * answers with a count, are read through the links API for the records that have links (`readLinks`).
 */
import type { ReadPageOptions, RecordPage, SourceRecord } from '@lockstep/connectors-core';
import type { NocodbApi } from './db';
import { columnOf, keyColumn, type SchemaCache, serviceIdColumn } from './schema';
import {
  countRows,
  listLinks,
  listRows,
  MAX_PAGE_SIZE,
  type NocodbRow,
  type NocodbTable,
  whereValue,
} from './sql';
import { classOf, isListed, LINK_TYPES, linksMany, linkTarget } from './types';
import { decodeValue } from './values';

/** Keys per `where (key,in,...)` request: the clause travels in the URL. */
export const KEYS_PER_WHERE = 100;

export interface ReadContext {
  api: NocodbApi;
  schema: SchemaCache;
  table: NocodbTable;
}

/** The readable columns, or only `fields` (by id or title). */
function columnsToRead(table: NocodbTable, fields?: string[]) {
  const listed = table.columns.filter((column) => isListed(column) && classOf(column) !== 'unsupported');
  if (!fields) return listed;
  const wanted = new Set(fields.map((field) => columnOf(table, field).id));
  return listed.filter((column) => wanted.has(column.id));
}

/** Field titles to ask for: the chosen columns plus the key and the service id. */
function titlesFor(table: NocodbTable, fields?: string[]): string[] | undefined {
  if (!fields) return undefined;
  const titles = new Set(columnsToRead(table, fields).map((column) => column.title));
  titles.add(keyColumn(table).title);
  const service = serviceIdColumn(table);
  if (service) titles.add(service.title);
  return [...titles];
}

export async function toSourceRecords(
  context: ReadContext,
  rows: NocodbRow[],
  fields?: string[],
): Promise<SourceRecord[]> {
  const { table } = context;
  const key = keyColumn(table);
  const service = serviceIdColumn(table);
  const columns = columnsToRead(table, fields).filter((column) => column !== service);
  const records = rows.map((row) => {
    const values: SourceRecord['values'] = {};
    for (const column of columns) {
      if (!LINK_TYPES.has(column.uidt)) values[column.id] = decodeValue(column, row[column.title]);
    }
    const serviceId = service ? row[service.title] : undefined;
    return {
      remoteId: String(row[key.title]),
      values,
      ...(service ? { serviceId: typeof serviceId === 'string' && serviceId !== '' ? serviceId : null } : {}),
    };
  });
  for (const column of columns.filter((candidate) => LINK_TYPES.has(candidate.uidt))) {
    await readLinks(context, column, rows, records);
  }
  return records;
}

/**
 * A link field's value: the data API answers the number of linked records (or the linked record itself for a
 * "belongs to" link), so the ids are read through the links API, one request per record that has links.
 */
async function readLinks(
  context: ReadContext,
  column: NocodbTable['columns'][number],
  rows: NocodbRow[],
  records: SourceRecord[],
): Promise<void> {
  const many = linksMany(column);
  const target = linkTarget(column);
  const targetKey = target ? keyColumn(await context.schema.table(target)).title : 'Id';
  for (let index = 0; index < rows.length; index += 1) {
    const raw = rows[index]![column.title];
    const record = records[index]!;
    if (raw === null || raw === undefined || raw === 0 || (Array.isArray(raw) && raw.length === 0)) {
      record.values[column.id] = many ? [] : null;
      continue;
    }
    const ids: string[] = [];
    for (let offset = 0; ; offset += MAX_PAGE_SIZE) {
      const page = await listLinks(
        context.api,
        context.table.id,
        column.id,
        record.remoteId,
        targetKey,
        offset,
      );
      const list = Array.isArray(page.list) ? page.list : page ? [page as unknown as NocodbRow] : [];
      ids.push(...list.map((row) => String(row[targetKey])).filter((id) => id !== 'undefined'));
      if (page.pageInfo?.isLastPage !== false || list.length === 0) break;
    }
    ids.sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
    record.values[column.id] = many ? ids : (ids[0] ?? null);
  }
}

/** A `where` clause matching `column` against `values` (values NocoDB's syntax cannot carry are left out). */
export function inClause(title: string, values: string[]): string | null {
  const usable = values.map(whereValue).filter((value): value is string => value !== null);
  return usable.length > 0 ? `(${title},in,${usable.join(',')})` : null;
}

export async function readPage(context: ReadContext, options: ReadPageOptions): Promise<RecordPage> {
  const key = keyColumn(context.table);
  const limit = Math.max(1, Math.min(options.pageSize, MAX_PAGE_SIZE));
  const after = options.after ? whereValue(options.after) : null;
  const page = await listRows(context.api, context.table.id, {
    limit,
    sort: key.title,
    where: after !== null ? `(${key.title},gt,${after})` : undefined,
    fields: titlesFor(context.table, options.fields),
    viewId: options.view ?? null,
  });
  const records = await toSourceRecords(context, page.list, options.fields);
  const last = page.list[page.list.length - 1];
  const more = page.list.length >= limit && page.pageInfo?.isLastPage !== true;
  return { records, next: more && last ? String(last[key.title]) : null };
}

/** Raw rows whose `title` is one of `values` (within `view`), KEYS_PER_WHERE a request. */
export async function rowsWhereIn(
  context: ReadContext,
  title: string,
  values: string[],
  view: string | null = null,
): Promise<NocodbRow[]> {
  const rows: NocodbRow[] = [];
  const unique = [...new Set(values)];
  for (let start = 0; start < unique.length; start += KEYS_PER_WHERE) {
    const where = inClause(title, unique.slice(start, start + KEYS_PER_WHERE));
    if (!where) continue;
    const page = await listRows(context.api, context.table.id, { where, limit: MAX_PAGE_SIZE, viewId: view });
    rows.push(...page.list);
  }
  return rows;
}

export async function readByIds(
  context: ReadContext,
  remoteIds: string[],
  view: string | null = null,
): Promise<SourceRecord[]> {
  const key = keyColumn(context.table);
  const ids = classOf(key) === 'integer' ? remoteIds.filter((id) => /^\d+$/.test(id)) : remoteIds;
  return toSourceRecords(context, await rowsWhereIn(context, key.title, ids, view));
}

export async function readByServiceIds(context: ReadContext, serviceIds: string[]): Promise<SourceRecord[]> {
  const service = serviceIdColumn(context.table);
  if (!service || serviceIds.length === 0) return [];
  return toSourceRecords(context, await rowsWhereIn(context, service.title, serviceIds));
}

export function countRecords(context: ReadContext): Promise<number> {
  return countRows(context.api, context.table.id);
}
