/**
 * Writing records in bulk, one transaction per call (creates in creates.ts):
 *
 * - creates are multi-row INSERTs, updates one UPDATE per row, deletes one DELETE ... IN (...), all first
 *   tried as a batch behind a savepoint; when the batch fails on a bad row, it is rolled back to the
 *   savepoint and replayed row by row, each behind its own savepoint, so the bad rows come back as
 *   `{ ok: false }` and the others are written;
 * - a failure that is not about a row (connection lost, deadlock, lock timeout) rolls the whole call back
 *   and throws, so the engine retries it; so does, with `stopOnSchemaChange` (the table description came
 *   from the connection's cache), a failure that suggests the table changed: the connection then retries the
 *   call once with a fresh description;
 * - results are in input order; updates carry the record read back in the same transaction.
 */
import {
  changedError,
  changedField,
  ConnectorError,
  type RecordUpdate,
  type SourceRecord,
  type WriteResult,
} from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import type { PoolConnection } from 'mysql2/promise';
import type { AutoIncrement } from './creates';
import type { TableMeta } from './catalog';
import { exec } from './db';
import { encodeValue, ValueError } from './encode';
import { keyParam, LOOKUP_CHUNK, readByKeys } from './records';
import { metadataError, requireKey, suggestsSchemaChange } from './schema';
import { chunk, placeholders, quoteIdent } from './sql';

type Translate = (error: unknown) => unknown;

export interface WriteOptions {
  translate: Translate;
  /** Throw (instead of reporting per row) a batch failure that suggests the table changed. */
  stopOnSchemaChange: boolean;
  /** The server's AUTO_INCREMENT settings (the connection caches them). */
  autoIncrement: () => Promise<AutoIncrement>;
}

export interface Encoded {
  index: number;
  columns: Map<string, unknown>;
}

const UPDATE_SQL = (meta: TableMeta, keyColumn: string, sets: string[]) => `
UPDATE ${quoteIdent(meta.name)}
   SET ${sets.join(', ')}
 WHERE ${quoteIdent(keyColumn)} = ?`;

const DELETE_ONE_SQL = (meta: TableMeta, keyColumn: string) => `
DELETE FROM ${quoteIdent(meta.name)} WHERE ${quoteIdent(keyColumn)} = ?`;

const DELETE_MANY_SQL = (meta: TableMeta, keyColumn: string, count: number) => `
DELETE FROM ${quoteIdent(meta.name)} WHERE ${quoteIdent(keyColumn)} IN (${placeholders(count)})`;

/** Failures that belong to the call (retry it), not to one row. */
const CALL_LEVEL = new Set(['transient', 'auth', 'rate_limited']);

function missing(meta: TableMeta, remoteId: string): ConnectorError {
  return new ConnectorError('not_found', `Record "${remoteId}" does not exist in "${meta.name}"`);
}

export function failure(error: ConnectorError): WriteResult {
  return { ok: false, error: error.toInfo() };
}

export function asConnectorError(error: unknown, translate: Translate): ConnectorError {
  const translated = translate(error);
  if (translated instanceof ConnectorError) return translated;
  throw translated;
}

export function encodeRow(meta: TableMeta, values: Record<string, CanonicalValue>): Map<string, unknown> {
  const columns = new Map<string, unknown>();
  for (const field of Object.keys(values)) {
    const value = values[field];
    const column = meta.byName.get(field);
    if (!column)
      throw metadataError('invalid_data', `Field "${field}" does not exist in table "${meta.name}"`);
    if (!column.write)
      throw new ConnectorError('invalid_data', `Field "${field}" of table "${meta.name}" is read-only`);
    try {
      columns.set(field, encodeValue(column, value));
    } catch (error) {
      if (error instanceof ValueError) throw new ConnectorError('invalid_data', error.message);
      throw error;
    }
  }
  return columns;
}

export function requireWritable(meta: TableMeta): void {
  if (meta.isView)
    throw new ConnectorError(
      'unsupported',
      `"${meta.name}" is a view, which Lockstep reads but does not write`,
    );
}

