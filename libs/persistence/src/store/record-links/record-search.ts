/**
 * The records API's reads over the engine's store: finding a record (by `rec_` id, remote id or display name)
 * and what its status shows (queue, operations, open issues, held delete and its history). Every lookup is
 * index-backed: links by primary key, by remote id through the unique `(sync_id, table_pair,
 * <side>_remote_id)` indexes (`table_pair = ANY` over the mapped pairs), by display name through
 * `record_links_name` (`lower(name) COLLATE "C"`); the queue, operations, issues and held deletes of one
 * record through their per-record indexes.
 */
import { isId, type SideName } from '@lockstep/domain';
import type { Db, TransactionalDb } from '../db';
import { BATCH_ID_LENGTH } from '../operations/operation-batches';
import type { LinkRow } from './record-links';

/** A `record_links` row as the records API reads it (no shadows). */
export type RecordLinkRow = Pick<
  LinkRow,
  | 'id'
  | 'table_pair'
  | 'name'
  | 'left_remote_id'
  | 'right_remote_id'
  | 'left_deleted'
  | 'right_deleted'
  | 'left_filtered'
  | 'right_filtered'
  | 'left_sync_disabled'
  | 'right_sync_disabled'
> & { sync_id: string };

/** A search hit before mapping: the link and what matched. */
export interface RecordMatchRow extends RecordLinkRow {
  matched_by: 'record_id' | 'remote_id' | 'name';
  matched_side: SideName | null;
}

/**
 * The table pairs a search looks in: all of them, and per side those whose table on that side is in scope.
 */
export interface SearchPairs {
  all: number[];
  left: number[];
  right: number[];
}

const RECORD_LINK_COLUMNS = `
  id, sync_id, table_pair, name, left_remote_id, right_remote_id, left_deleted, right_deleted,
  left_filtered, right_filtered, left_sync_disabled, right_sync_disabled`;

const LINK_SQL = `SELECT ${RECORD_LINK_COLUMNS} FROM record_links WHERE id = $1`;

export async function recordLink(db: Db, id: string): Promise<RecordLinkRow | null> {
  const rows: RecordLinkRow[] = await db.query(LINK_SQL, [id]);
  return rows[0] ?? null;
}

const BY_REMOTE_ID_SQL = `
  SELECT ${RECORD_LINK_COLUMNS}, 'left' AS matched_side FROM record_links WHERE sync_id = $1
     AND table_pair = ANY($2::int[]) AND left_remote_id = $4
  UNION ALL
  SELECT ${RECORD_LINK_COLUMNS}, 'right' AS matched_side FROM record_links WHERE sync_id = $1
     AND table_pair = ANY($3::int[]) AND right_remote_id = $4`;

/** Links whose remote id on a side in scope equals `remoteId`, each once, with the side(s) that matched. */
export async function recordLinksByRemoteId(
  db: Db,
  syncId: string,
  remoteId: string,
  pairs: Pick<SearchPairs, 'left' | 'right'>,
): Promise<(RecordLinkRow & { matched_side: SideName })[]> {
  const rows: (RecordLinkRow & { matched_side: SideName })[] = await db.query(BY_REMOTE_ID_SQL, [
    syncId,
    pairs.left,
    pairs.right,
    remoteId,
  ]);
  const seen = new Set<string>();
  return rows
    .sort(
      (a, b) =>
        a.table_pair - b.table_pair ||
        (a.matched_side === b.matched_side ? 0 : a.matched_side === 'left' ? -1 : 1),
    )
    .filter((row) => (seen.has(row.id) ? false : (seen.add(row.id), true)));
}

/** The substring pass of a search is cut off after this long (a sync with millions of records). */
const SUBSTRING_TIMEOUT_MS = 2000;
const QUERY_CANCELED = '57014';

/**
 * `%`, `_` and `\` of a user's text taken literally in a `LIKE` pattern (backslash is the default escape).
 */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

