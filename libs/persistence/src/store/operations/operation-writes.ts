/**
 * `operations`: the record-level change log the engine appends to (one row per change of one record on a
 * side).
 */
import { newId } from '@lockstep/domain';
import type { SideName } from '@lockstep/domain';
import { copyIn } from '@lockstep/pg-copy';
import type { Db } from '../db';
import { plainColumns } from '../copy-columns';

export interface OperationRow {
  record_id: string | null;
  table_pair: number;
  side: SideName;
  table_id: string;
  table_name: string;
  record_remote_id: string | null;
  record_name: string | null;
  action: string;
  trigger: 'push' | 'poll';
  field_changes: { field: string; before: unknown; after: unknown }[];
  details: Record<string, unknown> | null;
}

/** `occurred_at` is left to its default, `now()` (the transaction's time). */
const OPERATION_COLUMNS = [
  'id',
  'sync_id',
  'record_id',
  'table_pair',
  'side',
  'table_id',
  'table_name',
  'record_remote_id',
  'record_name',
  'action',
  'trigger',
  'field_changes',
  'details',
];

/**
 * Operation columns whose COPY text needs no escaping: the service's ids, numbers and fixed words (see
 * `copyIn`).
 */
const OPERATION_PLAIN = plainColumns(OPERATION_COLUMNS, [
  'id',
  'sync_id',
  'record_id',
  'table_pair',
  'side',
  'table_id',
  'action',
  'trigger',
]);

/**
 * `field_changes` as stored: a `before` that is null is left out (the API reads a missing one as null), which
 * makes a create's entry (every field, nothing before) about a third shorter.
 */
export function fieldChangesJson(changes: OperationRow['field_changes'] | null | undefined): string {
  if (!changes || changes.length === 0) return '[]';
  let text = '[';
  for (let index = 0; index < changes.length; index += 1) {
    const change = changes[index]!;
    const after = change.after === null || change.after === undefined ? 'null' : JSON.stringify(change.after);
    const before =
      change.before === null || change.before === undefined
        ? ''
        : `"before":${JSON.stringify(change.before)},`;
    text += (index === 0 ? '' : ',') + fieldPrefix(change.field) + before + '"after":' + after + '}';
  }
  return `${text}]`;
}

const fieldPrefixes = new Map<string, string>();

/** `{"field":<name>,` per field name (an initial sync writes one per field and record). */
function fieldPrefix(field: string): string {
  let prefix = fieldPrefixes.get(field);
  if (prefix === undefined) {
    prefix = `{"field":${JSON.stringify(field)},`;
    if (fieldPrefixes.size > 10_000) fieldPrefixes.clear();
    fieldPrefixes.set(field, prefix);
  }
  return prefix;
}

/** Outside a PostgreSQL transaction (no COPY): the same rows as one INSERT, each at its own clock time. */
const INSERT_OPERATIONS_SQL = `
  INSERT INTO operations (id, sync_id, record_id, table_pair, side, table_id, table_name, record_remote_id,
     record_name, action, trigger, field_changes, details, occurred_at)
  SELECT v.id, $2, v.record_id, v.table_pair, v.side, v.table_id, v.table_name, v.record_remote_id,
     v.record_name, v.action, v.trigger, COALESCE(v.field_changes, '[]'::json), v.details, clock_timestamp()
  FROM jsonb_to_recordset($1::jsonb) AS v(id text, record_id text, table_pair integer, side text,
     table_id text, table_name text, record_remote_id text, record_name text,
     action text, trigger text, field_changes json, details json)`;

/**
 * Operations in one `COPY` (in the order given: `seq` follows it; `occurred_at` is the transaction's time).
 */
export async function insertOperations(db: Db, syncId: string, operations: OperationRow[]): Promise<void> {
  if (operations.length === 0) return;
  const copied = operations.map((o) => [
    newId('operation'),
    syncId,
    o.record_id,
    o.table_pair,
    o.side,
    o.table_id,
    o.table_name,
    o.record_remote_id,
    o.record_name,
    o.action,
    o.trigger,
    fieldChangesJson(o.field_changes),
    o.details === null ? null : JSON.stringify(o.details),
  ]);
  if (await copyIn(db, 'operations', OPERATION_COLUMNS, copied, OPERATION_PLAIN)) return;
  const rows = operations.map((operation) => ({ ...operation, id: newId('operation') }));
  await db.query(INSERT_OPERATIONS_SQL, [JSON.stringify(rows), syncId]);
}
