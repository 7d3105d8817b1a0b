/**
 * The statements of a create, one group of rows (same fields, same order) at a time: `COPY ... FROM STDIN`
 * when every row's remote id is known before writing (`copyIn`), else
 * `INSERT ... SELECT ... FROM unnest(...)` (`insertRows`). With a service id column, rows whose service id
 * is in the table already are adopted.
 */
import { ConnectorError, type WriteResult } from '@lockstep/connectors-core';
import type { Pool } from 'pg';
import type { TableMeta } from './catalog';
import { copyField } from './copy';
import { copyFrom, textRows, type ArrayQueryable } from './db';
import { selectList } from './records';
import { castOf, requireKey, target } from './schema';
import { ident, isUuid } from './sql';
import { arrayLiteral, elementLiteral, type ColumnKind, type PgParam } from './types';

/** A row to insert: its encoded values in the order of its group's columns. */
export interface InsertRow {
  index: number;
  cells: PgParam[];
  serviceId: string | null;
}

/** Rows of a create that name the same fields in the same order: they share an INSERT. */
export interface InsertGroup {
  columns: string[];
  kinds: ColumnKind[];
  rows: InsertRow[];
}

export type Written = Map<number, WriteResult>;

const CANONICAL_INTEGER = /^(0|-?[1-9]\d*)$/;

/**
 * The text PostgreSQL prints for a key written as `value`, when that is exactly the written value (an integer
 * in canonical form, a uuid, text), so the row's remote id is known without reading it back; otherwise null.
 */
function printedKey(baseName: string, value: PgParam): string | null {
  switch (baseName) {
    case 'int2':
    case 'int4':
    case 'int8':
      if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : null;
      return typeof value === 'string' && CANONICAL_INTEGER.test(value) ? value : null;
    case 'uuid':
      return typeof value === 'string' && isUuid(value) ? value.toLowerCase() : null;
    case 'text':
      return typeof value === 'string' ? value : null;
    default:
      return null;
  }
}

/** The remote ids of the rows holding these service ids, by service id. */
async function keysByServiceIds(
  db: ArrayQueryable,
  meta: TableMeta,
  serviceIds: string[],
): Promise<Map<string, string>> {
  const key = requireKey(meta);
  const column = meta.serviceIdColumn!;
  const rows = await textRows(
    db,
    `SELECT ${ident(key)}, ${ident(column)} FROM ${target(meta)} WHERE ${ident(column)} = ANY ($1::uuid[])`,
    [[...new Set(serviceIds)]],
  );
  return new Map(rows.map((row) => [String(row[1]), String(row[0])]));
}

/** Rows with nothing to write but defaults (a generated key, no values given): one INSERT each. */
async function insertDefaults(db: ArrayQueryable, meta: TableMeta, rows: InsertRow[]): Promise<Written> {
  const written: Written = new Map();
  for (const row of rows) {
    const [returned] = await textRows(
      db,
      `INSERT INTO ${target(meta)} DEFAULT VALUES RETURNING ${ident(requireKey(meta))}`,
    );
    written.set(row.index, { ok: true, remoteId: String(returned![0]), record: null });
  }
  return written;
}

const INSERT_SQL = (
  table: string,
  names: string,
  selected: string,
  sources: string,
  aliases: string,
  conflict: string,
  returning: string,
) => `
INSERT INTO ${table} (${names})
SELECT ${selected} FROM unnest(${sources}) WITH ORDINALITY AS u (${aliases}, lockstep_ord)
ORDER BY u.lockstep_ord${conflict} RETURNING ${returning}`;

/**
 * Inserts rows of one group with one statement: each column of the rows travels as one array parameter
 * (`INSERT ... SELECT ... FROM unnest($1::type[], ...) WITH ORDINALITY ... ORDER BY`, so rows are inserted
 * in input order), and only the key (and the service id) come back: results carry the remote id, not the
 * record. Array-typed columns travel as text arrays of array literals, cast per row. With a service id
 * column, `ON CONFLICT (lockstep_id) DO NOTHING`, and the rows it skipped are adopted.
 */
