/**
 * The operations log as the API reads it (spec 2.10, 4.5), newest first: `ORDER BY occurred_at DESC, seq
 * DESC` with a keyset position on the same pair. Every filter has an index in that order (sync; sync + table;
 * sync + record), so a page is an index range scan however long the log is.
 *
 * An initial sync's creates are stored a page at a time (`operation_batches`, see operation-batches.ts): a
 * batch stands at one (`occurred_at`, `seq`) and its operations follow one another there by position, newest
 * (highest) first. A page of the log reads both tables in that order, merges them and expands the batches
 * it reaches; the filter by record finds a record's batched operation through its link (`created_op`).
 */
import type { SideName } from '@lockstep/domain';
import type { FieldChange } from '../../entities';
import type { Db } from '../db';
import { preparedRows } from '../prepared';
import { BATCH_ID_LENGTH, batchEntryId, batchEntryOf } from './operation-batches';

/** An `operations` row as the API reads it (`field_changes` only for the single form). */
export interface OperationReadRow {
  id: string;
  seq: string;
  sync_id: string;
  record_id: string | null;
  side: SideName | null;
  table_id: string | null;
  table_name: string | null;
  record_remote_id: string | null;
  record_name: string | null;
  action: string;
  trigger: 'push' | 'poll';
  details: Record<string, unknown> | null;
  occurred_at: Date;
  /** `occurred_at` in full precision (microseconds), for the keyset cursor. */
  occurred_key: string;
  /** Its position in a batch (`operation_batches`), for the keyset cursor; absent for an `operations` row. */
  position?: number;
  field_changes?: FieldChange[];
}

/** Columns of both forms; `occurred_key` is `occurred_at` with its microseconds, for the keyset cursor. */
const COLUMNS = `
  o.id, o.seq::text AS seq, o.sync_id, o.record_id, o.side, o.table_id, o.table_name, o.record_remote_id,
  o.record_name, o.action, o.trigger, o.details, o.occurred_at,
  to_char(o.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_key`;

export interface OperationFilter {
  syncId: string;
  tableId?: string;
  recordId?: string;
  /** Operations at or after this time. */
  since?: Date;
  /**
   * The keyset position: operations before this one (`occurred_key`, `seq` and, in a batch, `position` of the
   * last row of a page).
   */
  before?: { occurredKey: string; seq: string; position?: number };
  /** How many rows to read. */
  limit: number;
}

/** A batch as a page of the log meets it: where it stands, and how many operations it holds. */
interface BatchHead {
  id: string;
  seq: string;
  sync_id: string;
  side: SideName;
  table_id: string;
  table_name: string;
  action: string;
  trigger: 'push' | 'poll';
  occurred_at: Date;
  occurred_key: string;
  size: number;
  /** With the filter by record: the record's operation in this batch. */
  entry_id: string | null;
}

/** A batch in the columns of `COLUMNS` (no record: the batch's records are read when it is expanded). */
const BATCH_COLUMNS = `
  b.id, b.seq::text AS seq, b.sync_id, NULL::text AS record_id, b.side, b.table_id, b.table_name,
  NULL::text AS record_remote_id, NULL::text AS record_name, b.action, b.trigger, NULL::json AS details,
  b.occurred_at, to_char(b.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_key,
  b.size`;

/**
 * The conditions of one filter on `operations o` or `operation_batches b` (the filter by record is a join for
 * batches, see `listOperations`).
 */
function conditions(filter: OperationFilter, alias: 'o' | 'b', bind: (value: unknown) => string): string[] {
  const where = [`${alias}.sync_id = s.id`];
  if (filter.tableId !== undefined) where.push(`${alias}.table_id = ${bind(filter.tableId)}`);
  if (filter.recordId !== undefined && alias === 'o') where.push(`o.record_id = ${bind(filter.recordId)}`);
  if (filter.since !== undefined)
    where.push(`${alias}.occurred_at >= ${bind(filter.since.toISOString())}::timestamptz`);
  if (filter.before) {
    // A batch at the position itself still holds the operations before it (lower positions).
    where.push(
      `(${alias}.occurred_at, ${alias}.seq) ${alias === 'o' ? '<' : '<='} ` +
        `(${bind(filter.before.occurredKey)}::timestamptz, ${bind(filter.before.seq)}::bigint)`,
    );
  }
  return where;
}

/**
 * A page of the sync's operations log, newest first (list form: no `field_changes`), read together with the
 * check that the sync is the account's and not deleted: null when it is not (nothing is read then). Without
 * batches in reach a page costs one round trip; the batches it reaches add one for their records.
 */
export async function listOperations(
  db: Db,
  filter: OperationFilter & { accountId: string },
): Promise<OperationReadRow[] | null> {
  const params: unknown[] = [filter.syncId, filter.accountId];
  const bind = (value: unknown) => `$${params.push(value)}`;
  const limit = bind(filter.limit);
  const byRecord = filter.recordId !== undefined;
  const recordJoin = byRecord
    ? `JOIN record_links l ON l.id = ${bind(filter.recordId)} AND l.sync_id = s.id
          AND b.id = left(l.created_op, ${BATCH_ID_LENGTH})`
    : '';
  const rows = await preparedRows<
    (OperationReadRow & { size: number | null; entry_id: string | null }) | { id: null }
  >(
    db,
    `
    SELECT page.*
      FROM syncs s
      LEFT JOIN LATERAL (
            (SELECT ${COLUMNS}, NULL::integer AS size, NULL::text AS entry_id
               FROM operations o
              WHERE ${conditions(filter, 'o', bind).join(' AND ')}
              ORDER BY o.occurred_at DESC, o.seq DESC
              LIMIT ${limit})
            UNION ALL
            (SELECT ${BATCH_COLUMNS}, ${byRecord ? 'l.created_op' : 'NULL::text'} AS entry_id
               FROM operation_batches b ${recordJoin}
              WHERE ${conditions(filter, 'b', bind).join(' AND ')}
              ORDER BY b.occurred_at DESC, b.seq DESC
              LIMIT ${limit})) page ON true
     WHERE s.id = $1 AND s.account_id = $2 AND s.deleted_at IS NULL
     ORDER BY page.occurred_at DESC, page.seq::bigint DESC`,
    params,
  );
  if (rows.length === 0) return null;
  // A visible sync with an empty page is one row of nulls (the lateral join found nothing).
  const found = rows.filter(
    (row): row is OperationReadRow & { size: number | null; entry_id: string | null } => row.id !== null,
  );
  return expandBatches(db, found, filter);
}

