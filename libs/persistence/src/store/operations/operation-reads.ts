/**
 * The operations log as the API reads it (spec 2.10, 4.5), newest first: `ORDER BY occurred_at DESC, seq
 * DESC` with a keyset position on the same pair. Every filter has an index in that order (sync; sync + table;
 * sync + record), so a page is an index range scan however long the log is.
 */
import type { SideName } from '@lockstep/domain';
import type { FieldChange } from '../../entities';
import type { Db } from '../db';
import { preparedRows } from '../prepared';

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
  /** The keyset position: operations before this one (`occurred_key` and `seq` of the last row of a page). */
  before?: { occurredKey: string; seq: string };
  /** How many rows to read. */
  limit: number;
}

/**
 * A page of the sync's operations log, newest first (list form: no `field_changes`), read together with the
 * check that the sync is the account's and not deleted: null when it is not (nothing is read then), so a page
 * costs one round trip.
 */
export async function listOperations(
  db: Db,
  filter: OperationFilter & { accountId: string },
): Promise<OperationReadRow[] | null> {
  const params: unknown[] = [filter.syncId, filter.accountId];
  const where = ['o.sync_id = s.id'];
  const bind = (value: unknown) => `$${params.push(value)}`;
  if (filter.tableId !== undefined) where.push(`o.table_id = ${bind(filter.tableId)}`);
  if (filter.recordId !== undefined) where.push(`o.record_id = ${bind(filter.recordId)}`);
  if (filter.since !== undefined)
    where.push(`o.occurred_at >= ${bind(filter.since.toISOString())}::timestamptz`);
  if (filter.before) {
    where.push(
      `(o.occurred_at, o.seq) < (${bind(filter.before.occurredKey)}::timestamptz, ` +
        `${bind(filter.before.seq)}::bigint)`,
    );
  }
  const rows = await preparedRows<OperationReadRow | { id: null }>(
    db,
    `
    SELECT page.*
      FROM syncs s
      LEFT JOIN LATERAL (
            SELECT ${COLUMNS}
              FROM operations o
             WHERE ${where.join(' AND ')}
             ORDER BY o.occurred_at DESC, o.seq DESC
             LIMIT ${bind(filter.limit)}) page ON true
     WHERE s.id = $1 AND s.account_id = $2 AND s.deleted_at IS NULL
     ORDER BY page.occurred_at DESC, page.seq::bigint DESC`,
    params,
  );
  if (rows.length === 0) return null;
  // A visible sync with an empty page is one row of nulls (the lateral join found nothing).
  return rows.filter((row): row is OperationReadRow => row.id !== null);
}

const OPERATION_SQL = `
  SELECT ${COLUMNS}, o.field_changes FROM operations o JOIN syncs s ON s.id = o.sync_id
  WHERE o.id = $1 AND s.account_id = $2 AND s.deleted_at IS NULL AND ($3::text IS NULL OR s.id = $3)`;

/**
 * One operation with its `field_changes`, when it belongs to a sync of this account that is not deleted (and
 * is `syncId` when given: a key bound to one sync); null otherwise.
 */
export async function accountOperation(
  db: Db,
  input: { id: string; accountId: string; syncId: string | null },
): Promise<OperationReadRow | null> {
  const rows = await preparedRows<OperationReadRow>(db, OPERATION_SQL, [
    input.id,
    input.accountId,
    input.syncId,
  ]);
  return rows[0] ?? null;
}