function byNameSql(where: string): string {
  return `
    SELECT ${RECORD_LINK_COLUMNS}, 'name' AS matched_by, NULL AS matched_side
      FROM record_links
     WHERE sync_id = $1 AND name IS NOT NULL AND table_pair = ANY($2::int[]) AND NOT (id = ANY($3::text[]))
       AND ${where}
     ORDER BY lower(name) COLLATE "C", id
     LIMIT $5`;
}

const NAME_PREFIX_SQL = byNameSql(`lower(name) COLLATE "C" LIKE lower($4) || '%'`);
const NAME_CONTAINS_SQL = byNameSql(
  `lower(name) COLLATE "C" LIKE '%' || lower($4) || '%'
     AND NOT (lower(name) COLLATE "C" LIKE lower($4) || '%')`,
);
const SEARCH_TIMEOUT_SQL = `SET LOCAL statement_timeout = ${SUBSTRING_TIMEOUT_MS}`;

/**
 * Search, best first, at most `max` rows: the `rec_` id, then exact remote ids (left, then right), then
 * display names starting with the query (case-insensitive, so an equal name comes first), then names
 * containing it. Each pass asks only for what is still missing. The substring pass walks the sync's names
 * in index order and filters; on a very large sync it is cut off after `SUBSTRING_TIMEOUT_MS` and the
 * result says `truncated` (the caller reports `has_more`: narrow the query).
 */
export async function searchRecords(
  db: TransactionalDb,
  input: { syncId: string; query: string; pairs: SearchPairs; max: number },
): Promise<{ rows: RecordMatchRow[]; truncated: boolean }> {
  const { syncId, query, pairs, max } = input;
  const found: RecordMatchRow[] = [];
  const add = (rows: RecordMatchRow[]) => {
    for (const row of rows)
      if (found.length < max && !found.some((hit) => hit.id === row.id)) found.push(row);
  };
  if (isId('record', query)) {
    const link = await recordLink(db, query);
    if (link && link.sync_id === syncId && pairs.all.includes(link.table_pair)) {
      add([{ ...link, matched_by: 'record_id', matched_side: null }]);
    }
  }
  add(
    (await recordLinksByRemoteId(db, syncId, query, pairs)).map((row) => ({
      ...row,
      matched_by: 'remote_id' as const,
    })),
  );
  const pattern = likeLiteral(query);
  const byName = async (m: Db, sql: string): Promise<RecordMatchRow[]> => {
    const missing = max - found.length;
    if (missing <= 0 || pairs.all.length === 0) return [];
    return m.query(sql, [syncId, pairs.all, found.map((hit) => hit.id), pattern, missing]);
  };
  add(await byName(db, NAME_PREFIX_SQL));
  let truncated = false;
  const contained = await db
    .transaction(async (m) => {
      await m.query(SEARCH_TIMEOUT_SQL);
      return byName(m, NAME_CONTAINS_SQL);
    })
    .catch((error: unknown) => {
      if ((error as { code?: string }).code !== QUERY_CANCELED) throw error;
      truncated = true;
      return [];
    });
  add(contained);
  return { rows: found, truncated };
}

export interface RecordQueueRow {
  id: string;
  type: 'push' | 'refetch' | 'verify_delete';
  side: SideName | null;
}

const QUEUE_SQL = `SELECT id::text AS id, type, side FROM record_queue WHERE record_id = $1 ORDER BY id`;

/** The record's queue entries, in the order they run. */
export async function recordQueue(db: Db, recordId: string): Promise<RecordQueueRow[]> {
  return db.query(QUEUE_SQL, [recordId]);
}

export interface RecordOperationRow {
  id: string;
  sync_id: string;
  occurred_at: Date;
  action: string;
  trigger: 'push' | 'poll';
  side: SideName | null;
  table_id: string | null;
  table_name: string | null;
  record_remote_id: string | null;
  record_name: string | null;
}

/**
 * The record's `operations` rows and, when an initial sync created its copy in a batch, that operation (found
 * through the link's `created_op`; see operation-batches.ts), newest first.
 */
