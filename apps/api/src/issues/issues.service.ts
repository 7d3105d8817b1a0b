import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import {
  DomainError,
  ErrorCode,
  ISSUE_TYPES,
  type IssueDto,
  type IssueListDto,
  type IssueRetryDto,
} from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { IssueQueries, queueRecordPush, retryAuthentication, wakeRunner } from '@lockstep/persistence';
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

/**
 * Issues (spec 2.11, 4.5): the open ones of a sync, newest first by `last_seen_at` (an issue the engine runs
 * into again moves up), and the retry that clears one and gives the engine its work again.
 */
@Injectable()
export class IssuesService {
  private readonly issues: IssueQueries;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly access: SyncAccess,
    private readonly links: SyncLinks,
    private readonly cursors: CursorService,
  ) {
    this.issues = new IssueQueries(db.manager);
  }

  async list(auth: AuthContext, query: IssuesQuery): Promise<IssueListDto> {
    const syncId = requireSyncParam(query.sync);
    const type = enumParam(query.type, ISSUE_TYPES, ErrorCode.InvalidType, 'type');
    const limit = parseLimit(query.limit, ISSUES_LIMIT);
    const endpoint = `GET /sync/issues?sync=${syncId}`;
    const position = this.cursors.decode(query.cursor, endpoint, auth.accountId);
    await this.access.assertVisible(auth, syncId);

    const rows = await this.issues.openPage(syncId, type, position, limit + 1);
    return this.cursors.page(
      rows,
      limit,
      endpoint,
      auth.accountId,
      (row) => ({ createdAt: row.seen_key, id: row.id }),
      (row) => toIssueDto(row, this.links),
    );
  }

  async get(auth: AuthContext, id: string): Promise<IssueDto> {
    return toIssueDto(await this.find(this.issues, auth, id), this.links);
  }

  /**
   * Clears the issue and gives the engine the work again, in one transaction:
   * - `record`: a `push` of the record joins its per-record queue (behind what is already queued; one waiting
   *   push per record and side is enough). The worker runs due entries within about a second: it reads both
   *   copies and writes what is missing, exactly as after a change.
   * - `connection`: a rejected credential (`authentication_error`) is tried again (the side's `auth_status`
   *   goes back to `ok`); the sync's runner is woken now instead of at the end of its failure backoff.
   * - other types: cleared; the engine raises them again while the cause persists.
   * A failure that persists reopens this same issue (`raiseIssues` in persistence), so its id tells the
   * caller. Safe to repeat: only the call that clears the issue queues anything; later ones answer
   * `already_resolved`.
   */
  async retry(auth: AuthContext, id: string): Promise<IssueRetryDto> {
    return this.db.transaction(async (tx) => {
      const issues = new IssueQueries(tx);
      const issue = await this.find(issues, auth, id, true);
      const syncId = issue.sync_id;
      const recordUrl = issue.record_id === null ? null : this.links.record(syncId, issue.record_id);
      const result = {
        issue_id: issue.id,
        record_url: recordUrl,
        issues_url: this.links.api(`/sync/issues?sync=${syncId}`),
      };
      if (issue.resolved_at !== null)
        return {
          ...result,
          resolved_at: issue.resolved_at.toISOString(),
          already_resolved: true,
          records_queued: 0,
        };

      const cleared = await issues.resolve(issue.id);
      let queued = 0;
      if (issue.type === 'record' && issue.record_id !== null) {
        queued = await queueRecordPush(tx, syncId, issue.record_id, issue.side);
      }
      if (issue.type === 'connection') {
        if (issue.code === 'authentication_error' && issue.side !== null) {
          await retryAuthentication(tx, syncId, issue.side);
        }
        await wakeRunner(tx, syncId);
      }
      return {
        ...result,
        resolved_at: (cleared ?? new Date()).toISOString(),
        already_resolved: false,
        records_queued: queued,
      };
    });
  }

  /**
   * An issue the caller may see (its account's sync, not deleted; a one-sync key's sync only); 404 otherwise.
   */
  private async find(issues: IssueQueries, auth: AuthContext, id: string, lock = false): Promise<IssueRow> {
    const notFound = () => new DomainError(ErrorCode.NotFound, `No issue ${String(id).slice(0, 100)}.`);
    if (!isId('issue', id)) throw notFound();
    const row = await issues.find(id, { accountId: auth.accountId, syncId: auth.syncId }, lock);
    if (!row) throw notFound();
    return row;
  }
}
