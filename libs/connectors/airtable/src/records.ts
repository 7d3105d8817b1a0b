/**
 * Reads: pages of at most 100 records by Airtable's `offset` token (`returnFieldsByFieldId=true`), records
 * by id or by service id through `filterByFormula`, and counting by paging through ids only. Values are
 * decoded per field type (`values.ts`); the service id field's value is the record's `serviceId`.
 */
import type { ReadPageOptions, RecordPage, SourceRecord } from '@lockstep/connectors-core';
import type { AirtableApi } from './db';
import { fieldOf, serviceIdField } from './schema';
import { type AirtableRecord, type AirtableTable, formulaString, listRecords, MAX_PAGE_SIZE } from './sql';
import { classOf } from './types';
import { decodeValue } from './values';

/** Ids per `filterByFormula` request: the formula travels in the URL, which Airtable limits to 16,000 characters. */
const IDS_PER_FORMULA = 50;

/** A record as the SDK gives it: readable fields (or `only`) by field id, decoded; the service id apart. */
export function toSourceRecord(
  table: AirtableTable,
  record: AirtableRecord,
  only?: Set<string>,
): SourceRecord {
  const service = serviceIdField(table);
  const values: SourceRecord['values'] = {};
  for (const field of table.fields) {
    if (field === service || classOf(field) === 'unsupported') continue;
    if (only && !only.has(field.id)) continue;
    values[field.id] = decodeValue(field, record.fields[field.id]);
  }
  const serviceId = service ? record.fields[service.id] : undefined;
  return {
    remoteId: record.id,
    values,
    ...(service ? { serviceId: typeof serviceId === 'string' && serviceId !== '' ? serviceId : null } : {}),
  };
}

/** The fields a read asks for: the chosen ones (by id or name) plus the service id field. */
function selection(table: AirtableTable, fields?: string[]): { ids?: string[]; only?: Set<string> } {
  if (!fields) return {};
  const only = new Set(fields.map((field) => fieldOf(table, field).id));
  const service = serviceIdField(table);
  const ids = [...only];
  if (service && !only.has(service.id)) ids.push(service.id);
  return { ids, only };
}

export async function readPage(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  options: ReadPageOptions,
): Promise<RecordPage> {
  const { ids, only } = selection(table, options.fields);
  const page = await listRecords(api, baseId, table.id, {
    offset: options.after ?? null,
    pageSize: Math.max(1, Math.min(options.pageSize, MAX_PAGE_SIZE)),
    fields: ids,
    view: options.view ?? null,
  });
  return {
    records: page.records.map((record) => toSourceRecord(table, record, only)),
    next: page.offset ?? null,
  };
}

/** Every record a formula selects (a few hundred at most: the formula names them), within `view` if given. */
export async function readWhere(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  formula: string,
  view: string | null = null,
): Promise<AirtableRecord[]> {
  const records: AirtableRecord[] = [];
  let offset: string | null = null;
  do {
    const page = await listRecords(api, baseId, table.id, { offset, filterByFormula: formula, view });
    records.push(...page.records);
    offset = page.offset ?? null;
  } while (offset);
  return records;
}

function chunks<T>(items: T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/**
 * Raw records by id, in no particular order; ids that do not exist (or, with `view`, are not in that view) are
 * absent.
 */
export async function rawByIds(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  remoteIds: string[],
  view: string | null = null,
): Promise<AirtableRecord[]> {
  const wanted = [...new Set(remoteIds.filter((id) => /^rec[A-Za-z0-9]+$/.test(id)))];
  const records: AirtableRecord[] = [];
  for (const group of chunks(wanted, IDS_PER_FORMULA)) {
    const terms = group.map((id) => `RECORD_ID() = ${formulaString(id)}`);
    records.push(...(await readWhere(api, baseId, table, `OR(${terms.join(', ')})`, view)));
  }
  return records;
}

export async function readByIds(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  remoteIds: string[],
  view: string | null = null,
): Promise<SourceRecord[]> {
  const records = await rawByIds(api, baseId, table, remoteIds, view);
  return records.map((record) => toSourceRecord(table, record));
}

export async function readByServiceIds(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  serviceIds: string[],
): Promise<SourceRecord[]> {
  const service = serviceIdField(table);
  if (!service || serviceIds.length === 0) return [];
  const records: SourceRecord[] = [];
  for (const group of chunks([...new Set(serviceIds)], IDS_PER_FORMULA)) {
    const field = `{${service.name}}`;
    const terms = group.map((id) => `${field} = ${formulaString(id)}`);
    const found = await readWhere(api, baseId, table, `OR(${terms.join(', ')})`);
    records.push(...found.map((record) => toSourceRecord(table, record)));
  }
  return records;
}

/** Airtable has no count: pages through the records asking for no field (ids only), 100 at a time. */
export async function countRecords(api: AirtableApi, baseId: string, table: AirtableTable): Promise<number> {
  let count = 0;
  let offset: string | null = null;
  do {
    const page = await listRecords(api, baseId, table.id, { offset, fields: [table.primaryFieldId] });
    count += page.records.length;
    offset = page.offset ?? null;
  } while (offset);
  return count;
}
