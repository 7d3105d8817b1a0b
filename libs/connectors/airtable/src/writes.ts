/**
 * Writes in Airtable's batches of 10, with one result per record. Airtable refuses a batch whole when one
 * record is bad (nothing of it is written), so a refused batch is sent again record by record to tell the
 * bad ones apart. Creates go through an upsert on the service id field ("Lockstep ID",
 * `performUpsert.fieldsToMergeOn`) when the table has it: sending one twice writes one record, so a create
 * that timed out is sent again and adopts what the first attempt wrote. Conditional updates read the records,
 * compare, and write what still holds its expected values (the window: one read and one write request).
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
import type { AirtableApi } from './db';
import { rawByIds, toSourceRecord } from './records';
import { fieldOf, serviceIdField } from './schema';
import * as requests from './sql';
import { type AirtableRecord, type AirtableTable, MAX_BATCH, type WriteItem } from './sql';
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

/** Field id -> Airtable JSON; `skipNull` leaves empty cells out (a create). Throws `invalid_data`. */
export function encodeFields(
  table: AirtableTable,
  values: Record<string, CanonicalValue>,
  skipNull: boolean,
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    if (skipNull && value === null) continue;
    const field = fieldOf(table, key);
    fields[field.id] = encodeValue(field, value);
  }
  return fields;
}

/**
 * Sends `items` in batches through `send`; a batch refused for its records is sent again one by one. Returns
 * one record or error per item.
 */
async function inBatches(
  items: WriteItem[],
  send: (batch: WriteItem[]) => Promise<AirtableRecord[]>,
): Promise<(AirtableRecord | ConnectorError)[]> {
  const results: (AirtableRecord | ConnectorError)[] = [];
  for (let start = 0; start < items.length; start += MAX_BATCH) {
    const batch = items.slice(start, start + MAX_BATCH);
    try {
      results.push(...(await send(batch)));
    } catch (error) {
      if (!(error instanceof ConnectorError) || !RECORD_KINDS.has(error.kind)) throw error;
      if (batch.length === 1) {
        results.push(error);
        continue;
      }
      for (const item of batch) {
        try {
          results.push(...(await send([item])));
        } catch (single) {
          if (!(single instanceof ConnectorError) || !RECORD_KINDS.has(single.kind)) throw single;
          results.push(single);
        }
      }
    }
  }
  return results;
}

export async function createRecords(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  rows: RecordCreate[],
): Promise<WriteResult[]> {
  const service = serviceIdField(table);
  const results: WriteResult[] = new Array(rows.length);
  const items: WriteItem[] = [];
  const owners: number[][] = [];
  const byServiceId = new Map<string, number>();
  rows.forEach((row, index) => {
    const seen = service ? byServiceId.get(row.serviceId) : undefined;
    if (seen !== undefined) return void owners[seen]!.push(index);
    try {
      const fields = encodeFields(table, row.values, true);
      if (service) fields[service.id] = row.serviceId;
      byServiceId.set(row.serviceId, items.length);
      items.push({ fields });
      owners.push([index]);
    } catch (error) {
      results[index] = failure(error);
    }
  });
  const send = service
    ? (batch: WriteItem[]) => requests.patchRecords(api, baseId, table.id, batch, [service.id])
    : (batch: WriteItem[]) => requests.createRecords(api, baseId, table.id, batch);
  const written = await inBatches(items, send);
  written.forEach((outcome, position) => {
    const result: WriteResult =
      outcome instanceof ConnectorError
        ? failure(outcome)
        : { ok: true, remoteId: outcome.id, record: toSourceRecord(table, outcome) };
    for (const index of owners[position]!) results[index] = result;
  });
  return results;
}

export async function updateRecords(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  rows: RecordUpdate[],
): Promise<WriteResult[]> {
  const current = new Map(
    (
      await rawByIds(
        api,
        baseId,
        table,
        rows.map((row) => row.remoteId),
      )
    ).map((record) => [record.id, toSourceRecord(table, record)]),
  );
  const results: WriteResult[] = new Array(rows.length);
  const items: WriteItem[] = [];
  const owners: number[] = [];
  rows.forEach((row, index) => {
    try {
      const record = current.get(row.remoteId);
      if (!record) {
        throw new ConnectorError('not_found', `Record "${row.remoteId}" does not exist in "${table.name}"`, {
          appCode: 'MODEL_ID_NOT_FOUND',
        });
      }
      const changed = changedField(record, expectedById(table, row.expected));
      if (changed !== null) {
        const name = table.fields.find((field) => field.id === changed)?.name ?? changed;
        throw changedError(table.name, row.remoteId, name);
      }
      items.push({ id: row.remoteId, fields: encodeFields(table, row.values, false) });
      owners.push(index);
    } catch (error) {
      results[index] = failure(error);
    }
  });
  const written = await inBatches(items, (batch) => requests.patchRecords(api, baseId, table.id, batch));
  written.forEach((outcome, position) => {
    results[owners[position]!] =
      outcome instanceof ConnectorError
        ? failure(outcome)
        : { ok: true, remoteId: outcome.id, record: toSourceRecord(table, outcome) };
  });
  return results;
}

/** `expected` keyed by field id (callers may name fields by name). */
function expectedById(
  table: AirtableTable,
  expected: Record<string, CanonicalValue> | undefined,
): Record<string, CanonicalValue> | undefined {
  if (!expected) return undefined;
  return Object.fromEntries(Object.entries(expected).map(([key, value]) => [fieldOf(table, key).id, value]));
}

/** Deleting a record that is already gone is `ok` (the outcome the caller wanted). */
export async function deleteRecords(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  remoteIds: string[],
): Promise<WriteResult[]> {
  const items = remoteIds.map((id) => ({ id, fields: {} }));
  const outcomes = await inBatches(items, async (batch) => {
    const ids = batch.map((item) => item.id!);
    await requests.deleteRecords(api, baseId, table.id, ids);
    return ids.map((id) => ({ id, createdTime: '', fields: {} }));
  });
  return outcomes.map((outcome, index) =>
    outcome instanceof ConnectorError && outcome.kind !== 'not_found'
      ? failure(outcome)
      : { ok: true, remoteId: remoteIds[index]!, record: null },
  );
}
