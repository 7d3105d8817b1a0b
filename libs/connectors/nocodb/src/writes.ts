/**
 * Writes in NocoDB's batches of 100 (the most an API token may send), with one result per record. NocoDB
 * refuses a batch whole when one record is bad, so a refused batch is sent again record by record to tell the
 * bad ones apart. Creates are idempotent through the service id field ("Lockstep ID"): before a batch is sent
 * again (after a refusal, a timeout or a 5xx, when the first attempt may have written some of it), the records
 * already holding its service ids are looked up and adopted. Conditional updates read the records, compare,
 * and write what still holds its expected values (the window: one read and one write request). Link fields
 * are written through the links API after the record (`links.ts`).
 */
import {
  changedError,
  changedField,
  ConnectorError,
  type ConnectorErrorInfo,
  type RecordCreate,
  type RecordUpdate,
  type WriteResult,
} from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import { writeLinks } from './links';
import { type ReadContext, rowsWhereIn, toSourceRecords } from './records';
import { columnOf, keyColumn, serviceIdColumn } from './schema';
import * as requests from './sql';
import { MAX_BATCH, type NocodbRow, type NocodbTable } from './sql';
import { LINK_TYPES } from './types';
import { encodeValue } from './values';

/** Errors that concern the records sent (one bad record refuses the batch), not the call. */
const RECORD_KINDS = new Set(['invalid_data', 'not_found']);

function failure(error: unknown): WriteResult {
  const info: ConnectorErrorInfo =
    error instanceof ConnectorError
      ? error.toInfo()
      : { kind: 'invalid_data', message: String(error), retryable: false };
  return { ok: false, error: info };
}

function isRecordError(error: unknown): error is ConnectorError {
  return error instanceof ConnectorError && RECORD_KINDS.has(error.kind);
}

export interface Encoded {
  row: NocodbRow;
  /** Link column id -> the target record ids to hold. */
  links: Map<string, string[]>;
}

/**
 * Field id or title -> NocoDB JSON by title, for a create (`skipNull`: empty cells left out) or an update.
 * Throws `invalid_data`.
 */
export function encodeFields(
  table: NocodbTable,
  values: Record<string, CanonicalValue>,
  skipNull: boolean,
): Encoded {
  const row: NocodbRow = {};
  const links = new Map<string, string[]>();
  for (const [field, value] of Object.entries(values)) {
    const column = columnOf(table, field);
    if (LINK_TYPES.has(column.uidt)) {
      links.set(column.id, linkIds(column.title, value));
      continue;
    }
    if (skipNull && value === null) continue;
    row[column.title] = encodeValue(column, value, skipNull ? 'create' : 'update');
  }
  return { row, links };
}

function linkIds(title: string, value: CanonicalValue): string[] {
  if (value === null) return [];
  const ids = Array.isArray(value) ? value : [value];
  if (ids.some((id) => (typeof id !== 'string' && typeof id !== 'number') || String(id) === '')) {
    throw new ConnectorError(
      'invalid_data',
      `Field "${title}" (Links): expected record ids, got ${JSON.stringify(value)}`,
    );
  }
  return ids.map(String);
}

/** Sends `rows` through `send` (one batch); a batch refused for its records goes again one by one. */
async function sendEach<T>(
  rows: NocodbRow[],
  send: (batch: NocodbRow[]) => Promise<T[]>,
  beforeRetry: (rows: NocodbRow[]) => Promise<NocodbRow[]> = async (pending) => pending,
): Promise<(T | ConnectorError | null)[]> {
  try {
    return await send(rows);
  } catch (error) {
    if (!isRecordError(error) || rows.length === 1) {
      if (rows.length === 1 && isRecordError(error)) return [error];
      throw error;
    }
  }
  const pending = new Set(await beforeRetry(rows));
  const results: (T | ConnectorError | null)[] = [];
  for (const row of rows) {
    if (!pending.has(row)) {
      results.push(null);
      continue;
    }
    try {
      results.push(...(await send([row])));
    } catch (single) {
      if (!isRecordError(single)) throw single;
      results.push(single);
    }
  }
  return results;
}