export async function insertRows(
  db: ArrayQueryable,
  meta: TableMeta,
  group: InsertGroup,
  rows: InsertRow[],
): Promise<Written> {
  const key = requireKey(meta);
  const serviceColumn = meta.serviceIdColumn;
  const { columns, kinds } = group;
  if (columns.length === 0 && !serviceColumn) return insertDefaults(db, meta, rows);
  const params: string[] = [];
  const sources: string[] = [];
  const selected: string[] = [];
  for (let column = 0; column < columns.length; column += 1) {
    const isArray = kinds[column]!.isArray;
    let literal = '{';
    for (let index = 0; index < rows.length; index += 1) {
      if (index > 0) literal += ',';
      const cell = rows[index]!.cells[column]!;
      literal += elementLiteral(isArray && Array.isArray(cell) ? arrayLiteral(cell) : cell);
    }
    params.push(`${literal}}`);
    const cast = castOf(meta, columns[column]!);
    sources.push(isArray ? `$${params.length}::text[]` : `$${params.length}::${cast}[]`);
    selected.push(isArray ? `u.c${column}::${cast}` : `u.c${column}`);
  }
  const names = [...columns];
  if (serviceColumn) {
    params.push(arrayLiteral(rows.map((row) => row.serviceId)));
    sources.push(`$${params.length}::uuid[]`);
    selected.push(`u.c${names.length}`);
    names.push(serviceColumn);
  }
  const aliases = names.map((_, position) => `c${position}`).join(', ');
  const conflict = serviceColumn ? ` ON CONFLICT (${ident(serviceColumn)}) DO NOTHING` : '';
  const returning =
    serviceColumn && serviceColumn !== key ? `${ident(key)}, ${ident(serviceColumn)}` : ident(key);
  const text = INSERT_SQL(
    target(meta),
    selectList(names),
    selected.join(', '),
    sources.join(', '),
    aliases,
    conflict,
    returning,
  );
  const returned = await textRows(db, text, params);
  return insertedResults(db, meta, rows, returned);
}

/** The results of an INSERT from what it returned; with a service id column, rows it skipped are adopted. */
async function insertedResults(
  db: ArrayQueryable,
  meta: TableMeta,
  rows: InsertRow[],
  returned: (string | null)[][],
): Promise<Written> {
  const key = requireKey(meta);
  const serviceColumn = meta.serviceIdColumn;
  const written: Written = new Map();
  if (serviceColumn) {
    const serviceIndex = serviceColumn === key ? 0 : 1;
    const byServiceId = new Map(returned.map((row) => [String(row[serviceIndex]), String(row[0])]));
    const missing = rows.filter((row) => !byServiceId.has(row.serviceId!)).map((row) => row.serviceId!);
    if (missing.length > 0) {
      // Rows a previous (crashed or repeated) create already wrote, or a repeat within this call: adopt them.
      for (const [serviceId, remoteId] of await keysByServiceIds(db, meta, missing))
        byServiceId.set(serviceId, remoteId);
    }
    for (const row of rows) {
      const remoteId = byServiceId.get(row.serviceId!);
      if (remoteId === undefined)
        throw new ConnectorError('transient', 'A created row could not be found by its service id');
      written.set(row.index, { ok: true, remoteId, record: null });
    }
  } else {
    if (returned.length !== rows.length)
      throw new ConnectorError('transient', 'INSERT returned an unexpected number of rows');
    rows.forEach((row, position) =>
      written.set(row.index, { ok: true, remoteId: String(returned[position]![0]), record: null }),
    );
  }
  return written;
}

/** The remote id of every row as it will read back, or null when one of them is not known before writing. */
function knownRemoteIds(meta: TableMeta, group: InsertGroup, rows: InsertRow[]): string[] | null {
  const key = requireKey(meta);
  const keyPosition = group.columns.indexOf(key);
  const keyType = meta.columnByName.get(key)?.baseName ?? '';
  const remoteIds: string[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index += 1) {
    const row = rows[index]!;
    const remoteId =
      key === meta.serviceIdColumn
        ? row.serviceId
        : keyPosition >= 0
          ? printedKey(keyType, row.cells[keyPosition]!)
          : null;
    if (remoteId === null) return null;
    remoteIds[index] = remoteId;
  }
  return remoteIds;
}

