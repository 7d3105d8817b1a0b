/**
 * Creating records. Rows naming the same fields (in the same order) form a group and share a statement
 * (inserts.ts): `COPY ... FROM STDIN` when the table and the rows allow it, else one
 * `INSERT ... SELECT ... FROM unnest(...)`. With a service id column, a create is idempotent: a row whose
 * service id is in the table already is adopted, not written again. Results carry the remote id, not the
 * record (`record: null`).
 */
import { ConnectorError, type RecordCreate, type WriteResult } from '@lockstep/connectors-core';
import type { Pool } from 'pg';
import type { TableMeta } from './catalog';
import { withWriteTransaction } from './db';
import { copyIn, insertRows, type InsertGroup, type InsertRow } from './inserts';
import { metadataErrors, requireKey, suggestsSchemaChange, unwritableField } from './schema';
import { isUuid } from './sql';
import { encodeValue, type ColumnKind, type PgParam } from './types';
import { batchWithFallback, failure, requireWritable, rowByRow, type Translate } from './writes';

/** Rows per INSERT; each column of the rows travels as one array parameter. */
const INSERT_CHUNK = 5_000;

/** Whether `values` has exactly the keys `columns`, in that order (without building a list of them). */
function hasKeys(values: Record<string, unknown>, columns: string[]): boolean {
  let position = 0;
  for (const key in values) {
    if (key !== columns[position]) return false;
    position += 1;
  }
  return position === columns.length;
}

/** The group for rows naming `fields` (in this order), or why such rows cannot be written. */
function insertGroup(meta: TableMeta, fields: string[]): InsertGroup | ConnectorError {
  const kinds: ColumnKind[] = [];
  for (const fieldId of fields) {
    const refused = unwritableField(meta, fieldId);
    if (refused) return refused;
    kinds.push(meta.kinds.get(fieldId)!);
  }
  return { columns: fields, kinds, rows: [] };
}

/**
 * Sorts the rows into groups by the fields they name (absent fields get their default) and encodes them;
 * a row that cannot be written gets its result here. A field the cached description does not know may have
 * been added since: with `cached`, that is thrown, and the call is retried with a fresh description.
 */
function groupRows(
  meta: TableMeta,
  rows: RecordCreate[],
  cached: boolean,
  results: WriteResult[],
  translate: Translate,
): InsertGroup[] {
  const groups = new Map<string, InsertGroup | ConnectorError>();
  let group: InsertGroup | ConnectorError | null = null;
  let groupColumns: string[] = [];
  for (let index = 0; index < rows.length; index += 1) {
    const { values, serviceId } = rows[index]!;
    if (group === null || !hasKeys(values, groupColumns)) {
      groupColumns = Object.keys(values);
      const signature = groupColumns.join('\u0000');
      group = groups.get(signature) ?? insertGroup(meta, groupColumns);
      groups.set(signature, group);
    }
    if (group instanceof ConnectorError) {
      if (cached && metadataErrors.has(group)) throw group;
      results[index] = failure(group);
      continue;
    }
    if (meta.serviceIdColumn && !isUuid(serviceId)) {
      results[index] = failure(
        new ConnectorError('invalid_data', `The service id "${serviceId}" is not a UUID`),
      );
      continue;
    }
    const cells: PgParam[] = new Array(groupColumns.length);
    try {
      for (let column = 0; column < groupColumns.length; column += 1) {
        const fieldId = groupColumns[column]!;
        cells[column] = encodeValue(group.kinds[column]!, values[fieldId], fieldId);
      }
    } catch (error) {
      results[index] = failure(translate(error));
      continue;
    }
    group.rows.push({ index, cells, serviceId: meta.serviceIdColumn ? serviceId.toLowerCase() : null });
  }
  return [...groups.values()].filter(
    (candidate): candidate is InsertGroup => !(candidate instanceof ConnectorError),
  );
}

export async function create(
  pool: Pool,
  meta: TableMeta,
  rows: RecordCreate[],
  cached: boolean,
  translate: Translate,
): Promise<WriteResult[]> {
  requireKey(meta);
  requireWritable(meta);
  const results: WriteResult[] = new Array(rows.length);
  const statements: { group: InsertGroup; rows: InsertRow[] }[] = [];
  for (const group of groupRows(meta, rows, cached, results, translate)) {
    for (let start = 0; start < group.rows.length; start += INSERT_CHUNK) {
      statements.push({ group, rows: group.rows.slice(start, start + INSERT_CHUNK) });
    }
  }
  const only = statements.length === 1 ? statements[0]! : null;
  if (only && (only.group.columns.length > 0 || meta.serviceIdColumn)) {
    await createOne(pool, meta, only.group, only.rows, cached, results, translate);
    return results;
  }
  if (statements.length > 0) {
    await withWriteTransaction(pool, async (client) => {
      for (const statement of statements) {
        await batchWithFallback(
          client,
          statement.rows,
          (batch) => insertRows(client, meta, statement.group, batch),
          results,
          translate,
          cached,
        );
      }
    });
  }
  return results;
}

/**
 * One statement is a transaction of its own: no BEGIN, savepoint or COMMIT round trips. COPY when the table
 * and the rows allow it (see `copyIn`), else one INSERT; when that fails, nothing was written, and the rows
 * are written one by one to find the bad ones.
 */
async function createOne(
  pool: Pool,
  meta: TableMeta,
  group: InsertGroup,
  rows: InsertRow[],
  cached: boolean,
  results: WriteResult[],
  translate: Translate,
): Promise<void> {
  try {
    const copied = meta.copyable ? await copyIn(pool, meta, group, rows) : null;
    const written = copied ?? (await insertRows(pool, meta, group, rows));
    written.forEach((result, index) => (results[index] = result));
    return;
  } catch (error) {
    if (cached && suggestsSchemaChange(error)) throw error;
    // Nothing was written: find the bad rows one by one below.
  }
  await withWriteTransaction(pool, (client) =>
    rowByRow(client, rows, (batch) => insertRows(client, meta, group, batch), results, translate),
  );
}