/**
 * Runs `batch` behind a savepoint. True when it went through; false when it failed on a row (rolled back to
 * the savepoint: nothing of it was written). Call-level failures are thrown.
 */
export async function tryBatch<T>(
  connection: PoolConnection,
  items: T[],
  options: Pick<WriteOptions, 'translate' | 'stopOnSchemaChange'>,
  batch: (items: T[]) => Promise<void>,
): Promise<boolean> {
  await exec(connection, 'SAVEPOINT lockstep_batch');
  try {
    await batch(items);
    return true;
  } catch (error) {
    const failed = asConnectorError(error, options.translate);
    if (CALL_LEVEL.has(failed.kind) || (options.stopOnSchemaChange && suggestsSchemaChange(failed)))
      throw failed;
  }
  await exec(connection, 'ROLLBACK TO SAVEPOINT lockstep_batch');
  return false;
}

/**
 * Runs `batch` behind a savepoint; if it fails on a row, replays `one` row by row behind savepoints.
 * Returns the per-item error (or null). Call-level failures are thrown.
 */
export async function isolate<T>(
  connection: PoolConnection,
  items: T[],
  options: Pick<WriteOptions, 'translate' | 'stopOnSchemaChange'>,
  batch: (items: T[]) => Promise<void>,
  one: (item: T) => Promise<void>,
): Promise<(ConnectorError | null)[]> {
  const { translate } = options;
  const errors: (ConnectorError | null)[] = items.map(() => null);
  if (items.length === 0 || (await tryBatch(connection, items, options, batch))) return errors;
  for (let i = 0; i < items.length; i++) {
    await exec(connection, 'SAVEPOINT lockstep_row');
    try {
      await one(items[i]);
    } catch (error) {
      const failed = asConnectorError(error, translate);
      if (CALL_LEVEL.has(failed.kind)) throw failed;
      await exec(connection, 'ROLLBACK TO SAVEPOINT lockstep_row');
      errors[i] = failed;
    }
  }
  return errors;
}

export function valuesSql(columns: string[], row: Map<string, unknown>, params: unknown[]): string {
  let tuple = '(';
  for (let index = 0; index < columns.length; index += 1) {
    const column = columns[index];
    if (index > 0) tuple += ', ';
    if (row.has(column)) {
      params.push(row.get(column));
      tuple += '?';
    } else tuple += 'DEFAULT';
  }
  return tuple + ')';
}

async function recordsByKey(
  connection: PoolConnection,
  meta: TableMeta,
  remoteIds: string[],
  lock = false,
): Promise<Map<string, SourceRecord>> {
  const records = await readByKeys(connection, meta, remoteIds, undefined, lock);
  const byKey = new Map(records.map((record) => [record.remoteId, record]));
  // A key written as "007" comes back as "7": match integer keys numerically.
  const key = requireKey(meta);
  if (key.integer) {
    for (const id of remoteIds) {
      if (byKey.has(id)) continue;
      const param = keyParam(key, id);
      const record =
        param === undefined ? undefined : records.find((candidate) => candidate.remoteId === String(param));
      if (record) byKey.set(id, record);
    }
  }
  return byKey;
}

interface PendingUpdate extends Encoded {
  key: string | bigint;
  /** The key after the update (the key column may be written). */
  newRemoteId: string;
}

/**
 * Conditional updates (`RecordUpdate.expected`): their rows are locked and read in this transaction first;
 * a row that no longer holds the expected values (or is gone) is not written (`changed`, `not_found` in
 * `results`). The lock holds until the commit, so no edit can come between the check and the UPDATE.
 */
