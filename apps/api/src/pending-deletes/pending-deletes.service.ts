import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { DomainError, ErrorCode, type PendingDeleteListDto } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import {
  linkTablePairs,
  PendingDeleteDecisions,
  type PendingDeleteEntity,
  type PendingDeleteEventEntity,
} from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { enumParam, requireSyncParam } from '../common/http/query-params';
import { CursorService, type LimitRule, parseLimit } from '../common/pagination/cursor.service';
import { SyncAccess } from '../syncs/sync-access';
import { SyncLinks } from '../syncs/sync-links';
import { type PendingDeleteDecisionView, toDecisionView, toPendingDeleteDto } from './pending-deletes.mapper';

export type PendingDeleteDecision = 'approve' | 'ignore' | 'restore';

type State = PendingDeleteEntity['state'];
const OPEN_STATES: State[] = ['awaiting_review', 'ignored'];
const LIST_STATES = ['awaiting_review', 'ignored'] as const;
export const LIST_LIMIT: LimitRule = { min: 1, max: 100, default: 20 };

/**
 * What each decision may start from, where it leads, what the engine is asked to do, and the history entry.
 */
const RULES: Record<
  PendingDeleteDecision,
  {
    from: readonly State[];
    to: State;
    event: PendingDeleteEventEntity['kind'];
    set: QueryDeepPartialEntity<PendingDeleteEntity>;
  }
> = {
  approve: {
    from: ['awaiting_review', 'ignored'],
    to: 'approved',
    event: 'approved',
    set: { requestedAction: 'approve' },
  },
  ignore: { from: ['awaiting_review'], to: 'ignored', event: 'ignored', set: { ignoredAt: () => 'now()' } },
  restore: {
    from: ['awaiting_review', 'ignored'],
    to: 'closed',
    event: 'restored',
    set: { requestedAction: 'restore' },
  },
};

/**
 * A person's decision on a held delete (spec 3.2, engine design 5): approve (the engine deletes the surviving
 * copy), ignore (the surviving copy stays, dormant, not raised again), restore (the engine re-creates the
 * missing copy from the surviving one). Only the decision is recorded here, with its history entry, in one
 * transaction; the worker carries out `requested_action` and sets `applied_at`. No API operation calls this
 * (spec 3.2): the console and the operator CLI do.
 */
@Injectable()
export class PendingDeletesService {
  private readonly decisions: PendingDeleteDecisions;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly access: SyncAccess,
    private readonly links: SyncLinks,
    private readonly cursors: CursorService,
  ) {
    this.decisions = new PendingDeleteDecisions(dataSource.manager);
  }

  /**
   * `GET /sync/pending-deletes` (spec 2.13, 4.7): one state's held deletes of a sync, newest first, keyset on
   * `(pending_since, id)` (index `pending_deletes_sync_state`). Under `auto_approve` there is no queue:
   * `409 delete_approval_disabled`.
   */
  async list(
    auth: AuthContext,
    raw: { sync: unknown; state: unknown; limit: unknown; cursor: unknown },
  ): Promise<PendingDeleteListDto> {
    const syncId = requireSyncParam(raw.sync);
    const state = enumParam(raw.state, LIST_STATES, ErrorCode.InvalidState, 'state') ?? 'awaiting_review';
    const limit = parseLimit(raw.limit, LIST_LIMIT);
    // A cursor belongs to one sync and state: passed with another it is refused, not misread.
    const endpoint = `GET /sync/pending-deletes?sync=${syncId}&state=${state}`;
    const position = this.cursors.decode(raw.cursor, endpoint, auth.accountId);
    const { sync } = await this.access.load(auth, syncId);
    if (sync.deleteApproval === 'auto_approve') {
      throw new DomainError(
        ErrorCode.DeleteApprovalDisabled,
        `Sync ${syncId} applies deletes without review (delete approval \`auto_approve\`), so nothing ` +
          `is held for review. A person can require review in the app.`,
        {
          delete_approval: sync.deleteApproval,
        },
      );
    }
    const rows = await this.decisions.page(syncId, state, limit + 1, position);
    return this.cursors.page(
      rows,
      limit,
      endpoint,
      auth.accountId,
      (row) => ({ createdAt: row.since_key, id: row.id }),
      (row) => toPendingDeleteDto(syncId, row, this.links),
    );
  }

  async decide(
    auth: AuthContext,
    syncId: string,
    recordId: string,
    decision: PendingDeleteDecision,
    actor: string,
  ): Promise<PendingDeleteDecisionView> {
    await this.access.load(auth, syncId);
    const rule = RULES[decision];
    return this.dataSource.transaction(async (m) => {
      const decisions = new PendingDeleteDecisions(m);
      const current = await this.current(decisions, syncId, recordId);
      if (decision === 'ignore' && current.state === 'ignored') return toDecisionView(current);
      if (!rule.from.includes(current.state)) throw this.notAllowed(current, decision);
      // Conditional on the state read: of two concurrent decisions, the second updates nothing and is
      // refused.
      if (!(await decisions.decide(current.id, current.state, { to: rule.to, set: rule.set }))) {
        const now = await decisions.find(current.id);
        if (!now) throw this.notFound(syncId, recordId);
        if (decision === 'ignore' && now.state === 'ignored') return toDecisionView(now);
        throw this.notAllowed(now, decision);
      }
      await decisions.recordEvent({ pendingDeleteId: current.id, syncId, recordId, kind: rule.event, actor });
      return toDecisionView(await decisions.get(current.id));
    });
  }

  /**
   * The record's open held delete or, when none is open, its latest decided one (to say why nothing is left
   * to decide).
   */
  private async current(
    decisions: PendingDeleteDecisions,
    syncId: string,
    recordId: string,
  ): Promise<PendingDeleteEntity> {
    const row = isId('record', recordId)
      ? ((await decisions.findIn(syncId, recordId, OPEN_STATES)) ??
        (await decisions.latestOutside(syncId, recordId, OPEN_STATES)))
      : null;
    if (!row) throw this.notFound(syncId, recordId);
    return row;
  }

  /** The table pair of each record (of those still linked), for the console's queue. */
  async tablePairs(syncId: string, recordIds: string[]): Promise<Map<string, number>> {
    if (recordIds.length === 0) return new Map();
    const rows = await linkTablePairs(this.dataSource.manager, syncId, recordIds);
    return new Map(rows.map((row) => [row.id, row.table_pair]));
  }

  private notFound(syncId: string, recordId: string): DomainError {
    return new DomainError(
      ErrorCode.NotFound,
      `Record ${recordId} has no held delete in sync ${syncId}: nothing is awaiting review or ignored ` +
        `for it.`,
      { sync: syncId, record: recordId },
    );
  }

  private notAllowed(row: PendingDeleteEntity, decision: PendingDeleteDecision): DomainError {
    const when = row.decidedAt ? ` at ${row.decidedAt.toISOString()}` : '';
    const why =
      row.state === 'approved'
        ? `its delete was already approved${when}; nothing is left to decide`
        : row.state === 'closed'
          ? (row.requestedAction === 'restore'
              ? `it was already restored${when}`
              : 'it closed by itself when the record reappeared') + '; nothing is left to decide'
          : `it was decided meanwhile and is now ${row.state}; look again before deciding`;
    return new DomainError(
      ErrorCode.Conflict,
      `Cannot ${decision} the held delete of record ${row.recordId}: ${why}.`,
      { sync: row.syncId, record: row.recordId, state: row.state },
    );
  }
}