/**
 * Writes one group of rows with `COPY ... FROM STDIN` (see copy.ts) when every row's remote id is known
 * before writing: the key is the service id, or every row writes the key in the form PostgreSQL prints
 * it (`printedKey`). Returns null, having written nothing, when they are not. With a service id column,
 * rows whose service id is already in the table are adopted and a service id repeated within the call
 * shares its first row's result, as `ON CONFLICT DO NOTHING` does for an INSERT. Throws when the COPY
 * fails; nothing was written then.
 *
 * Creates are almost always new rows, so the COPY is tried first without looking anything up: a service id
 * already in the table fails it on the column's unique index (nothing written), and only then are the rows
 * looked up by service id and the others copied. That saves a statement (a thousand index probes) per call.
 */
export async function copyIn(
  pool: Pool,
  meta: TableMeta,
  group: InsertGroup,
  rows: InsertRow[],
): Promise<Written | null> {
  const remoteIds = knownRemoteIds(meta, group, rows);
  if (remoteIds === null) return null;
  const serviceColumn = meta.serviceIdColumn;
  if (serviceColumn && new Set(rows.map((row) => row.serviceId)).size === rows.length) {
    try {
      return await copyNewRows(pool, meta, group, rows, remoteIds);
    } catch (error) {
      if (!serviceIdTaken(meta, error)) throw error;
      // A row with one of these service ids exists (a repeated create): adopt it below.
    }
  }
  const written: Written = new Map();
  let toCopy = rows;
  let copiedIds = remoteIds;
  if (serviceColumn) {
    const existing = await keysByServiceIds(
      pool,
      meta,
      rows.map((row) => row.serviceId!),
    );
    const copied = new Map<string, string>();
    toCopy = [];
    copiedIds = [];
    rows.forEach((row, index) => {
      const adopted = existing.get(row.serviceId!) ?? copied.get(row.serviceId!);
      if (adopted !== undefined) {
        written.set(row.index, { ok: true, remoteId: adopted, record: null });
      } else {
        copied.set(row.serviceId!, remoteIds[index]!);
        toCopy.push(row);
        copiedIds.push(remoteIds[index]!);
      }
    });
  }
  if (toCopy.length > 0)
    for (const [index, result] of await copyNewRows(pool, meta, group, toCopy, copiedIds))
      written.set(index, result);
  return written;
}

/** Whether a write failed on the unique index of the table's service id column (the value is taken). */
function serviceIdTaken(meta: TableMeta, error: unknown): boolean {
  const column = meta.serviceIdColumn;
  if (!column || (error as { code?: unknown } | null)?.code !== '23505') return false;
  const detail = (error as { detail?: unknown }).detail;
  return (
    typeof detail === 'string' &&
    (detail.startsWith(`Key (${column})=`) || detail.startsWith(`Key (${ident(column)})=`))
  );
}

/** `COPY`s the rows (every one new) and answers their results by input index. */
async function copyNewRows(
  pool: Pool,
  meta: TableMeta,
  group: InsertGroup,
  rows: InsertRow[],
  remoteIds: string[],
): Promise<Written> {
  const serviceColumn = meta.serviceIdColumn;
  let data = '';
  for (const row of rows) {
    const { cells } = row;
    for (let column = 0; column < cells.length; column += 1) {
      if (column > 0) data += '\t';
      data += copyField(cells[column]!);
    }
    if (serviceColumn) data += cells.length > 0 ? `\t${row.serviceId}` : row.serviceId;
    data += '\n';
  }
  const names = serviceColumn ? [...group.columns, serviceColumn] : group.columns;
  await copyFrom(pool, `COPY ${target(meta)} (${selectList(names)}) FROM STDIN`, Buffer.from(data, 'utf8'));
  const written: Written = new Map();
  rows.forEach((row, index) =>
    written.set(row.index, { ok: true, remoteId: remoteIds[index]!, record: null }),
  );
  return written;
}
