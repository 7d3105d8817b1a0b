/**
 * Creating records: multi-row INSERTs, first tried as a batch behind a savepoint and replayed row by row
 * when a row is bad (writes.ts `isolate`). Results carry the new rows' remote ids without reading the rows
 * back (`record: null`).
 *
 * Idempotent create: when the table has the service id column, the row's `lockstep_id` is the link's
 * service id; a create whose service id is already in the table adopts that row instead of inserting, and a
 * repeat inside one call shares the result of the first row with that service id.
 */
import { ConnectorError, type RecordCreate, type WriteResult } from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import type { TableKey, TableMeta } from './catalog';
import { exec, rows } from './db';
import { keyText } from './decode';
import { LOOKUP_CHUNK } from './records';
import { requireKey, suggestsSchemaChange } from './schema';
import { chunk, placeholders, quoteIdent } from './sql';
import {
  asConnectorError,
  encodeRow,
  failure,
  isolate,
  requireWritable,
  tryBatch,
  valuesSql,
  type Encoded,
  type WriteOptions,
} from './writes';

/** Rows per multi-row INSERT (a createRecords batch of up to this many rows is one statement). */
export const INSERT_CHUNK = 1000;

export interface AutoIncrement {
  /** Multi-row INSERTs get consecutive ids (innodb_autoinc_lock_mode 0 or 1). */
  consecutive: boolean;
  increment: number;
}

const AUTO_INCREMENT_SQL = `
SELECT @@innodb_autoinc_lock_mode AS mode, @@auto_increment_increment AS increment`;

const INSERT_SQL = (meta: TableMeta, columns: string[], tuples: string[]) => `
INSERT INTO ${quoteIdent(meta.name)} (${columns.map(quoteIdent).join(', ')})
VALUES ${tuples.join(', ')}`;

const KEYS_BY_SERVICE_ID_SQL = (meta: TableMeta, key: TableKey, serviceColumn: string, count: number) => `
SELECT ${quoteIdent(key.column)} AS k, ${quoteIdent(serviceColumn)} AS s
  FROM ${quoteIdent(meta.name)}
 WHERE ${quoteIdent(serviceColumn)} IN (${placeholders(count)})`;

export async function autoIncrementSettings(connection: PoolConnection): Promise<AutoIncrement> {
  const [row] = await rows(connection, AUTO_INCREMENT_SQL);
  return { consecutive: Number(row.mode) <= 1, increment: Math.max(1, Number(row.increment) || 1) };
}

interface PendingCreate extends Encoded {
  serviceId: string;
  /** The new row's key when it is known before inserting (a written key, or the service id as key). */
  knownKey: string | null;
}

/** One createRecords call: its table, its results so far, and the remote ids found for its rows. */
interface CreateCall {
  connection: PoolConnection;
  meta: TableMeta;
  key: TableKey;
  options: WriteOptions;
  serviceColumn: string | null;
  results: (WriteResult | null)[];
  /** Input index -> the remote id of the row this call inserted. */
  inserted: Map<number, string>;
  /** Input index -> the remote id of the row an earlier create wrote with the same service id. */
  adopted: Map<number, string>;
}

export async function createRecords(
  connection: PoolConnection,
  meta: TableMeta,
  input: RecordCreate[],
  options: WriteOptions,
): Promise<WriteResult[]> {
  requireWritable(meta);
  const call: CreateCall = {
    connection,
    meta,
    key: requireKey(meta),
    options,
    serviceColumn: meta.serviceIdColumn,
    results: input.map(() => null),
    inserted: new Map(),
    adopted: new Map(),
  };
  const pending = encodeCreates(call, input);
  const { toInsert, repeatOf } = firstPerServiceId(call, pending);
  await insertAll(call, toInsert);
  await locateByServiceId(call, toInsert);

  // The rows are not read back: a result carries the remote id (the key's text as the row was written, the
  // new AUTO_INCREMENT value, or the key of the row holding the service id).
  const { results, inserted, adopted } = call;
  for (const row of pending) {
    if (results[row.index] || repeatOf.has(row.index)) continue;
    const remoteId = adopted.get(row.index) ?? inserted.get(row.index);
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

/** The rows to write, encoded; a row that cannot be gets its failure in `call.results`. */
function encodeCreates(call: CreateCall, input: RecordCreate[]): PendingCreate[] {
  const { meta, key, serviceColumn, options } = call;
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
      call.results[index] = failure(asConnectorError(error, options.translate));
    }
  }
  return pending;
}

/**
 * With a service id column, the rows to insert are the first of each service id in the call; a repeat
 * (`repeatOf`: its index -> the first's) shares the first's result.
 */