export async function createRecords(context: ReadContext, rows: RecordCreate[]): Promise<WriteResult[]> {
  const { table } = context;
  const service = serviceIdColumn(table);
  const results: WriteResult[] = new Array(rows.length);
  const items: { encoded: Encoded; serviceId: string; owners: number[] }[] = [];
  const byServiceId = new Map<string, number>();
  rows.forEach((row, index) => {
    const seen = service ? byServiceId.get(row.serviceId) : undefined;
    if (seen !== undefined) return void items[seen]!.owners.push(index);
    try {
      const encoded = encodeFields(table, row.values, true);
      if (service) encoded.row[service.title] = row.serviceId;
      byServiceId.set(row.serviceId, items.length);
      items.push({ encoded, serviceId: row.serviceId, owners: [index] });
    } catch (error) {
      results[index] = failure(error);
    }
  });
  for (let start = 0; start < items.length; start += MAX_BATCH) {
    const batch = items.slice(start, start + MAX_BATCH);
    const ids = await createBatch(
      context,
      batch.map((item) => item.encoded.row),
    );
    for (let at = 0; at < batch.length; at += 1) {
      const outcome = ids[at]!;
      const item = batch[at]!;
      let result: WriteResult =
        outcome instanceof ConnectorError ? failure(outcome) : { ok: true, remoteId: outcome, record: null };
      if (result.ok && item.encoded.links.size > 0) {
        result = await writeLinks(context, result.remoteId, item.encoded.links, null).then(
          () => result,
          (error: unknown) => {
            if (!isRecordError(error)) throw error;
            return failure(error);
          },
        );
      }
      for (const index of item.owners) results[index] = result;
    }
  }
  return results;
}

/**
 * One create request of at most MAX_BATCH rows. With the service id field, the rows whose service id a record
 * holds already (a create sent before, perhaps by a run that crashed) adopt that record first; the rest are
 * sent, record by record when NocoDB refused one, and after a timeout or a 5xx (some rows may be written) the
 * adoption runs again before the rest go once more. Without the field, a create that timed out is not sent
 * again (it may have been written): the error is `transient`.
 */
async function createBatch(context: ReadContext, rows: NocodbRow[]): Promise<(string | ConnectorError)[]> {
  const key = keyColumn(context.table).title;
  const service = serviceIdColumn(context.table);
  const adopted = new Map<NocodbRow, string>();
  const adopt = async (pending: NocodbRow[]): Promise<NocodbRow[]> => {
    if (!service || pending.length === 0) return pending;
    const found = await rowsWhereIn(
      context,
      service.title,
      pending.map((row) => String(row[service.title])),
    );
    const byServiceId = new Map(found.map((row) => [String(row[service.title]), String(row[key])]));
    for (const row of pending) {
      const id = byServiceId.get(String(row[service.title]));
      if (id !== undefined) adopted.set(row, id);
    }
    return pending.filter((row) => !adopted.has(row));
  };
  const send = async (batch: NocodbRow[]) =>
    (await requests.insertRows(context.api, context.table.id, batch)).map((row) => String(row[key]));
  const sendRest = async (rest: NocodbRow[]) => {
    const sent = rest.length > 0 ? await sendEach(rest, send, adopt) : [];
    return new Map(rest.map((row, index) => [row, sent[index] ?? null]));
  };
  let outcomes: Map<NocodbRow, string | ConnectorError | null>;
  try {
    outcomes = await sendRest(await adopt(rows));
  } catch (error) {
    if (!service || !(error instanceof ConnectorError) || error.kind !== 'transient') throw error;
    outcomes = await sendRest(await adopt(rows.filter((row) => !adopted.has(row))));
  }
  return rows.map(
    (row) =>
      adopted.get(row) ?? outcomes.get(row) ?? new ConnectorError('transient', 'The record was not written'),
  );
}

