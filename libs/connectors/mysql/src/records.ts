/**
 * Reading records: the select list, driver rows -> SourceRecords, keyset pages and lookups by key or by
 * service id. Tables are read in key order with `key > last` pages, never as a whole.
 */
import { ConnectorError, type KeyRange, type RecordPage, type SourceRecord } from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import type { PoolConnection } from 'mysql2/promise';
import { rows, type Row } from './db';
import type { TableKey, TableMeta } from './catalog';
import { metadataError, requireKey } from './schema';
import { chunk, placeholders, quoteIdent } from './sql';
import { decoderFor, keyText, type Decoder } from './decode';
import type { ClassifiedColumn } from './types';

/** Largest IN (...) list sent in one statement. */
export const LOOKUP_CHUNK = 1000;

/** What a read selects and how it turns a driver row into a record (computed once per table description). */
export interface ReadPlan {
  /** The select list: the requested readable fields plus the key and the service id, each once. */
  selectList: string;
  fieldIds: string[];
  decoders: Decoder[];
  keyColumn: string;
  serviceIdColumn: string | null;
  /**
   * The select list is exactly the fields (the key and the service id are among them, as in a default
   * read): the driver's row object then becomes the record's `values`, decoded in place.
   */
  inPlace: boolean;
  /** Otherwise `values` starts as a copy of this (every field null), so records share one object shape. */
  emptyValues: Record<string, CanonicalValue>;
}

const defaultPlans = new WeakMap<TableMeta, ReadPlan>();

/**
 * Records are made by copying this (object spread), not with an object literal: V8 tracks where literals
 * allocate and, seeing most of a page of records outlive a young-generation collection, may allocate them
 * straight in the old generation from then on ("pretenuring"), which turns short-lived pages of records
 * into frequent major collections (docs/performance.md, "Connectors").
 */
const RECORD_TEMPLATE: SourceRecord = { remoteId: '', values: {} };

/** The read plan for the requested fields (default: every readable field). */
export function readPlan(meta: TableMeta, fields?: string[]): ReadPlan {
  if (!fields) {
    const known = defaultPlans.get(meta);
    if (known) return known;
  }
  const columns = readColumns(meta, fields);
  const selected = selectColumns(meta, columns);
  const plan: ReadPlan = {
    selectList: selected.map(quoteIdent).join(', '),
    fieldIds: columns.map((column) => column.name),
    decoders: columns.map((column) => decoderFor(column)),
    keyColumn: requireKey(meta).column,
    serviceIdColumn: meta.serviceIdColumn,
    inPlace: selected.length === columns.length,
    emptyValues: Object.fromEntries(columns.map((column) => [column.name, null])),
  };
  if (!fields) defaultPlans.set(meta, plan);
  return plan;
}

/** A driver row (selected with `plan.selectList`, a fresh object per row) as a record. */
export function planRecord(plan: ReadPlan, row: Row): SourceRecord {
  // The key and the service id are read before the row may be decoded in place.
  const record = { ...RECORD_TEMPLATE };
  record.remoteId = keyText(row[plan.keyColumn]);
  if (plan.serviceIdColumn) {
    const serviceId = row[plan.serviceIdColumn];
    record.serviceId = serviceId === null || serviceId === undefined ? null : String(serviceId).toLowerCase();
  }
  const values = plan.inPlace ? row : { ...plan.emptyValues };
  const { fieldIds, decoders } = plan;
  for (let i = 0; i < fieldIds.length; i += 1) {
    const raw = row[fieldIds[i]!];
    values[fieldIds[i]!] = raw === null || raw === undefined ? null : decoders[i]!(raw);
  }
  // Every property now holds a canonical value.
  record.values = values as Record<string, CanonicalValue>;
  return record;
}

/** The columns to read: the requested readable fields (default all), plus the key and the service id. */
export function readColumns(meta: TableMeta, fields?: string[]): ClassifiedColumn[] {
  if (!fields) return meta.columns.filter((column) => column.read);
  return fields
    .map((id) => {
      const column = meta.byName.get(id);
      if (!column) throw metadataError('not_found', `Field "${id}" does not exist in table "${meta.name}"`);
      return column;
    })
    .filter((column) => column.read);
}

/** The columns a read selects: `columns` plus the key and the service id, each once. */
function selectColumns(meta: TableMeta, columns: ClassifiedColumn[]): string[] {
  const names = new Set(columns.map((column) => column.name));
  const key = requireKey(meta);
  names.add(key.column);
  if (meta.serviceIdColumn) names.add(meta.serviceIdColumn);
  return [...names];
}

/**
 * The driver parameter for a key given as text (a remote id, a page checkpoint), or undefined when the text
 * cannot be a value of the key (an integer key and "abc"): such a record simply does not exist.
 */
export function keyParam(key: TableKey, text: string): string | bigint | undefined {
  if (!key.integer) return text;
  return /^-?\d+$/.test(text) ? BigInt(text) : undefined;
}

function encodeAfter(key: string): string {
  return Buffer.from(JSON.stringify({ k: key }), 'utf8').toString('base64url');
}

function decodeAfter(after: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(after, 'base64url').toString('utf8')) as { k?: unknown };
    if (typeof parsed.k === 'string') return parsed.k;
  } catch {
    // fall through
  }
  throw new ConnectorError('invalid_data', 'The page checkpoint is not one this connector issued');
}

const PAGE_SQL = (plan: ReadPlan, meta: TableMeta, where: string, k: string) => `
SELECT ${plan.selectList}
  FROM ${quoteIdent(meta.name)}
 WHERE ${where}
 ORDER BY ${k}
 LIMIT ?`;