const OPERATIONS_SQL = `
  (SELECT id, sync_id, occurred_at, seq, action, trigger, side, table_id, table_name, record_remote_id,
          record_name
     FROM operations
    WHERE sync_id = $1 AND record_id = $2
    ORDER BY occurred_at DESC, seq DESC
    LIMIT $3)
  UNION ALL
  SELECT l.created_op, b.sync_id, b.occurred_at, b.seq, b.action, b.trigger, b.side, b.table_id, b.table_name,
         e.record ->> 1, e.record ->> 2
    FROM record_links l
    JOIN operation_batches b ON b.id = left(l.created_op, ${BATCH_ID_LENGTH}) AND b.sync_id = l.sync_id
   CROSS JOIN LATERAL (SELECT b.records -> operation_entry_position(l.created_op) AS record) e
   WHERE l.id = $2 AND l.sync_id = $1
   ORDER BY occurred_at DESC, seq DESC
   LIMIT $3`;

/** The most recent operations of the record (both sides), `limit + 1` to tell whether there are more. */
export async function recordOperations(
  db: Db,
  syncId: string,
  recordId: string,
  limit: number,
): Promise<RecordOperationRow[]> {
  return db.query(OPERATIONS_SQL, [syncId, recordId, limit + 1]);
}

export interface RecordIssueRow {
  id: string;
  type: string;
  code: string;
  side: SideName | null;
  connector: string;
  message: string;
  remediation: Record<string, unknown>;
  table_id: string | null;
  table_name: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  occurrence_count: number;
}

const OPEN_ISSUES_SQL = `
  SELECT id, type, code, side, connector, message, remediation, table_id, table_name, first_seen_at,
         last_seen_at, occurrence_count
    FROM sync_issues
   WHERE sync_id = $1 AND record_id = $2 AND resolved_at IS NULL
   ORDER BY last_seen_at DESC, id DESC
   LIMIT 50`;

/** The record's open issues, most recently seen first (at most 50). */
export async function recordOpenIssues(db: Db, syncId: string, recordId: string): Promise<RecordIssueRow[]> {
  return db.query(OPEN_ISSUES_SQL, [syncId, recordId]);
}

export interface RecordPendingDeleteRow {
  id: string;
  record_id: string;
  state: 'awaiting_review' | 'ignored';
  missing_side: SideName;
  delete_from_side: SideName;
  pending_since: Date;
  ignored_at: Date | null;
}

const OPEN_PENDING_DELETE_SQL = `
  SELECT id, record_id, state, missing_side, delete_from_side, pending_since, ignored_at FROM pending_deletes
  WHERE sync_id = $1 AND record_id = $2 AND state IN ('awaiting_review', 'ignored')`;

/** The record's held delete (awaiting review or ignored), if any. */
export async function recordOpenPendingDelete(
  db: Db,
  syncId: string,
  recordId: string,
): Promise<RecordPendingDeleteRow | null> {
  const rows: RecordPendingDeleteRow[] = await db.query(OPEN_PENDING_DELETE_SQL, [syncId, recordId]);
  return rows[0] ?? null;
}

export interface RecordPendingDeleteEventRow {
  kind: 'detected' | 'approved' | 'ignored';
  actor: string | null;
  at: Date;
  pending_delete_id: string;
}

/** History kinds the API reports (spec 3.2); the engine's `restored` / `closed` entries stay internal. */
const EVENT_KINDS = ['detected', 'approved', 'ignored'];

const PENDING_DELETE_EVENTS_SQL = `
  SELECT kind, actor, at, pending_delete_id FROM pending_delete_events
  WHERE sync_id = $1 AND record_id = $2 AND kind = ANY($3::text[]) ORDER BY at DESC, id DESC LIMIT 50`;

/** The history of the record's held deletes, newest first (at most 50). */
export async function recordPendingDeleteEvents(
  db: Db,
  syncId: string,
  recordId: string,
): Promise<RecordPendingDeleteEventRow[]> {
  return db.query(PENDING_DELETE_EVENTS_SQL, [syncId, recordId, EVENT_KINDS]);
}
