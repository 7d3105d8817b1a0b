/**
 * Issues (`sync_issues`) as the API reads them (a sync's open issues, one issue with its record's remote ids
 * from `record_links`) and clears them on a retry. The work a retry gives the engine again is written by the
 * families that own its tables: `queueRecordPush` (record-queue), `retryAuthentication` (sync-sides),
 * `wakeRunner` (sync-leases).
 */
import type { EntityManager } from 'typeorm';
import type { IssueType, Remediation, SideName } from '../../entities';
import { returnedRows } from '../db';
import type { PagePosition } from '../paging';

/** A `sync_issues` row with its record's remote ids (from `record_links`). */
export interface IssueRow {
  id: string;
  sync_id: string;
  type: IssueType;
  code: string;
  side: SideName | null;
  connector: string;
  message: string;
  remediation: Remediation;
  table_id: string | null;
  table_name: string | null;
  record_id: string | null;
  record_remote_id: string | null;
  record_name: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  occurrence_count: number;
  resolved_at: Date | null;
  /** `last_seen_at` in full precision (microseconds), for the keyset cursor. */
  seen_key: string;
  link_left_remote_id: string | null;
  link_right_remote_id: string | null;
}

/** Who asks: the account, and the one sync a sync-restricted key may see (null: any of the account's). */
export interface IssueReader {
  accountId: string;
  syncId: string | null;
}

const COLUMNS = `
  i.id, i.sync_id, i.type, i.code, i.side, i.connector, i.message, i.remediation, i.table_id, i.table_name,
  i.record_id, i.record_remote_id, COALESCE(i.record_name, l.name) AS record_name,
  i.first_seen_at, i.last_seen_at, i.occurrence_count, i.resolved_at,
  to_char(i.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS seen_key,
  l.left_remote_id AS link_left_remote_id, l.right_remote_id AS link_right_remote_id`;

const LIST_SQL = (where: string, limit: string) => `
  SELECT ${COLUMNS}
    FROM sync_issues i LEFT JOIN record_links l ON l.id = i.record_id
   WHERE ${where}
   ORDER BY i.last_seen_at DESC, i.id DESC
   LIMIT ${limit}`;

const FIND_SQL = (lock: boolean) => `
  SELECT ${COLUMNS}
    FROM sync_issues i JOIN syncs s ON s.id = i.sync_id LEFT JOIN record_links l ON l.id = i.record_id
   WHERE i.id = $1 AND s.account_id = $2 AND s.deleted_at IS NULL AND ($3::text IS NULL OR s.id = $3)
         ${lock ? ' FOR UPDATE OF i' : ''}`;

const RESOLVE_SQL = `
  UPDATE sync_issues SET resolved_at = now() WHERE id = $1 AND resolved_at IS NULL RETURNING resolved_at`;

export class IssueQueries {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  /**
   * A page of the sync's open issues (of one type, when given), newest first by `last_seen_at`: up to `take`
   * rows after `position` (the `seen_key` and id of the last row shown).
   */
  async openPage(
    syncId: string,
    type: string | undefined,
    position: PagePosition | null,
    take: number,
  ): Promise<IssueRow[]> {
    const params: unknown[] = [syncId];
    const where = ['i.sync_id = $1', 'i.resolved_at IS NULL'];
    const bind = (value: unknown) => `$${params.push(value)}`;
    if (type !== undefined) where.push(`i.type = ${bind(type)}`);
    if (position) {
      where.push(
        `(i.last_seen_at, i.id) < (${bind(position.createdAt)}::timestamptz, ${bind(position.id)}::text)`,
      );
    }
    return this.db.query(LIST_SQL(where.join(' AND '), bind(take)), params);
  }

  /** An issue the reader may see (its account's sync, not deleted); `lock` holds it for the transaction. */
  async find(id: string, reader: IssueReader, lock = false): Promise<IssueRow | null> {
    const rows: IssueRow[] = await this.db.query(FIND_SQL(lock), [id, reader.accountId, reader.syncId]);
    return rows[0] ?? null;
  }

  /** Clears the issue; the time it was cleared, or null when it already was. */
  async resolve(id: string): Promise<Date | null> {
    const [cleared] = returnedRows<{ resolved_at: Date }>(await this.db.query(RESOLVE_SQL, [id]));
    return cleared?.resolved_at ?? null;
  }
}
