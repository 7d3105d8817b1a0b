/**
 * Writing records, one transaction per call (creates.ts for creates): rows of a call are written as a batch
 * behind a savepoint; when the batch fails, it is rolled back to the savepoint and replayed row by row, each
 * behind its own savepoint, so a bad row comes back as `{ ok: false }` and the others are written. Updates
 * are one multi-row `UPDATE ... FROM (VALUES ...)` per group of rows naming the same fields, and carry the
 * record as written; conditional updates (`expected`) lock and check their rows first. Deletes are one
 * `DELETE ... = ANY ($1)`; a record already gone is `ok`.
 */
import {
  changedError,
  changedField,
  ConnectorError,
  type RecordCreate,
  type RecordUpdate,
  type WriteResult,
} from '@lockstep/connectors-core';
import type { Pool, PoolClient } from 'pg';
import type { TableMeta } from './catalog';
import { textRows, withWriteTransaction } from './db';
import { readPlan, selectByKeys, selectList, toRecord } from './records';
import {
  castOf,
  metadataErrors,
  requireKey,
  sameKey,
  suggestsSchemaChange,
  target,
  unwritableField,
  validKey,
} from './schema';
import { ident } from './sql';
import { encodeValue, type PgParam } from './types';

/** Parameters per statement stay well under PostgreSQL's limit of 65,535 (multi-row UPDATEs). */
const MAX_PARAMS = 30_000;

export type Translate = (error: unknown) => ConnectorError;

export interface PreparedRow {
  index: number;
  values: Map<string, PgParam>;
  serviceId: string | null;
  remoteId?: string;
}

export function failure(error: ConnectorError): WriteResult {
  return { ok: false, error: error.toInfo() };
}

export function notFound(meta: TableMeta, remoteId: string): ConnectorError {
  return new ConnectorError('not_found', `Record "${remoteId}" does not exist in table "${meta.name}"`);
}

export function requireWritable(meta: TableMeta): void {
  if (meta.readOnly) throw new ConnectorError('permission', `Table "${meta.name}" cannot be written`);
}

/**
 * Runs `action` for all rows at once inside a savepoint; if that fails, runs it again row by row, each in
 * its own savepoint, so one bad row is reported and the others are written. With `stopOnSchemaChange`
 * (the table description came from the cache), a batch failure that suggests the table changed is thrown
 * instead, so the whole call is rolled back and retried with a fresh description.
 */
export async function batchWithFallback<R extends { index: number }>(
  client: PoolClient,
  rows: R[],
  action: (rows: R[]) => Promise<Map<number, WriteResult>>,
  results: WriteResult[],
  translate: Translate,
  stopOnSchemaChange = false,
): Promise<void> {
  if (rows.length === 0) return;
  await client.query('SAVEPOINT lockstep_batch');
  try {
    const written = await action(rows);
    await client.query('RELEASE SAVEPOINT lockstep_batch');
    written.forEach((result, index) => (results[index] = result));
    return;
  } catch (error) {
    if (stopOnSchemaChange && suggestsSchemaChange(error)) throw error;
    await client.query('ROLLBACK TO SAVEPOINT lockstep_batch');
  }
  await rowByRow(client, rows, action, results, translate);
}

/** Runs `action` for each row in its own savepoint; a row that fails gets its error as its result. */
export async function rowByRow<R extends { index: number }>(
  client: PoolClient,
  rows: R[],
  action: (rows: R[]) => Promise<Map<number, WriteResult>>,
  results: WriteResult[],
  translate: Translate,
): Promise<void> {
  for (const row of rows) {
    await client.query('SAVEPOINT lockstep_row');
    try {
      const written = await action([row]);
      await client.query('RELEASE SAVEPOINT lockstep_row');
      written.forEach((result, index) => (results[index] = result));
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT lockstep_row');
      results[row.index] = failure(translate(error));
    }
  }
}

