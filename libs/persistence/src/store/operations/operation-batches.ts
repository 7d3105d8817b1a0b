/**
 * `operation_batches`: an initial sync's `created` operations stored a page at a time (migration
 * `OperationBatches1764800000000`), read back by the API as one operation per record
 * (`operation-reads.ts`). A batch holds the operations of one page on one side of one table pair; the
 * operation of the record at `position` has the id `<batch id><position as 4 base-36 characters>`.
 */
import { newId } from '@lockstep/domain';
import type { SideName } from '@lockstep/domain';
import type { Db } from '../db';
import { fieldChangesJson, type OperationRow } from './operation-writes';

/** Characters of a batch id (`op_` and 16): an operation id is that and 4 more. */
export const BATCH_ID_LENGTH = 19;
/** At most this many operations in a batch (4 base-36 characters of position). */
export const MAX_BATCH_SIZE = 36 ** 4;

/** The id of the operation at `position` of the batch `batchId`. */
export function batchEntryId(batchId: string, position: number): string {
  return batchId + position.toString(36).padStart(4, '0');
}

/** The batch and position an operation id points into (any `op_` id parses; the batch may not exist). */
export function batchEntryOf(operationId: string): { batchId: string; position: number } | null {
  const tail = operationId.slice(BATCH_ID_LENGTH);
  if (!/^[0-9a-z]{4}$/.test(tail)) return null;
  return { batchId: operationId.slice(0, BATCH_ID_LENGTH), position: parseInt(tail, 36) };
}

export interface OperationBatch {
  id: string;
  table_pair: number;
  side: SideName;
  table_id: string;
  table_name: string;
  action: string;
  trigger: 'push' | 'poll';
  operations: OperationRow[];
}

/**
 * Splits a commit's operations into batches (the `created` pushes without details of the records in
 * `batchable`, one batch per side and table pair) and the rest. Returns each batched record's operation id,
 * which its link keeps (`created_op`).
 */
export function batchOperations(
  operations: OperationRow[],
  batchable: ReadonlySet<string>,
): { batches: OperationBatch[]; rest: OperationRow[]; ids: Map<string, string> } {
  const groups = new Map<string, OperationBatch>();
  const rest: OperationRow[] = [];
  const ids = new Map<string, string>();
  for (const operation of operations) {
    const recordId = operation.record_id;
    if (
      recordId === null ||
      operation.action !== 'created' ||
      operation.trigger !== 'push' ||
      operation.details !== null ||
      !batchable.has(recordId) ||
      ids.has(recordId)
    ) {
      rest.push(operation);
      continue;
    }
    const key = `${operation.side}:${operation.table_pair}`;
    let batch = groups.get(key);
    if (!batch || batch.operations.length >= MAX_BATCH_SIZE) {
      batch = {
        id: newId('operation').slice(0, BATCH_ID_LENGTH),
        table_pair: operation.table_pair,
        side: operation.side,
        table_id: operation.table_id,
        table_name: operation.table_name,
        action: operation.action,
        trigger: operation.trigger,
        operations: [],
      };
      groups.set(key, batch);
    }
    ids.set(recordId, batchEntryId(batch.id, batch.operations.length));
    batch.operations.push(operation);
  }
  return { batches: [...groups.values()], rest, ids };
}

const INSERT_BATCH_SQL = `
  INSERT INTO operation_batches (id, sync_id, table_pair, side, table_id, table_name, action, trigger, size,
     records, field_changes)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::json, $11::json)`;

/** Batches in the order given (`seq` follows it; `occurred_at` is the transaction's time, as operations'). */
export async function insertOperationBatches(
  db: Db,
  syncId: string,
  batches: OperationBatch[],
): Promise<void> {
  for (const batch of batches) {
    const records = batch.operations.map((o) => [o.record_id, o.record_remote_id, o.record_name]);
    const changes: string[] = batch.operations.map((o) => fieldChangesJson(o.field_changes));
    await db.query(INSERT_BATCH_SQL, [
      batch.id,
      syncId,
      batch.table_pair,
      batch.side,
      batch.table_id,
      batch.table_name,
      batch.action,
      batch.trigger,
      batch.operations.length,
      JSON.stringify(records),
      `[${changes.join(',')}]`,
    ]);
  }
}
