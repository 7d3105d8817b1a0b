/**
 * Held deletes (`pending_deletes`, `pending_delete_events`) as a person reviews them: the queue of a sync and
 * the decision (approve, ignore, restore) recorded with its history entry. The worker carries out
 * `requested_action` afterwards.
 */
import { type EntityManager, In, Not } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { PendingDeleteEntity, PendingDeleteEventEntity, type SideName } from '../../entities';
import type { PagePosition } from '../paging';

type State = PendingDeleteEntity['state'];

/** A held delete with what the API shows of its record (the link's display name and remote ids). */
export interface PendingDeleteListRow {
  id: string;
  record_id: string;
  state: 'awaiting_review' | 'ignored';
  missing_side: SideName;
  delete_from_side: SideName;
  pending_since: Date;
  ignored_at: Date | null;
  /** The record's link; null (all of these) when the link is gone. */
  name: string | null;
  left_remote_id: string | null;
  right_remote_id: string | null;
  left_deleted: boolean | null;
  right_deleted: boolean | null;
}

/** A list row with `pending_since` in full precision (microseconds), for the keyset cursor. */
export type PendingDeletePageRow = PendingDeleteListRow & { since_key: string };

export interface PendingDeleteDecisionWrite {
  to: State;
  set: QueryDeepPartialEntity<PendingDeleteEntity>;
}

const PAGE_SQL = (after: boolean) => `
  SELECT p.id, p.record_id, p.state, p.missing_side, p.delete_from_side, p.pending_since, p.ignored_at,
         to_char(p.pending_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS since_key,
         l.name, l.left_remote_id, l.right_remote_id, l.left_deleted, l.right_deleted
    FROM pending_deletes p LEFT JOIN record_links l ON l.id = p.record_id
   WHERE p.sync_id = $1 AND p.state = $2 ${after ? 'AND (p.pending_since, p.id) < ($4::timestamptz, $5)' : ''}
   ORDER BY p.pending_since DESC, p.id DESC
   LIMIT $3`;

export class PendingDeleteDecisions {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get rows() {
    return this.db.getRepository(PendingDeleteEntity);
  }

  /** One state's held deletes of a sync, newest first: up to `take` rows after `position`. */
  async page(
    syncId: string,
    state: string,
    take: number,
    position: PagePosition | null,
  ): Promise<PendingDeletePageRow[]> {
    return this.db.query(PAGE_SQL(position !== null), [
      syncId,
      state,
      take,
      ...(position ? [position.createdAt, position.id] : []),
    ]);
  }

  /** The record's held delete in one of `states`. */
  async findIn(syncId: string, recordId: string, states: State[]): Promise<PendingDeleteEntity | null> {
    return this.rows.findOneBy({ syncId, recordId, state: In(states) });
  }

  /** The record's latest held delete outside `states` (by decision time, then by age). */
  async latestOutside(
    syncId: string,
    recordId: string,
    states: State[],
  ): Promise<PendingDeleteEntity | null> {
    return this.rows.findOne({
      where: { syncId, recordId, state: Not(In(states)) },
      order: { decidedAt: { direction: 'DESC', nulls: 'LAST' }, pendingSince: 'DESC' },
    });
  }

  async find(id: string): Promise<PendingDeleteEntity | null> {
    return this.rows.findOneBy({ id });
  }

  async get(id: string): Promise<PendingDeleteEntity> {
    return this.rows.findOneByOrFail({ id });
  }

  /** Records a decision, conditional on the state read (`from`); false when the state changed meanwhile. */
  async decide(id: string, from: State, decision: PendingDeleteDecisionWrite): Promise<boolean> {
    const result = await this.rows.update(
      { id, state: from },
      { state: decision.to, decidedAt: () => 'now()', ...decision.set },
    );
    return !!result.affected;
  }

  /** The decision's history entry. */
  async recordEvent(
    event: Pick<PendingDeleteEventEntity, 'pendingDeleteId' | 'syncId' | 'recordId' | 'kind' | 'actor'>,
  ): Promise<void> {
    await this.db.getRepository(PendingDeleteEventEntity).insert(event);
  }
}