export async function updateRecords(context: ReadContext, rows: RecordUpdate[]): Promise<WriteResult[]> {
  const { table } = context;
  const key = keyColumn(table);
  const currentRows = await rowsWhereIn(
    context,
    key.title,
    rows.map((row) => row.remoteId),
  );
  const current = new Map(
    (await toSourceRecords(context, currentRows)).map((record) => [record.remoteId, record]),
  );
  const results: WriteResult[] = new Array(rows.length);
  const items: { index: number; encoded: Encoded; remoteId: string }[] = [];
  rows.forEach((row, index) => {
    try {
      const record = current.get(row.remoteId);
      if (!record) {
        throw new ConnectorError('not_found', `Record "${row.remoteId}" does not exist in "${table.title}"`, {
          appCode: 'ERR_RECORD_NOT_FOUND',
        });
      }
      const changed = changedField(record, expectedById(table, row.expected));
      if (changed !== null) {
        const name = table.columns.find((column) => column.id === changed)?.title ?? changed;
        throw changedError(table.title, row.remoteId, name);
      }
      const encoded = encodeFields(table, row.values, false);
      encoded.row[key.title] =
        key.uidt === 'ID' && /^\d+$/.test(row.remoteId) ? Number(row.remoteId) : row.remoteId;
      items.push({ index, encoded, remoteId: row.remoteId });
    } catch (error) {
      results[index] = failure(error);
    }
  });
  const withFields = items.filter((item) => Object.keys(item.encoded.row).length > 1);
  for (let start = 0; start < withFields.length; start += MAX_BATCH) {
    const batch = withFields.slice(start, start + MAX_BATCH);
    const outcomes = await sendEach(
      batch.map((item) => item.encoded.row),
      async (sent) => {
        await requests.updateRows(context.api, table.id, sent);
        return sent.map(() => true);
      },
    );
    outcomes.forEach((outcome, at) => {
      if (outcome instanceof ConnectorError) results[batch[at]!.index] = failure(outcome);
    });
  }
  for (const item of items) {
    if (results[item.index]) continue;
    try {
      if (item.encoded.links.size > 0)
        await writeLinks(context, item.remoteId, item.encoded.links, current.get(item.remoteId)!);
      results[item.index] = { ok: true, remoteId: item.remoteId, record: null };
    } catch (error) {
      if (!isRecordError(error)) throw error;
      results[item.index] = failure(error);
    }
  }
  return results;
}

/** `expected` keyed by field id (callers may name fields by title). */
function expectedById(
  table: NocodbTable,
  expected: Record<string, CanonicalValue> | undefined,
): Record<string, CanonicalValue> | undefined {
  if (!expected) return undefined;
  return Object.fromEntries(
    Object.entries(expected).map(([field, value]) => [columnOf(table, field).id, value]),
  );
}

/** Deleting a record that is already gone is `ok` (the outcome the caller wanted). */
export async function deleteRecords(context: ReadContext, remoteIds: string[]): Promise<WriteResult[]> {
  const key = keyColumn(context.table);
  const keyOf = (id: string) => (key.uidt === 'ID' && /^\d+$/.test(id) ? Number(id) : id);
  const results: WriteResult[] = remoteIds.map((id) => ({ ok: true, remoteId: id, record: null }));
  const unique = [...new Set(remoteIds)];
  for (let start = 0; start < unique.length; start += MAX_BATCH) {
    const batch = unique.slice(start, start + MAX_BATCH);
    try {
      await requests.deleteRows(
        context.api,
        context.table.id,
        batch.map((id) => ({ [key.title]: keyOf(id) })),
      );
    } catch (error) {
      if (!(error instanceof ConnectorError) || error.kind !== 'not_found') throw error;
      // NocoDB refuses the batch when one record is gone: delete those still there.
      const present = (await rowsWhereIn(context, key.title, batch)).map((row) => row[key.title]);
      if (present.length > 0)
        await requests.deleteRows(
          context.api,
          context.table.id,
          present.map((id) => ({ [key.title]: id })),
        );
    }
  }
  return results;
}
