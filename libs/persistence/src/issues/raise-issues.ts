import { newId } from '@lockstep/domain';
import type { IssueType, Remediation } from '../entities/sync-issue.entity';
import type { Db } from '../store/db';

/** One occurrence of a failure. `dedupeKey` names the failure: the same key is the same issue. */
export interface IssueOccurrence {
  type: IssueType;
  code: string;
  side: 'left' | 'right' | null;
  connector: string;
  message: string;
  remediation: Remediation;
  dedupeKey: string;
  tableId?: string | null;
  tableName?: string | null;
  recordId?: string | null;
  recordRemoteId?: string | null;
  recordName?: string | null;
  recordUrl?: string | null;
}

/**
 * The issue of each failure seen once more, its open issue first, else its newest resolved one: it is open
 * again (a retry that did not fix the cause, or the same failure coming back, keeps the id an agent polls),
 * one occurrence more, seen now, with this occurrence's message and remediation. Returns the keys found.
 *
 * The open issue of a key, when there is one, is its newest (one is opened only while none is open), so
 * reopening the newest resolved one never makes a second open issue. Two writers of one key lock the same
 * row: the second counts its occurrence on what the first left.
 */
const SEEN_AGAIN_SQL = `WITH seen AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(dedupe_key text, message text, remediation jsonb)
)
UPDATE sync_issues i
SET resolved_at = NULL, occurrence_count = i.occurrence_count + 1, last_seen_at = now(),
  message = seen.message, remediation = seen.remediation
FROM seen
WHERE i.id = (
  SELECT x.id FROM sync_issues x
  WHERE x.sync_id = $2 AND x.dedupe_key = seen.dedupe_key
  ORDER BY x.resolved_at IS NULL DESC, x.first_seen_at DESC, x.id DESC
  LIMIT 1
)
RETURNING i.dedupe_key`;

/**
 * A new issue for each failure never seen before. One opened by another writer since the update above is
 * counted on instead (its open key conflicts).
 */
const FIRST_SEEN_SQL = `
INSERT INTO sync_issues (id, sync_id, type, code, side, connector, message, remediation, dedupe_key,
  table_id, table_name, record_id, record_remote_id, record_name, record_url)
SELECT v.id, $2, v.type, v.code, v.side, v.connector, v.message, v.remediation, v.dedupe_key,
  v.table_id, v.table_name, v.record_id, v.record_remote_id, v.record_name, v.record_url
FROM jsonb_to_recordset($1::jsonb)
  AS v(id text, type text, code text, side text, connector text, message text, remediation jsonb,
       dedupe_key text, table_id text, table_name text, record_id text, record_remote_id text,
       record_name text, record_url text)
ON CONFLICT (sync_id, dedupe_key) WHERE resolved_at IS NULL
DO UPDATE SET occurrence_count = sync_issues.occurrence_count + 1, last_seen_at = now(),
  message = EXCLUDED.message, remediation = EXCLUDED.remediation`;

/**
 * Records occurrences of failures of a sync (spec 2.11): an issue is a failure (its `dedupeKey`), not one
 * occurrence of it. A failure seen before counts on its issue and opens it again if it was resolved (by a
 * retry, or because the cause went away for a while): `occurrence_count` and `last_seen_at` move on and the
 * id stays. Only a failure never seen on this sync gets a new issue. Keys must be distinct within one call.
 */
export async function raiseIssues(db: Db, syncId: string, occurrences: IssueOccurrence[]): Promise<void> {
  if (occurrences.length === 0) return;
  const seen = occurrences.map((o) => ({
    dedupe_key: o.dedupeKey,
    message: o.message,
    remediation: o.remediation,
  }));
  const found = new Set(
    returnedRows<{ dedupe_key: string }>(await db.query(SEEN_AGAIN_SQL, [JSON.stringify(seen), syncId])).map(
      (row) => row.dedupe_key,
    ),
  );
  const fresh = occurrences.filter((o) => !found.has(o.dedupeKey));
  if (fresh.length === 0) return;
  await db.query(FIRST_SEEN_SQL, [JSON.stringify(fresh.map(toRow)), syncId]);
}

function toRow(o: IssueOccurrence): Record<string, unknown> {
  return {
    id: newId('issue'),
    type: o.type,
    code: o.code,
    side: o.side,
    connector: o.connector,
    message: o.message,
    remediation: o.remediation,
    dedupe_key: o.dedupeKey,
    table_id: o.tableId ?? null,
    table_name: o.tableName ?? null,
    record_id: o.recordId ?? null,
    record_remote_id: o.recordRemoteId ?? null,
    record_name: o.recordName ?? null,
    record_url: o.recordUrl ?? null,
  };
}

/** The rows of an `UPDATE ... RETURNING`: TypeORM's PostgreSQL driver answers `[rows, count]`. */
function returnedRows<T>(result: unknown): T[] {
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  )
    return result[0] as T[];
  return result as T[];
}
