/**
 * Writing records in bulk, one transaction per call:
 *
 * - creates are multi-row INSERTs, updates one UPDATE per row, deletes one DELETE ... IN (...), all first
 *   tried as a batch behind a savepoint; when the batch fails on a bad row, it is rolled back to the
 *   savepoint and replayed row by row, each behind its own savepoint, so the bad rows come back as
 *   `{ ok: false }` and the others are written;
 * - a failure that is not about a row (connection lost, deadlock, lock timeout) rolls the whole call back
 *   and throws, so the engine retries it; so does, with `stopOnSchemaChange` (the table description came
 *   from the connection's cache), a failure that suggests the table changed: the connection then retries the
 *   call once with a fresh description;
 * - results are in input order. Creates return the new rows' remote ids without reading the rows back
 *   (`record: null`); updates carry the record read back in the same transaction.
 *
 * Idempotent create: when the table has the service id column, the row's `lockstep_id` is the link's
 * service id; a create whose service id is already in the table adopts that row instead of inserting.
 */
import {
  changedError,
  changedField,
  ConnectorError,
  type RecordCreate,
  type RecordUpdate,
  type SourceRecord,
  type WriteResult,
} from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import type { PoolConnection } from 'mysql2/promise';
import { exec, rows } from './db';
import { keyParam, LOOKUP_CHUNK, readByKeys } from './records';
import type { TableMeta } from './catalog';
import { metadataError, requireKey, suggestsSchemaChange } from './schema';
import { chunk, placeholders, quoteIdent } from './sql';
import { keyText } from './decode';
import { encodeValue, ValueError } from './encode';

/** Rows per multi-row INSERT (a createRecords batch of up to this many rows is one statement). */
export const INSERT_CHUNK = 1000;

type Translate = (error: unknown) => unknown;

export interface WriteOptions {
  translate: Translate;
  /** Throw (instead of reporting per row) a batch failure that suggests the table changed. */
  stopOnSchemaChange: boolean;
  /** The server's AUTO_INCREMENT settings (the connection caches them). */
  autoIncrement: () => Promise<AutoIncrement>;
}

interface Encoded {
  index: number;
  columns: Map<string, unknown>;
}

/** Failures that belong to the call (retry it), not to one row. */
const CALL_LEVEL = new Set(['transient', 'auth', 'rate_limited']);

function missing(meta: TableMeta, remoteId: string): ConnectorError {
  return new ConnectorError('not_found', `Record "${remoteId}" does not exist in "${meta.name}"`);
}

function failure(error: ConnectorError): WriteResult {
  return { ok: false, error: error.toInfo() };
}

function asConnectorError(error: unknown, translate: Translate): ConnectorError {
  const translated = translate(error);
  if (translated instanceof ConnectorError) return translated;
  throw translated;
}