/** Validates and encodes one row's values; returns an error instead of throwing. */
function encodeRow(
  meta: TableMeta,
  values: RecordCreate['values'],
  translate: Translate,
): Map<string, PgParam> | ConnectorError {
  const encoded = new Map<string, PgParam>();
  for (const fieldId in values) {
    const value = values[fieldId];
    const refused = unwritableField(meta, fieldId);
    if (refused) return refused;
    try {
      encoded.set(fieldId, encodeValue(meta.kinds.get(fieldId)!, value, fieldId));
    } catch (error) {
      return translate(error);
    }
  }
  return encoded;
}

function chunks<T>(rows: T[], paramsPerRow: number): T[][] {
  const size = Math.max(1, Math.floor(MAX_PARAMS / Math.max(1, paramsPerRow)));
  const result: T[][] = [];
  for (let start = 0; start < rows.length; start += size) result.push(rows.slice(start, start + size));
  return result;
}

type UpdateGroup = { signature: string; ids: Set<string>; rows: PreparedRow[] };

export async function update(
  pool: Pool,
  meta: TableMeta,
  rows: RecordUpdate[],
  cached: boolean,
  translate: Translate,
): Promise<WriteResult[]> {
  requireKey(meta);
  requireWritable(meta);
  const results: WriteResult[] = new Array(rows.length);
  // Rows with the same set of fields share a statement; a record appearing twice goes to a later group.
  const groups: UpdateGroup[] = [];
  rows.forEach((row, index) => {
    if (!validKey(meta, row.remoteId)) {
      results[index] = failure(notFound(meta, row.remoteId));
      return;
    }
    const values = encodeRow(meta, row.values, translate);
    if (values instanceof ConnectorError) {
      if (cached && metadataErrors.has(values)) throw values;
      results[index] = failure(values);
      return;
    }
    const signature = JSON.stringify([...values.keys()]);
    let group = groups.find(
      (candidate) => candidate.signature === signature && !candidate.ids.has(row.remoteId),
    );
    if (!group) {
      group = { signature, ids: new Set(), rows: [] };
      groups.push(group);
    }
    group.ids.add(row.remoteId);
    group.rows.push({ index, values, serviceId: null, remoteId: row.remoteId });
  });
  await withWriteTransaction(pool, async (client) => {
    await checkExpected(client, meta, rows, groups, results);
    for (const group of groups) {
      await batchWithFallback(
        client,
        group.rows,
        (batch) => updateGroup(client, meta, batch),
        results,
        translate,
        cached,
      );
    }
  });
  return results;
}

/**
 * Conditional updates (`RecordUpdate.expected`): their rows are locked and read in the write transaction,
 * and a row that no longer holds the expected values (or is gone) leaves its group with result `changed`
 * (`not_found`). The lock holds until the commit, so no edit can come between this check and the UPDATE.
 */
async function checkExpected(
  client: PoolClient,
  meta: TableMeta,
  input: RecordUpdate[],
  groups: { rows: PreparedRow[] }[],
  results: WriteResult[],
): Promise<void> {
  const conditional = groups
    .flatMap((group) => group.rows)
    .filter((row) => input[row.index]!.expected !== undefined);
  if (conditional.length === 0) return;
  const found = await selectByKeys(
    client,
    meta,
    conditional.map((row) => row.remoteId!),
    true,
  );
  const current = new Map(found.map((record) => [sameKey(meta, record.remoteId), record]));
  const refused = new Set<number>();
  for (const row of conditional) {
    const record = current.get(sameKey(meta, row.remoteId!));
    const field = record ? changedField(record, input[row.index]!.expected) : null;
    if (record && field === null) continue;
    results[row.index] = failure(
      record ? changedError(meta.name, row.remoteId!, field!) : notFound(meta, row.remoteId!),
    );
    refused.add(row.index);
  }
  if (refused.size > 0)
    for (const group of groups) group.rows = group.rows.filter((row) => !refused.has(row.index));
}

