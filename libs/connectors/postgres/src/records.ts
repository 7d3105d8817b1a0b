/**
 * Reading records: what a read selects (`ReadPlan`), rows and COPY lines -> SourceRecords, keyset pages
 * (`COPY (SELECT ...) TO STDOUT`, see copy.ts) and lookups by key or by service id.
 */
import {
  ConnectorError,
  type KeyRange,
  type ReadPageOptions,
  type RecordPage,
  type SourceRecord,
} from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import { copyOut, isCopyNull, unescapeCopy } from '@lockstep/pg-copy';
import { escapeLiteral, type Pool } from 'pg';
import type { TableMeta } from './catalog';
import type { TextRow } from './copy';
import { textRows, type ArrayQueryable } from './db';
import { castOf, metadataError, requireKey, target, validKey } from './schema';
import { ident, isUuid } from './sql';
import { decoderFor, type Decoder } from './types';

export const MAX_PAGE = 10_000;

/** How `lineRecord` takes a column's value out of a COPY line. */
const enum Scan {
  /** The field's text (unescaped), then its decoder. */
  Text,
  /** An integer's digits, read in place (no string for it). */
  Integer,
  /** `t` or `f`. */
  Boolean,
}

/** Up to 15 digits an integer is read digit by digit, exactly (10^15 < 2^53); longer ones via Number. */
const MAX_SCANNED_DIGITS = 15;

/**
 * What a read selects and how it turns a row into a record: `columns` are the key, the service id (when the
 * table has one) and the fields, each once; `fieldIds[i]` is read from `columns[fieldIndexes[i]]`, and
 * `columnFields[c]` is the field read from column `c` (or -1).
 */
export interface ReadPlan {
  columns: string[];
  selectList: string;
  fieldIds: string[];
  fieldIndexes: number[];
  decoders: Decoder[];
  columnFields: number[];
  scans: Scan[];
  /** Index of the service id column in `columns`, or -1. */
  serviceIndex: number;
  /** `values` with every field set to null: records copy it, so they all share one object shape. */
  emptyValues: Record<string, CanonicalValue>;
}

/**
 * Records are made by copying this (object spread), not with an object literal: V8 tracks where literals
 * allocate and, seeing most of a page of records outlive a young-generation collection, may allocate them
 * straight in the old generation from then on ("pretenuring"). A page of short-lived records then costs a
 * major collection every few pages.
 */
const RECORD_TEMPLATE: SourceRecord = { remoteId: '', values: {} };

/** Read plans of every readable field, per description. */
const defaultPlans = new WeakMap<TableMeta, ReadPlan>();

/**
 * The integer written in `line[start, end)` (PostgreSQL's output: optional minus, digits), read without
 * making a string of it; undefined when it is longer than `MAX_SCANNED_DIGITS` digits or not plain digits.
 */