function firstPerServiceId(
  call: CreateCall,
  pending: PendingCreate[],
): { toInsert: PendingCreate[]; repeatOf: Map<number, number> } {
  const repeatOf = new Map<number, number>();
  if (!call.serviceColumn) return { toInsert: [...pending], repeatOf };
  const toInsert: PendingCreate[] = [];
  const firstInCall = new Map<string, number>();
  for (const row of pending) {
    const first = firstInCall.get(row.serviceId);
    if (first !== undefined) repeatOf.set(row.index, first);
    else {
      firstInCall.set(row.serviceId, row.index);
      toInsert.push(row);
    }
  }
  return { toInsert, repeatOf };
}

/** Inserts the rows a part at a time; rows already written (by service id) are adopted instead. */
async function insertAll(call: CreateCall, toInsert: PendingCreate[]): Promise<void> {
  const { connection, meta, key, options, serviceColumn } = call;
  const autoIncrementKey = meta.autoIncrementColumn === key.column;
  const autoIncrement = autoIncrementKey && !serviceColumn ? await options.autoIncrement() : null;
  const { insertOne, insertBatch } = inserts(call, autoIncrement);
  for (const part of chunk(toInsert, INSERT_CHUNK)) {
    // With a unique index on the column, a service id already in the table fails the INSERT: creates are
    // almost always new rows, so the part is tried as one INSERT before any lookup, and looked up only when
    // that failed (a service id already there, or a bad row; nothing of it was written then).
    if (serviceColumn && meta.serviceIdUnique && (await tryBatch(connection, part, options, insertBatch)))
      continue;
    const rows = serviceColumn ? await notWrittenYet(call, part) : part;
    const errors = await isolate(connection, rows, options, insertBatch, insertOne);
    errors.forEach((error, i) => {
      if (error) {
        call.results[rows[i].index] = failure(error);
        call.inserted.delete(rows[i].index);
      }
    });
  }
}

/** One row's INSERT and a batch's, which record the remote ids they know in `call.inserted`. */
function inserts(
  call: CreateCall,
  autoIncrement: AutoIncrement | null,
): {
  insertOne: (row: PendingCreate) => Promise<void>;
  insertBatch: (batch: PendingCreate[]) => Promise<void>;
} {
  const { connection, meta, inserted } = call;
  const insertOne = async (row: PendingCreate): Promise<void> => {
    const columns = [...row.columns.keys()];
    const params: unknown[] = [];
    const tuple = valuesSql(columns, row.columns, params);
    const result = await exec(connection, INSERT_SQL(meta, columns, [tuple]), params);
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
    const columns = columnsOf(batch);
    const params: unknown[] = [];
    const tuples = batch.map((row) => valuesSql(columns, row.columns, params));
    const result = await exec(connection, INSERT_SQL(meta, columns, tuples), params);
    batch.forEach((row, i) => {
      if (row.knownKey !== null) inserted.set(row.index, row.knownKey);
      // One multi-row INSERT gets consecutive ids (lock mode 0/1), auto_increment_increment apart.
      else if (autoIncrement)
        inserted.set(row.index, String(BigInt(result.insertId) + BigInt(i * autoIncrement.increment)));
    });
  };
  return { insertOne, insertBatch };
}

/** The columns a batch writes: those of any of its rows, in the order they first appear. */
function columnsOf(batch: PendingCreate[]): string[] {
  const columns = new Set<string>();
  for (const row of batch) for (const column of row.columns.keys()) columns.add(column);
  return [...columns];
}

/** The rows whose service id is not in the table yet; the others are adopted. */
async function notWrittenYet(call: CreateCall, part: PendingCreate[]): Promise<PendingCreate[]> {
  const existing = await keysByServiceId(
    call.connection,
    call.meta,
    part.map((row) => row.serviceId),
  );
  const rest: PendingCreate[] = [];
  for (const row of part) {
    const found = existing.get(row.serviceId);
    if (found !== undefined) call.adopted.set(row.index, found);
    else rest.push(row);
  }
  return rest;
}

/** With a service id column, new keys not written (an AUTO_INCREMENT key) are found by service id. */
async function locateByServiceId(call: CreateCall, toInsert: PendingCreate[]): Promise<void> {
  const { results, inserted, adopted } = call;
  const unlocated = toInsert.filter(
    (row) => results[row.index] === null && !inserted.has(row.index) && !adopted.has(row.index),
  );
  if (!call.serviceColumn || unlocated.length === 0) return;
  const keys = await keysByServiceId(
    call.connection,
    call.meta,
    unlocated.map((row) => row.serviceId),
  );
  for (const row of unlocated) {
    const found = keys.get(row.serviceId);
    if (found !== undefined) inserted.set(row.index, found);
  }
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
    const found = await rows(connection, KEYS_BY_SERVICE_ID_SQL(meta, key, serviceColumn, part.length), part);
    for (const row of found) keys.set(String(row.s).toLowerCase(), keyText(row.k));
  }
  return keys;
}