async function refuseChanged(
  connection: PoolConnection,
  meta: TableMeta,
  input: RecordUpdate[],
  pending: PendingUpdate[],
  results: (WriteResult | null)[],
): Promise<void> {
  const conditional = pending.filter((row) => input[row.index].expected !== undefined);
  if (conditional.length === 0) return;
  const current = await recordsByKey(
    connection,
    meta,
    conditional.map((row) => input[row.index].remoteId),
    true,
  );
  for (const row of conditional) {
    const { remoteId, expected } = input[row.index];
    const record = current.get(remoteId);
    const field = record ? changedField(record, expected) : null;
    if (record && field === null) continue;
    results[row.index] = failure(
      record ? changedError(meta.name, remoteId, field!) : missing(meta, remoteId),
    );
  }
}

export async function updateRecords(
  connection: PoolConnection,
  meta: TableMeta,
  input: RecordUpdate[],
  options: Pick<WriteOptions, 'translate' | 'stopOnSchemaChange'>,
): Promise<WriteResult[]> {
  const { translate } = options;
  requireWritable(meta);
  const key = requireKey(meta);
  const results: (WriteResult | null)[] = input.map(() => null);
  let pending: PendingUpdate[] = [];
  input.forEach((row, index) => {
    try {
      const param = keyParam(key, row.remoteId);
      if (param === undefined) throw missing(meta, row.remoteId);
      const columns = encodeRow(meta, row.values);
      const written = columns.get(key.column);
      const newRemoteId = written === undefined || written === null ? row.remoteId : String(written);
      pending.push({ index, columns, key: param, newRemoteId });
    } catch (error) {
      if (options.stopOnSchemaChange && suggestsSchemaChange(error)) throw error;
      results[index] = failure(asConnectorError(error, translate));
    }
  });

  await refuseChanged(connection, meta, input, pending, results);
  pending = pending.filter((row) => results[row.index] === null);

  const updateOne = async (row: PendingUpdate): Promise<void> => {
    if (row.columns.size === 0) return;
    const params: unknown[] = [];
    const sets = [...row.columns.entries()].map(([column, value]) => {
      params.push(value);
      return `${quoteIdent(column)} = ?`;
    });
    params.push(row.key);
    await exec(connection, UPDATE_SQL(meta, key.column, sets), params);
  };
  const errors = await isolate(
    connection,
    pending,
    options,
    async (rowsToUpdate) => {
      for (const row of rowsToUpdate) await updateOne(row);
    },
    updateOne,
  );
  errors.forEach((error, i) => {
    if (error) results[pending[i].index] = failure(error);
  });

  const written = pending.filter((row) => results[row.index] === null);
  const records = await recordsByKey(
    connection,
    meta,
    written.map((row) => row.newRemoteId),
  );
  for (const row of written) {
    const record = records.get(row.newRemoteId);
    results[row.index] = record
      ? { ok: true, remoteId: record.remoteId, record }
      : failure(missing(meta, input[row.index].remoteId));
  }
  return results.map(
    (result) => result ?? failure(new ConnectorError('invalid_data', 'The row was not written')),
  );
}

export async function deleteRecords(
  connection: PoolConnection,
  meta: TableMeta,
  remoteIds: string[],
  options: Pick<WriteOptions, 'translate' | 'stopOnSchemaChange'>,
): Promise<WriteResult[]> {
  requireWritable(meta);
  const key = requireKey(meta);
  const items = remoteIds.map((remoteId, index) => ({ index, remoteId, param: keyParam(key, remoteId) }));
  // A remote id that cannot be a key value names no row: already gone, which is what the caller wanted.
  const deletable = items.filter((item) => item.param !== undefined);
  const results: WriteResult[] = items.map((item) => ({ ok: true, remoteId: item.remoteId, record: null }));
  for (const part of chunk(deletable, LOOKUP_CHUNK)) {
    const errors = await isolate(
      connection,
      part,
      options,
      async (batch) => {
        const params = batch.map((item) => item.param);
        await exec(connection, DELETE_MANY_SQL(meta, key.column, batch.length), params);
      },
      async (item) => {
        await exec(connection, DELETE_ONE_SQL(meta, key.column), [item.param]);
      },
    );
    errors.forEach((error, i) => {
      if (error) results[part[i].index] = failure(error);
    });
  }
  return results;
}