const UPDATE_GROUP_SQL = (
  table: string,
  assignments: string,
  tuples: string,
  aliases: string,
  key: string,
  returned: string,
) => `
UPDATE ${table} AS lockstep_target SET ${assignments}
FROM (VALUES ${tuples}) AS lockstep_values (${aliases})
WHERE lockstep_target.${key} = lockstep_values.lockstep_key
RETURNING lockstep_values.lockstep_ord::text, ${returned}`;

/** Rows naming no field: nothing to write, each result is the record as it is (or `not_found`). */
async function unchangedRows(
  client: PoolClient,
  meta: TableMeta,
  rows: PreparedRow[],
): Promise<Map<number, WriteResult>> {
  const written = new Map<number, WriteResult>();
  const found = new Map(
    (
      await selectByKeys(
        client,
        meta,
        rows.map((row) => row.remoteId!),
      )
    ).map((record) => [record.remoteId, record]),
  );
  for (const row of rows) {
    const record = found.get(row.remoteId!);
    written.set(
      row.index,
      record ? { ok: true, remoteId: record.remoteId, record } : failure(notFound(meta, row.remoteId!)),
    );
  }
  return written;
}

async function updateGroup(
  client: PoolClient,
  meta: TableMeta,
  rows: PreparedRow[],
): Promise<Map<number, WriteResult>> {
  const key = requireKey(meta);
  const plan = readPlan(meta);
  const written = new Map<number, WriteResult>();
  const columns = [...rows[0]!.values.keys()];
  if (columns.length === 0) return unchangedRows(client, meta, rows);
  for (const chunk of chunks(rows, columns.length + 2)) {
    const params: unknown[] = [];
    const tuples = chunk.map((row) => {
      params.push(row.index, row.remoteId);
      const cells = [`$${params.length - 1}::integer`, `$${params.length}::${castOf(meta, key)}`];
      for (const column of columns) {
        params.push(row.values.get(column));
        cells.push(`$${params.length}::${castOf(meta, column)}`);
      }
      return `(${cells.join(', ')})`;
    });
    const aliases = ['lockstep_ord', 'lockstep_key', ...columns.map((_, position) => `c${position}`)]
      .map(ident)
      .join(', ');
    const assignments = columns
      .map((column, position) => `${ident(column)} = lockstep_values.${ident(`c${position}`)}`)
      .join(', ');
    const returned = await textRows(
      client,
      UPDATE_GROUP_SQL(
        target(meta),
        assignments,
        tuples.join(', '),
        aliases,
        ident(key),
        selectList(plan.columns, 'lockstep_target'),
      ),
      params,
    );
    const byIndex = new Map(returned.map((row) => [Number(row[0]), row]));
    for (const row of chunk) {
      const found = byIndex.get(row.index);
      if (found) {
        const record = toRecord(plan, found, 1);
        written.set(row.index, { ok: true, remoteId: record.remoteId, record });
      } else {
        written.set(row.index, failure(notFound(meta, row.remoteId!)));
      }
    }
  }
  return written;
}

export async function deleteRows(
  pool: Pool,
  meta: TableMeta,
  remoteIds: string[],
  cached: boolean,
  translate: Translate,
): Promise<WriteResult[]> {
  const key = requireKey(meta);
  requireWritable(meta);
  const results: WriteResult[] = new Array(remoteIds.length);
  const rows: PreparedRow[] = [];
  remoteIds.forEach((remoteId, index) => {
    // A remote id the key column cannot hold names no row: it is already gone.
    if (validKey(meta, remoteId)) rows.push({ index, values: new Map(), serviceId: null, remoteId });
    else results[index] = { ok: true, remoteId, record: null };
  });
  await withWriteTransaction(pool, (client) =>
    batchWithFallback(
      client,
      rows,
      async (batch) => {
        await client.query(
          `DELETE FROM ${target(meta)} WHERE ${ident(key)} = ANY ($1::${castOf(meta, key)}[])`,
          [batch.map((row) => row.remoteId)],
        );
        return new Map(
          batch.map((row) => [row.index, { ok: true, remoteId: row.remoteId!, record: null } as WriteResult]),
        );
      },
      results,
      translate,
      cached,
    ),
  );
  return results;
}