const COUNT_SQL = (meta: TableMeta, keyColumn: string) => `
SELECT COUNT(*) AS n FROM ${quoteIdent(meta.name)} WHERE ${quoteIdent(keyColumn)} IS NOT NULL`;

/** Rows whose `column` is one of `count` values; with `lock`, locked for update in that column's order. */
const BY_KEYS_SQL = (plan: ReadPlan, meta: TableMeta, column: string, count: number, lock: boolean) => {
  const locking = lock ? ` ORDER BY ${quoteIdent(column)} FOR UPDATE` : '';
  return `
SELECT ${plan.selectList}
  FROM ${quoteIdent(meta.name)}
 WHERE ${quoteIdent(column)} IN (${placeholders(count)})${locking}`;
};

export async function readPage(
  connection: PoolConnection,
  meta: TableMeta,
  options: { after?: string | null; pageSize: number; fields?: string[]; before?: string | null },
): Promise<RecordPage> {
  const key = requireKey(meta);
  const plan = readPlan(meta, options.fields);
  const pageSize = Math.max(1, Math.floor(options.pageSize));
  const k = quoteIdent(key.column);
  const params: unknown[] = [];
  let where = `${k} IS NOT NULL`;
  if (options.after) {
    const after = keyParam(key, decodeAfter(options.after));
    if (after === undefined)
      throw new ConnectorError('invalid_data', 'The page checkpoint is not one this connector issued');
    where += ` AND ${k} > ?`;
    params.push(after);
  }
  if (options.before) {
    const before = keyParam(key, options.before);
    if (before === undefined)
      throw new ConnectorError('invalid_data', 'The key bound is not a key of this table');
    where += ` AND ${k} < ?`;
    params.push(before);
  }
  params.push(pageSize + 1);
  const found = await rows(connection, PAGE_SQL(plan, meta, where, k), params);
  const count = Math.min(found.length, pageSize);
  const records: SourceRecord[] = new Array(count);
  for (let index = 0; index < count; index += 1) records[index] = planRecord(plan, found[index]!);
  const last = records[count - 1];
  return { records, next: found.length > pageSize && last ? encodeAfter(last.remoteId) : null };
}

/** How many rows `readPage` streams (rows with a key). */
export async function countRecords(connection: PoolConnection, meta: TableMeta): Promise<number> {
  const key = requireKey(meta);
  const found = await rows(connection, COUNT_SQL(meta, key.column));
  return Number(found[0]?.['n'] ?? 0);
}

const BOUNDARY_SQL = (meta: TableMeta, k: string) => `
SELECT ${k} AS k FROM ${quoteIdent(meta.name)} WHERE ${k} IS NOT NULL ORDER BY ${k} LIMIT ?, 2`;

/**
 * At most `count` key ranges of about equal size: the table's keys are counted, and each range boundary is
 * the key at its share of them (with the key before it, the previous range's last, as the range's `after`),
 * read along the key's index. Boundaries are exact, so ranges differ by one record at most when nothing is
 * written meanwhile.
 */
export async function splitKeyRanges(
  connection: PoolConnection,
  meta: TableMeta,
  count: number,
): Promise<KeyRange[]> {
  const k = quoteIdent(requireKey(meta).column);
  const total = await countRecords(connection, meta);
  const parts = Math.max(1, Math.min(Math.floor(count), total));
  const ranges: KeyRange[] = [];
  let after: string | null = null;
  for (let index = 1; index < parts; index += 1) {
    const offset = Math.floor((index * total) / parts) - 1;
    const [last, first] = await rows(connection, BOUNDARY_SQL(meta, k), [offset]);
    // Rows deleted since the count: the remaining boundaries fall past the end, so fewer ranges.
    if (!last || !first) break;
    ranges.push({ after, before: keyText(first['k']) });
    after = encodeAfter(keyText(last['k']));
  }
  ranges.push({ after, before: null });
  return ranges;
}

/** Records by remote id (absent ids are left out), in the order found. */
export async function readByKeys(
  connection: PoolConnection,
  meta: TableMeta,
  remoteIds: string[],
  fields?: string[],
  /** Lock the rows for update (in key order), inside the caller's transaction. */
  lock = false,
): Promise<SourceRecord[]> {
  const key = requireKey(meta);
  const plan = readPlan(meta, fields);
  const params = [...new Set(remoteIds)]
    .map((id) => keyParam(key, id))
    .filter((param) => param !== undefined);
  const records: SourceRecord[] = [];
  for (const part of chunk(params, LOOKUP_CHUNK)) {
    const found = await rows(connection, BY_KEYS_SQL(plan, meta, key.column, part.length, lock), part);
    for (const row of found) records.push(planRecord(plan, row));
  }
  return records;
}

export async function readByServiceIds(
  connection: PoolConnection,
  meta: TableMeta,
  serviceIds: string[],
): Promise<SourceRecord[]> {
  if (!meta.serviceIdColumn) return [];
  const plan = readPlan(meta);
  const ids = [...new Set(serviceIds.map((id) => id.toLowerCase()))];
  const records: SourceRecord[] = [];
  for (const part of chunk(ids, LOOKUP_CHUNK)) {
    const found = await rows(
      connection,
      BY_KEYS_SQL(plan, meta, meta.serviceIdColumn, part.length, false),
      part,
    );
    for (const row of found) records.push(planRecord(plan, row));
  }
  return records;
}