function encodeRow(meta: TableMeta, values: Record<string, CanonicalValue>): Map<string, unknown> {
  const columns = new Map<string, unknown>();
  for (const [field, value] of Object.entries(values)) {
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

function requireWritable(meta: TableMeta): void {
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
async function tryBatch<T>(
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
async function isolate<T>(
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

function valuesSql(columns: string[], row: Map<string, unknown>, params: unknown[]): string {
  return (
    '(' +
    columns
      .map((column) => {
        if (!row.has(column)) return 'DEFAULT';
        params.push(row.get(column));
        return '?';
      })
      .join(', ') +
    ')'
  );
}

export interface AutoIncrement {
  /** Multi-row INSERTs get consecutive ids (innodb_autoinc_lock_mode 0 or 1). */
  consecutive: boolean;
  increment: number;
}

export async function autoIncrementSettings(connection: PoolConnection): Promise<AutoIncrement> {
  const [row] = await rows(
    connection,
    'SELECT @@innodb_autoinc_lock_mode AS mode, @@auto_increment_increment AS increment',
  );
  return { consecutive: Number(row.mode) <= 1, increment: Math.max(1, Number(row.increment) || 1) };
}

interface PendingCreate extends Encoded {
  serviceId: string;
  /** The new row's key when it is known before inserting (a written key, or the service id as key). */
  knownKey: string | null;
}

export async function createRecords(
  connection: PoolConnection,
  meta: TableMeta,
  input: RecordCreate[],
  options: WriteOptions,
): Promise<WriteResult[]> {
  const { translate } = options;
  requireWritable(meta);
  const key = requireKey(meta);
  const results: (WriteResult | null)[] = input.map(() => null);
  const serviceColumn = meta.serviceIdColumn;
  const autoIncrementKey = meta.autoIncrementColumn === key.column;
  const pending: PendingCreate[] = [];
  for (let index = 0; index < input.length; index++) {
    const row = input[index];
    try {
      const columns = encodeRow(meta, row.values);
      const serviceId = typeof row.serviceId === 'string' ? row.serviceId.trim().toLowerCase() : '';
      if (serviceColumn) {
        if (serviceId === '')
          throw new ConnectorError('invalid_data', `A create in "${meta.name}" needs a service id`);
        columns.set(serviceColumn, serviceId);
      }
      const written = columns.get(key.column);
      const knownKey = written === undefined || written === null ? null : String(written);
      if (knownKey === null && !serviceColumn && !autoIncrementKey) {
        throw new ConnectorError(
          'invalid_data',
          `Field "${key.column}" (the key of "${meta.name}") is needed to create a record`,
        );
      }
      pending.push({ index, columns, serviceId, knownKey });
    } catch (error) {
      // A field the cached description does not know may have been added since: retry with a fresh one.
      if (options.stopOnSchemaChange && suggestsSchemaChange(error)) throw error;
      results[index] = failure(asConnectorError(error, translate));
    }
  }

  // Adopt rows an earlier (crashed or repeated) create already wrote; a repeat inside this call shares the
  // result of the first row with that service id.
  const adopted = new Map<number, string>();
  const repeatOf = new Map<number, number>();
  const toInsert: PendingCreate[] = [];
  if (serviceColumn) {
    const firstInCall = new Map<string, number>();
    for (const row of pending) {
      const first = firstInCall.get(row.serviceId);
      if (first !== undefined) repeatOf.set(row.index, first);
      else {
        firstInCall.set(row.serviceId, row.index);
        toInsert.push(row);
      }
    }
  } else {
    toInsert.push(...pending);
  }

  const inserted = new Map<number, string>();
  const autoIncrement = autoIncrementKey && !serviceColumn ? await options.autoIncrement() : null;
  const table = quoteIdent(meta.name);
  const insertOne = async (row: PendingCreate): Promise<void> => {
    const columns = [...row.columns.keys()];
    const params: unknown[] = [];
    const columnList = `(${columns.map(quoteIdent).join(', ')})`;
    const result = await exec(
      connection,
      `INSERT INTO ${table} ${columnList} VALUES ${valuesSql(columns, row.columns, params)}`,
      params,
    );
    if (row.knownKey !== null) inserted.set(row.index, row.knownKey);
    else if (autoIncrement) inserted.set(row.index, String(result.insertId));
  };
  const insertBatch = async (batch: PendingCreate[]): Promise<void> => {
    const needsInsertIds = autoIncrement !== null && batch.some((row) => row.knownKey === null);
    if (needsInsertIds && (!autoIncrement.consecutive || batch.some((row) => row.knownKey !== null))) {
      // New ids cannot be derived from one multi-row statement here: insert one by one.
      for (const row of batch) await insertOne(row);
      return;
    }
    const columns = [...new Set(batch.flatMap((row) => [...row.columns.keys()]))];
    const params: unknown[] = [];
    const tuples = batch.map((row) => valuesSql(columns, row.columns, params));
    const result = await exec(
      connection,
      `INSERT INTO ${table} (${columns.map(quoteIdent).join(', ')}) VALUES ${tuples.join(', ')}`,
      params,
    );
    batch.forEach((row, i) => {
      if (row.knownKey !== null) inserted.set(row.index, row.knownKey);
      // One multi-row INSERT gets consecutive ids (lock mode 0/1), auto_increment_increment apart.
      else if (autoIncrement)
        inserted.set(row.index, String(BigInt(result.insertId) + BigInt(i * autoIncrement.increment)));
    });
  };
  /** The rows whose service id is not in the table yet; the others are adopted. */
  const notWrittenYet = async (part: PendingCreate[]): Promise<PendingCreate[]> => {
    const existing = await keysByServiceId(
      connection,
      meta,
      part.map((row) => row.serviceId),
    );
    const rest: PendingCreate[] = [];
    for (const row of part) {
      const found = existing.get(row.serviceId);
      if (found !== undefined) adopted.set(row.index, found);
      else rest.push(row);
    }
    return rest;
  };
  for (const part of chunk(toInsert, INSERT_CHUNK)) {
    // With a unique index on the column, a service id already in the table fails the INSERT: creates are almost
    // always new rows, so the part is tried as one INSERT before any lookup, and looked up only when that failed
    // (a service id already there, or a bad row; nothing of it was written then).
    if (serviceColumn && meta.serviceIdUnique && (await tryBatch(connection, part, options, insertBatch))) continue;
    const rows = serviceColumn ? await notWrittenYet(part) : part;
    const errors = await isolate(connection, rows, options, insertBatch, insertOne);
    errors.forEach((error, i) => {
      if (error) {
        results[rows[i].index] = failure(error);
        inserted.delete(rows[i].index);
      }
    });
  }

  // With a service id column, new keys that were not written (an AUTO_INCREMENT key) are found by service id.
  const unlocated = toInsert.filter(
    (row) => results[row.index] === null && !inserted.has(row.index) && !adopted.has(row.index),
  );
  if (serviceColumn && unlocated.length > 0) {
    const keys = await keysByServiceId(
      connection,
      meta,
      unlocated.map((row) => row.serviceId),
    );
    for (const row of unlocated) {
      const found = keys.get(row.serviceId);
      if (found !== undefined) inserted.set(row.index, found);
    }
  }

  // The rows are not read back: a result carries the remote id (the key's text as the row was written, the
  // new AUTO_INCREMENT value, or the key of the row holding the service id).
  const remoteIds = new Map<number, string>([...inserted, ...adopted]);
  for (const row of pending) {
    if (results[row.index] || repeatOf.has(row.index)) continue;
    const remoteId = remoteIds.get(row.index);
    results[row.index] =
      remoteId === undefined
        ? failure(new ConnectorError('invalid_data', `The new row of "${meta.name}" could not be found`))
        : { ok: true, remoteId, record: null };
  }
  for (const [index, first] of repeatOf) results[index] = results[first];
  return results.map(
    (result) => result ?? failure(new ConnectorError('invalid_data', 'The row was not written')),
  );
}

async function keysByServiceId(
  connection: PoolConnection,
  meta: TableMeta,
  serviceIds: string[],
): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  const serviceColumn = meta.serviceIdColumn;
  const ids = [...new Set(serviceIds.filter((id) => id !== ''))];
  if (!serviceColumn || ids.length === 0) return keys;
  const key = requireKey(meta);
  for (const part of chunk(ids, LOOKUP_CHUNK)) {
    const found = await rows(
      connection,
      `SELECT ${quoteIdent(key.column)} AS k, ${quoteIdent(serviceColumn)} AS s FROM ${quoteIdent(meta.name)} WHERE ${quoteIdent(serviceColumn)} IN (${placeholders(part.length)})`,
      part,
    );
    for (const row of found) keys.set(String(row.s).toLowerCase(), keyText(row.k));
  }
  return keys;
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
      if (param === undefined)
        throw missing(meta, row.remoteId);
      const columns = encodeRow(meta, row.values);
      const written = columns.get(key.column);
      const newRemoteId = written === undefined || written === null ? row.remoteId : String(written);
      pending.push({ index, columns, key: param, newRemoteId });
    } catch (error) {
      if (options.stopOnSchemaChange && suggestsSchemaChange(error)) throw error;
      results[index] = failure(asConnectorError(error, translate));
    }
  });

  // Conditional updates (`RecordUpdate.expected`): their rows are locked and read in this transaction first; a row
  // that no longer holds the expected values (or is gone) is not written (`changed`, `not_found`). The lock holds
  // until the commit, so no edit can come between the check and the UPDATE.
  const conditional = pending.filter((row) => input[row.index].expected !== undefined);
  if (conditional.length > 0) {
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
    pending = pending.filter((row) => results[row.index] === null);
  }

  const table = quoteIdent(meta.name);
  const updateOne = async (row: PendingUpdate): Promise<void> => {
    if (row.columns.size === 0) return;
    const params: unknown[] = [];
    const sets = [...row.columns.entries()].map(([column, value]) => {
      params.push(value);
      return `${quoteIdent(column)} = ?`;
    });
    params.push(row.key);
    await exec(
      connection,
      `UPDATE ${table} SET ${sets.join(', ')} WHERE ${quoteIdent(key.column)} = ?`,
      params,
    );
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
  const table = quoteIdent(meta.name);
  const k = quoteIdent(key.column);
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
        await exec(
          connection,
          `DELETE FROM ${table} WHERE ${k} IN (${placeholders(batch.length)})`,
          batch.map((item) => item.param),
        );
      },
      async (item) => {
        await exec(connection, `DELETE FROM ${table} WHERE ${k} = ?`, [item.param]);
      },
    );
    errors.forEach((error, i) => {
      if (error) results[part[i].index] = failure(error);
    });
  }
  return results;
}