function scanInteger(line: string, start: number, end: number): number | undefined {
  const negative = line.charCodeAt(start) === 0x2d; // -
  let index = negative ? start + 1 : start;
  if (index === end || end - index > MAX_SCANNED_DIGITS) return undefined;
  let value = 0;
  for (; index < end; index += 1) {
    const digit = line.charCodeAt(index) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return negative ? -value : value;
}

export function selectList(columns: string[], alias?: string): string {
  return columns.map((column) => (alias ? `${alias}.${ident(column)}` : ident(column))).join(', ');
}

/** The readable fields a read asks for (all of them by default). */
function readFields(meta: TableMeta, requested?: string[]) {
  const fields = meta.fields.filter((field) => field.read);
  if (!requested) return fields;
  for (const id of requested) {
    if (meta.fieldById.get(id)?.read !== true) {
      throw metadataError(
        'not_found',
        `Field "${id}" does not exist or cannot be read in table "${meta.name}"`,
        '42703',
      );
    }
  }
  const wanted = new Set(requested);
  return fields.filter((field) => wanted.has(field.remoteId));
}

/** What a read selects (the key, the service id and the requested readable fields) and how it decodes. */
export function readPlan(meta: TableMeta, requested?: string[]): ReadPlan {
  if (!requested) {
    const known = defaultPlans.get(meta);
    if (known) return known;
  }
  const fields = readFields(meta, requested);
  const columns = [
    ...new Set([
      requireKey(meta),
      ...(meta.serviceIdColumn ? [meta.serviceIdColumn] : []),
      ...fields.map((field) => field.remoteId),
    ]),
  ];
  const fieldIds = fields.map((field) => field.remoteId);
  const columnFields = columns.map((column) => fieldIds.indexOf(column));
  const plan: ReadPlan = {
    columns,
    selectList: selectList(columns),
    fieldIds,
    fieldIndexes: fieldIds.map((id) => columns.indexOf(id)),
    decoders: fieldIds.map((id) => decoderFor(meta.kinds.get(id)!)),
    columnFields,
    scans: columns.map((column, index) => {
      const kind = meta.kinds.get(column)!;
      if (columnFields[index]! < 0 || kind.isArray) return Scan.Text;
      if (kind.typeClass === 'integer') return Scan.Integer;
      return kind.typeClass === 'boolean' ? Scan.Boolean : Scan.Text;
    }),
    serviceIndex: meta.serviceIdColumn ? columns.indexOf(meta.serviceIdColumn) : -1,
    emptyValues: Object.fromEntries(fieldIds.map((id) => [id, null])),
  };
  if (!requested) defaultPlans.set(meta, plan);
  return plan;
}

/** A record from a row selected with `plan.columns`, starting at `offset` in the row. */
export function toRecord(plan: ReadPlan, row: TextRow, offset = 0): SourceRecord {
  const values = { ...plan.emptyValues };
  const { fieldIds, fieldIndexes, decoders } = plan;
  for (let i = 0; i < fieldIds.length; i += 1) {
    const text = row[offset + fieldIndexes[i]!];
    if (text !== null && text !== undefined) values[fieldIds[i]!] = decoders[i]!(text);
  }
  const record = { ...RECORD_TEMPLATE };
  record.remoteId = row[offset] ?? ''; // the key column: never NULL (reads filter on it, writes return it)
  record.values = values;
  if (plan.serviceIndex >= 0) record.serviceId = row[offset + plan.serviceIndex] ?? null;
  return record;
}

/**
 * A record from one line of `COPY (SELECT <plan.columns> ...) TO STDOUT` (text format), taking the values
 * straight out of the line: no array of fields, and no string at all for integers and booleans. Fields are
 * separated by tabs (a tab in the data is escaped); only a line holding a backslash can have NULLs (`\N`)
 * or escaped characters.
 */
export function lineRecord(plan: ReadPlan, line: string): SourceRecord {
  const escaped = line.indexOf('\\') !== -1;
  const values = { ...plan.emptyValues };
  const record = { ...RECORD_TEMPLATE };
  const { columnFields, scans, fieldIds, decoders } = plan;
  let start = 0;
  for (let column = 0; column < columnFields.length; column += 1) {
    let end = line.indexOf('\t', start);
    if (end === -1) end = line.length;
    if (escaped && isCopyNull(line, start, end)) {
      if (column === plan.serviceIndex) record.serviceId = null;
      start = end + 1;
      continue;
    }
    const field = columnFields[column]!;
    const scan = scans[column]!;
    let text: string | null = null;
    if (scan === Scan.Text || column === 0 || column === plan.serviceIndex) {
      text = line.slice(start, end);
      if (escaped && text.indexOf('\\') !== -1) text = unescapeCopy(text);
      if (column === 0) record.remoteId = text;
      if (column === plan.serviceIndex) record.serviceId = text;
    }
    if (field >= 0) {
      if (scan === Scan.Boolean)
        values[fieldIds[field]!] = line.charCodeAt(start) === 0x74; // t
      else if (scan === Scan.Integer)
        values[fieldIds[field]!] =
          scanInteger(line, start, end) ?? decoders[field]!(text ?? line.slice(start, end));
      else values[fieldIds[field]!] = decoders[field]!(text!);
    }
    start = end + 1;
  }
  record.values = values;
  return record;
}

/** Checks a page checkpoint before anything is read (the caller guards the rest). */
export function checkAfter(after: string | null): void {
  if (after !== null && after.includes('\u0000'))
    throw new ConnectorError('invalid_data', 'The page checkpoint is not one this connector issued');
}

/** One page in key order after `after`, streamed with COPY and decoded line by line as it arrives. */
export async function readPage(
  pool: Pool,
  meta: TableMeta,
  options: ReadPageOptions,
  after: string | null,
): Promise<RecordPage> {
  const key = requireKey(meta);
  const plan = readPlan(meta, options.fields);
  const pageSize = Math.min(Math.max(1, Math.floor(options.pageSize)), MAX_PAGE);
  let where = `${ident(key)} IS NOT NULL`;
  // COPY takes no parameters: the lower bound is a quoted literal, cast to the key's type.
  if (after !== null) where += ` AND ${ident(key)} > ${escapeLiteral(after)}::${castOf(meta, key)}`;
  const before = options.before ?? null;
  if (before !== null) where += ` AND ${ident(key)} < ${escapeLiteral(before)}::${castOf(meta, key)}`;
  const records: SourceRecord[] = [];
  let more = false;
  // An error a line raises is raised once the COPY has ended (copyOut), so the client stays usable.
  const text = `
COPY (
  SELECT ${plan.selectList} FROM ${target(meta)}
  WHERE ${where}
  ORDER BY ${ident(key)} LIMIT ${pageSize + 1}
) TO STDOUT`;
  await copyOut(pool, text, (line) => {
    if (records.length < pageSize) records.push(lineRecord(plan, line));
    else more = true;
  });
  return { records, next: more ? records[records.length - 1]!.remoteId : null };
}

export async function countRecords(pool: Pool, meta: TableMeta): Promise<number> {
  const key = requireKey(meta);
  const result = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${target(meta)} WHERE ${ident(key)} IS NOT NULL`,
  );
  return Number(result.rows[0]!.n);
}

/**
 * At most `count` key ranges of about equal size: the table's keys are counted, and each range boundary is
 * the key at its share of them (with the key before it, the previous range's last, as the range's `after`).
 * An index on the key (the primary key) serves each boundary's `OFFSET` read; boundaries are exact, not
 * estimated, so ranges differ by one record at most when nothing is written meanwhile.
 */
export async function splitKeyRanges(pool: Pool, meta: TableMeta, count: number): Promise<KeyRange[]> {
  const key = requireKey(meta);
  const total = await countRecords(pool, meta);
  const parts = Math.max(1, Math.min(Math.floor(count), total));
  const ranges: KeyRange[] = [];
  let after: string | null = null;
  for (let index = 1; index < parts; index += 1) {
    const offset = Math.floor((index * total) / parts) - 1;
    const found = await pool.query<{ k: string }>(
      `SELECT ${ident(key)}::text AS k FROM ${target(meta)} WHERE ${ident(key)} IS NOT NULL
       ORDER BY ${ident(key)} OFFSET $1 LIMIT 2`,
      [offset],
    );
    const [last, first] = found.rows;
    // Rows deleted since the count: the remaining boundaries fall past the end, so fewer ranges.
    if (!last || !first) break;
    ranges.push({ after, before: first.k });
    after = last.k;
  }
  ranges.push({ after, before: null });
  return ranges;
}

/** With `lock`, the rows are locked for update (in key order, so two writers lock them in the same order). */
export async function selectByKeys(
  db: ArrayQueryable,
  meta: TableMeta,
  remoteIds: string[],
  lock = false,
): Promise<SourceRecord[]> {
  const key = requireKey(meta);
  const ids = [...new Set(remoteIds.filter((id) => validKey(meta, id)))];
  if (ids.length === 0) return [];
  const plan = readPlan(meta);
  const locking = lock ? ` ORDER BY ${ident(key)} FOR UPDATE` : '';
  const text = `
SELECT ${plan.selectList} FROM ${target(meta)}
WHERE ${ident(key)} = ANY ($1::${castOf(meta, key)}[])${locking}`;
  const rows = await textRows(db, text, [ids]);
  return rows.map((row) => toRecord(plan, row));
}

export async function selectByServiceIds(
  db: ArrayQueryable,
  meta: TableMeta,
  serviceIds: string[],
): Promise<SourceRecord[]> {
  const column = meta.serviceIdColumn;
  const ids = [...new Set(serviceIds.filter(isUuid).map((id) => id.toLowerCase()))];
  if (!column || ids.length === 0) return [];
  const plan = readPlan(meta);
  const rows = await textRows(
    db,
    `SELECT ${plan.selectList} FROM ${target(meta)} WHERE ${ident(column)} = ANY ($1::uuid[])`,
    [ids],
  );
  return rows.map((row) => toRecord(plan, row));
}