/**
 * The page in order with each batch it reaches replaced by its operations (highest position first, below the
 * keyset position when the page starts inside the batch), cut at `limit`.
 */
async function expandBatches(
  db: Db,
  rows: (OperationReadRow & { size: number | null; entry_id: string | null })[],
  filter: OperationFilter,
): Promise<OperationReadRow[]> {
  const slots: ({ row: OperationReadRow } | { batch: BatchHead; positions: number[] })[] = [];
  let taken = 0;
  for (const row of rows) {
    if (taken >= filter.limit) break;
    if (row.size === null) {
      const { size: _size, entry_id: _entry, ...operation } = row;
      slots.push({ row: operation });
      taken += 1;
      continue;
    }
    const batch = row as unknown as BatchHead;
    const positions = batchPositions(batch, filter, filter.limit - taken);
    if (positions.length === 0) continue;
    slots.push({ batch, positions });
    taken += positions.length;
  }
  const batchIds = slots.flatMap((slot) => ('batch' in slot ? [slot.batch.id] : []));
  const records = batchIds.length === 0 ? new Map<string, BatchRecord[]>() : await batchRecords(db, batchIds);
  return slots.flatMap((slot) =>
    'row' in slot
      ? [slot.row]
      : slot.positions.map((position) =>
          batchEntry(slot.batch, position, records.get(slot.batch.id)?.[position]),
        ),
  );
}

/** The positions of `batch` a page takes, highest first: at most `room`, below the keyset position. */
function batchPositions(batch: BatchHead, filter: OperationFilter, room: number): number[] {
  const top = filter.before && filter.before.seq === batch.seq ? (filter.before.position ?? 0) : batch.size;
  if (batch.entry_id !== null) {
    const position = batchEntryOf(batch.entry_id)?.position;
    return position !== undefined && position < Math.min(top, batch.size) ? [position] : [];
  }
  const positions: number[] = [];
  for (let position = Math.min(top, batch.size) - 1; position >= 0 && positions.length < room; position -= 1)
    positions.push(position);
  return positions;
}

/** `[record_id, record_remote_id, record_name]` of one operation of a batch. */
type BatchRecord = [string | null, string | null, string | null];

async function batchRecords(db: Db, ids: string[]): Promise<Map<string, BatchRecord[]>> {
  const rows: { id: string; records: BatchRecord[] }[] = await db.query(
    `SELECT id, records FROM operation_batches WHERE id = ANY($1::text[])`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row.records]));
}

function batchEntry(batch: BatchHead, position: number, record: BatchRecord | undefined): OperationReadRow {
  return {
    id: batchEntryId(batch.id, position),
    seq: batch.seq,
    sync_id: batch.sync_id,
    record_id: record?.[0] ?? null,
    side: batch.side,
    table_id: batch.table_id,
    table_name: batch.table_name,
    record_remote_id: record?.[1] ?? null,
    record_name: record?.[2] ?? null,
    action: batch.action,
    trigger: batch.trigger,
    details: null,
    occurred_at: batch.occurred_at,
    occurred_key: batch.occurred_key,
    position,
  };
}

/** One operation by id: an `operations` row, else the operation at its position in a batch. */
const OPERATION_SQL = `
  SELECT ${COLUMNS}, o.field_changes FROM operations o JOIN syncs s ON s.id = o.sync_id
  WHERE o.id = $1 AND s.account_id = $2 AND s.deleted_at IS NULL AND ($3::text IS NULL OR s.id = $3)
  UNION ALL
  SELECT $1, b.seq::text, b.sync_id, e.record ->> 0, b.side, b.table_id, b.table_name, e.record ->> 1,
     e.record ->> 2, b.action, b.trigger, NULL::json, b.occurred_at,
     to_char(b.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), e.changes
    FROM operation_batches b JOIN syncs s ON s.id = b.sync_id
    CROSS JOIN LATERAL (SELECT b.records -> $5::integer AS record, b.field_changes -> $5::integer AS changes) e
  WHERE b.id = $4 AND $5::integer < b.size
    AND s.account_id = $2 AND s.deleted_at IS NULL AND ($3::text IS NULL OR s.id = $3)`;

/**
 * One operation with its `field_changes`, when it belongs to a sync of this account that is not deleted (and
 * is `syncId` when given: a key bound to one sync); null otherwise.
 */
export async function accountOperation(
  db: Db,
  input: { id: string; accountId: string; syncId: string | null },
): Promise<OperationReadRow | null> {
  const entry = batchEntryOf(input.id);
  const rows = await preparedRows<OperationReadRow>(db, OPERATION_SQL, [
    input.id,
    input.accountId,
    input.syncId,
    entry?.batchId ?? null,
    entry?.position ?? 0,
  ]);
  return rows[0] ?? null;
}
