import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import {
  DomainError,
  ErrorCode,
  ISSUE_TYPES,
  type IssueDto,
  type IssueListDto,
  type IssueRetryDto,
} from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import type { AuthContext } from '../common/auth/auth-context';
import { enumParam, requireSyncParam } from '../common/http/query-params';
import { CursorService, type LimitRule, parseLimit } from '../common/pagination/cursor.service';
import { SyncAccess } from '../syncs/sync-access';
import { SyncLinks } from '../syncs/sync-links';
import { type IssueRow, toIssueDto } from './issues.mapper';

export const ISSUES_LIMIT: LimitRule = { min: 1, max: 100, default: 20 };

export interface IssuesQuery {
  sync?: unknown;
  type?: unknown;
  limit?: unknown;
  cursor?: unknown;
}

const COLUMNS = `i.id, i.sync_id, i.type, i.code, i.side, i.connector, i.message, i.remediation, i.table_id, i.table_name, i.record_id, i.record_remote_id, COALESCE(i.record_name, l.name) AS record_name,
  i.first_seen_at, i.last_seen_at, i.occurrence_count, i.resolved_at, to_char(i.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS seen_key,
  l.left_remote_id AS link_left_remote_id, l.right_remote_id AS link_right_remote_id`;

/**
 * The rows of an `UPDATE ... RETURNING`: TypeORM's PostgreSQL driver answers it with `[rows, count]` (an
 * `INSERT ... RETURNING` with the rows alone).
 */
function returned<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}

/**
 * Issues (spec 2.11, 4.5): the open ones of a sync, newest first by `last_seen_at` (an issue the engine runs
 * into again moves up), and the retry that clears one and gives the engine its work again.
 */
@Injectable()
export class IssuesService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly access: SyncAccess,
    private readonly links: SyncLinks,
    private readonly cursors: CursorService,
  ) {}

  async list(auth: AuthContext, query: IssuesQuery): Promise<IssueListDto> {
    const syncId = requireSyncParam(query.sync);
    const type = enumParam(query.type, ISSUE_TYPES, ErrorCode.InvalidType, 'type');
    const limit = parseLimit(query.limit, ISSUES_LIMIT);
    const endpoint = `GET /sync/issues?sync=${syncId}`;
    const position = this.cursors.decode(query.cursor, endpoint, auth.accountId);
    await this.access.assertVisible(auth, syncId);

    const params: unknown[] = [syncId];
    const where = ['i.sync_id = $1', 'i.resolved_at IS NULL'];
    const bind = (value: unknown) => `$${params.push(value)}`;
    if (type !== undefined) where.push(`i.type = ${bind(type)}`);
    if (position) where.push(`(i.last_seen_at, i.id) < (${bind(position.createdAt)}::timestamptz, ${bind(position.id)}::text)`);
    const rows: IssueRow[] = await this.db.query(
      `SELECT ${COLUMNS} FROM sync_issues i LEFT JOIN record_links l ON l.id = i.record_id
       WHERE ${where.join(' AND ')} ORDER BY i.last_seen_at DESC, i.id DESC LIMIT ${bind(limit + 1)}`,
      params,
    );
    return this.cursors.page(rows, limit, endpoint, auth.accountId, (row) => ({ createdAt: row.seen_key, id: row.id }), (row) => toIssueDto(row, this.links));
  }

  async get(auth: AuthContext, id: string): Promise<IssueDto> {
    return toIssueDto(await this.find(this.db.manager, auth, id), this.links);
  }

  /**
   * Clears the issue and gives the engine the work again, in one transaction:
   * - `record`: a `push` of the record joins its per-record queue (behind what is already queued; one waiting
   *   push per record and side is enough). The worker runs due entries within about a second: it reads both
   *   copies and writes what is missing, exactly as after a change.
   * - `connection`: a rejected credential (`authentication_error`) is tried again (the side's `auth_status`
   *   goes back to `ok`); the sync's runner is woken now instead of at the end of its failure backoff.
   * - other types: cleared; the engine raises them again while the cause persists.
   * A failure that persists reopens this same issue (`raiseIssues` in persistence), so its id tells the caller.
   * Safe to repeat: only the call that clears the issue queues anything; later ones answer `already_resolved`.
   */
  async retry(auth: AuthContext, id: string): Promise<IssueRetryDto> {
    return this.db.transaction(async (tx) => {
      const issue = await this.find(tx, auth, id, true);
      const syncId = issue.sync_id;
      const recordUrl = issue.record_id === null ? null : this.links.record(syncId, issue.record_id);
      const result = { issue_id: issue.id, record_url: recordUrl, issues_url: this.links.api(`/sync/issues?sync=${syncId}`) };
      if (issue.resolved_at !== null) return { ...result, resolved_at: issue.resolved_at.toISOString(), already_resolved: true, records_queued: 0 };

      const [cleared] = returned<{ resolved_at: Date }>(await tx.query(`UPDATE sync_issues SET resolved_at = now() WHERE id = $1 AND resolved_at IS NULL RETURNING resolved_at`, [issue.id]));
      let queued = 0;
      if (issue.type === 'record' && issue.record_id !== null) {
        const inserted = returned<{ id: string }>(
          await tx.query(
            `INSERT INTO record_queue (sync_id, record_id, type, side)
             SELECT l.sync_id, l.id, 'push', $3 FROM record_links l
             WHERE l.id = $2 AND l.sync_id = $1
               AND NOT EXISTS (SELECT 1 FROM record_queue q WHERE q.record_id = l.id AND q.type = 'push' AND q.side IS NOT DISTINCT FROM $3 AND q.attempts = 0)
             RETURNING id::text AS id`,
            [syncId, issue.record_id, issue.side],
          ),
        );
        queued = inserted.length;
      }
      if (issue.type === 'connection') {
        if (issue.code === 'authentication_error' && issue.side !== null) {
          await tx.query(`UPDATE sync_sides SET auth_status = 'ok', auth_error = NULL, updated_at = now() WHERE sync_id = $1 AND side = $2 AND auth_status = 'error'`, [syncId, issue.side]);
        }
        await tx.query(`UPDATE sync_leases SET wake_requested_at = now() WHERE sync_id = $1`, [syncId]);
      }
      return { ...result, resolved_at: (cleared?.resolved_at ?? new Date()).toISOString(), already_resolved: false, records_queued: queued };
    });
  }

  /** An issue the caller may see (its account's sync, not deleted; a one-sync key's sync only); 404 otherwise. */
  private async find(db: EntityManager, auth: AuthContext, id: string, lock = false): Promise<IssueRow> {
    const notFound = () => new DomainError(ErrorCode.NotFound, `No issue ${String(id).slice(0, 100)}.`);
    if (!isId('issue', id)) throw notFound();
    const rows: IssueRow[] = await db.query(
      `SELECT ${COLUMNS} FROM sync_issues i JOIN syncs s ON s.id = i.sync_id LEFT JOIN record_links l ON l.id = i.record_id
       WHERE i.id = $1 AND s.account_id = $2 AND s.deleted_at IS NULL AND ($3::text IS NULL OR s.id = $3)${lock ? ' FOR UPDATE OF i' : ''}`,
      [id, auth.accountId, auth.syncId],
    );
    const row = rows[0];
    if (!row) throw notFound();
    return row;
  }
}
