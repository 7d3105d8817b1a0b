/**
 * Reading records: the select list, driver rows -> SourceRecords, keyset pages and lookups by key or by
 * service id. Tables are read in key order with `key > last` pages, never as a whole.
 */
import { ConnectorError, type RecordPage, type SourceRecord } from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import type { PoolConnection } from 'mysql2/promise';
import { rows, type Row } from './db';
import { requireKey, type TableKey, type TableMeta } from './schema';
import { chunk, placeholders, quoteIdent } from './sql';
import { decodeValue, keyText, type ClassifiedColumn } from './types';

/** Largest IN (...) list sent in one statement. */
export const LOOKUP_CHUNK = 1000;

/** The columns to read: the requested readable fields (default all), plus the key and the service id. */
export function readColumns(meta: TableMeta, fields?: string[]): ClassifiedColumn[] {
  if (!fields) return meta.columns.filter((column) => column.read);
  return fields
    .map((id) => {
      const column = meta.byName.get(id);
      if (!column)
        throw new ConnectorError('not_found', `Field "${id}" does not exist in table "${meta.name}"`);
      return column;
    })
    .filter((column) => column.read);
}

export function selectList(meta: TableMeta, columns: ClassifiedColumn[]): string {
  const names = new Set(columns.map((column) => column.name));
  const key = requireKey(meta);
  names.add(key.column);
  if (meta.serviceIdColumn) names.add(meta.serviceIdColumn);
  return [...names].map(quoteIdent).join(', ');
}

export function toSourceRecord(meta: TableMeta, columns: ClassifiedColumn[], row: Row): SourceRecord {
  const key = requireKey(meta);
  const values: Record<string, CanonicalValue> = {};
  for (const column of columns) values[column.name] = decodeValue(column, row[column.name]);
  const record: SourceRecord = { remoteId: keyText(row[key.column]), values };
  if (meta.serviceIdColumn) {
    const serviceId = row[meta.serviceIdColumn];
    record.serviceId = serviceId === null || serviceId === undefined ? null : String(serviceId).toLowerCase();
  }
  return record;
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

export async function readPage(
  connection: PoolConnection,
  meta: TableMeta,
  options: { after?: string | null; pageSize: number; fields?: string[] },
): Promise<RecordPage> {
  const key = requireKey(meta);
  const columns = readColumns(meta, options.fields);
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
  params.push(pageSize + 1);
  const found = await rows(
    connection,
    `SELECT ${selectList(meta, columns)} FROM ${quoteIdent(meta.name)} WHERE ${where} ORDER BY ${k} LIMIT ?`,
    params,
  );
  const page = found.slice(0, pageSize);
  const records = page.map((row) => toSourceRecord(meta, columns, row));
  const last = page[page.length - 1];
  return { records, next: found.length > pageSize && last ? encodeAfter(keyText(last[key.column])) : null };
}

/** Records by remote id (absent ids are left out), in the order found. */
export async function readByKeys(
  connection: PoolConnection,
  meta: TableMeta,
  remoteIds: string[],
  fields?: string[],
): Promise<SourceRecord[]> {
  const key = requireKey(meta);
  const columns = readColumns(meta, fields);
  const params = [...new Set(remoteIds)]
    .map((id) => keyParam(key, id))
    .filter((param) => param !== undefined);
  const records: SourceRecord[] = [];
  for (const part of chunk(params, LOOKUP_CHUNK)) {
    const found = await rows(
      connection,
      `SELECT ${selectList(meta, columns)} FROM ${quoteIdent(meta.name)} WHERE ${quoteIdent(key.column)} IN (${placeholders(part.length)})`,
      part,
    );
    records.push(...found.map((row) => toSourceRecord(meta, columns, row)));
  }
  return records;
}

export async function readByServiceIds(
  connection: PoolConnection,
  meta: TableMeta,
  serviceIds: string[],
): Promise<SourceRecord[]> {
  if (!meta.serviceIdColumn) return [];
  const columns = readColumns(meta);
  const ids = [...new Set(serviceIds.map((id) => id.toLowerCase()))];
  const records: SourceRecord[] = [];
  for (const part of chunk(ids, LOOKUP_CHUNK)) {
    const found = await rows(
      connection,
      `SELECT ${selectList(meta, columns)} FROM ${quoteIdent(meta.name)} WHERE ${quoteIdent(meta.serviceIdColumn)} IN (${placeholders(part.length)})`,
      part,
    );
    records.push(...found.map((row) => toSourceRecord(meta, columns, row)));
  }
  return records;
}
