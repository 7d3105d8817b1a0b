/** What one reconcile call is asked, what it answers, and the state its stages pass along. */
import type { CanonicalValue, ConflictReason, SideName, Values, WritePlan } from '@lockstep/domain';
import type { SourceRecord } from '@lockstep/connectors-core';
import type { EngineContext } from '../context';
import { fieldEnd, type PairPlan } from '../plan';
import type { IdScheme } from '../service-ids';
import type { PassTimes, Resource } from '../stage-times';
import type { Db, LinkRow, OperationRow, RecordIssue } from '@lockstep/persistence';

export interface Observation {
  side: SideName;
  remoteId: string;
  record: SourceRecord;
  /** When the change happened (change-log commit time), else null (observed now / unknown). */
  at: string | null;
}

/**
 * Extra work in the same commit (checkpoints, progress); receives the counts of this call, final before the
 * commit.
 */
export type OnCommit = (tx: Db, result: ReconcileResult) => Promise<void>;

/** Who asks, and what that asker needs beyond the merge. */
export type ReconcileRequest =
  /**
   * A page of the initial sync. Records that simply exist are not detected changes, and first-sight
   * differences go to the preferred side. The app writes and the store commit run in the background: the
   * result carries them as `commit`, which the caller must await; the commit writes its rows at once but
   * commits only after `after` (the previous page's commit) has, so `onCommit` runs, and transactions commit,
   * in page order.
   */
  | {
      kind: 'initial';
      /** Records (side:remoteId) not to create on the other side (duplicate match keys). */
      skip: Set<string>;
      /**
       * None of the observed records has a link (an initial sync pass that began with no links for the pair,
       * see `unlinkedPass`): no links are looked up. Not by remote id, and not by the service ids the records
       * carry either: the only links of the pair are the ones this pass wrote, for records of its earlier
       * pages on the side it reads, under service ids derived for their copies on the other side, which no
       * record of this side carries. A record carrying this sync's mark therefore finds no link, exactly as a
       * lookup would find none (an orphan).
       */
      unlinked: boolean;
      /**
       * The initial sync's run: new links take service ids derived from it (service-ids.ts), so their creates
       * need no intent in the store first (a replay derives the same ids and the connector adopts the rows).
       */
      initialRun?: string;
      /**
       * How `initialRun` derives its ids (the run's `id_scheme`; 1 for runs prepared before scheme 2
       * existed).
       */
      initialIdScheme?: IdScheme;
      after: Promise<void> | null;
      /**
       * The previous page's `written`: this page's app writes begin after that page's, and fail with its error.
       */
      writeAfter?: Promise<void> | null;
      /** Where the pass's wall time goes (the benchmark's figures), when asked for. */
      times?: PassTimes | null;
      onCommit: OnCommit;
    }
  /** A batch of a change feed; `onCommit` stores its checkpoints. */
  | { kind: 'feed'; onCommit: OnCommit }
  /** A page of a full scan: the records whose content hash differs from their link's. */
  | { kind: 'scan' }
  /** Due queue entries of one table pair. */
  | {
      kind: 'queue';
      /** The entries this call carries out: removed in its commit, before the entries it queues itself. */
      consumed: string[];
      /**
       * Per record, how often its queued push has already been tried (a deferred push backs off with each
       * try).
       */
      attempts: Map<string, number>;
    }
  /**
   * A held delete a person restored: the surviving copy, re-created on the other side; `onCommit` marks it
   * applied.
   */
  | { kind: 'restore'; onCommit: OnCommit }
  /** Records merged again after an edit under a write (`remerge.ts`); `round` counts those merges, from 1. */
  | { kind: 'remerge'; round: number };

export interface ReconcileResult {
  created: { left: number; right: number };
  updated: { left: number; right: number };
  failed: number;
  verifyDeletes: number;
  /** An initial sync's page: the writes and commit still running. */
  commit?: Promise<void>;
  /** An initial sync's page: its app writes (rejects with their error, or that of an earlier page's). */
  written?: Promise<void>;
}

/** One record pair in this call: its link and what the stages learn and decide about it. */
export interface Unit {
  link: LinkRow;
  isNew: boolean;
  current: Record<SideName, Values | null>;
  at: Record<SideName, string | null>;
  /** Values to write per side (target field remote id -> value), and which keys they came from. */
  writes: Record<SideName, WritePlan | null>;
  /** Shadow updates to apply after the writes, per side: field remote id -> value. */
  shadow: Record<SideName, Values>;
  ops: OperationRow[];
  /**
   * Conflicts decided for this record, by the side whose write carries them (`to`: the losing side's copy).
   */
  conflicts: { to: SideName; field: string; winner: SideName; reason: ConflictReason }[];
  deferred: boolean;
  /**
   * Per side: a change of that side did not reach the other one (a value that cannot be converted, a link
   * whose target is not there yet, a write refused or dropped); its shadow kept the old values for it.
   */
  kept: Record<SideName, boolean>;
  /**
   * Both sides' values went through the field merge (a side's pending change was decided on, one way or the
   * other).
   */
  merged: boolean;
  /**
   * A copy this sync created whose link never reached the store (a crash between the app write and the
   * commit) and whose source record has since gone: linked as it is, and its source is taken as deleted.
   */
  orphan: boolean;
}

export interface QueueEntry {
  recordId: string;
  type: 'push' | 'verify_delete';
  side: SideName | null;
  delayMs?: number;
  attempts?: number;
}

/** A target edited between this call's read and its conditional update (`at`: when the write found out). */
export interface Edited {
  unit: Unit;
  target: SideName;
  at: string;
}

/** The state of one reconcile call, passed from stage to stage. */
export interface Batch {
  ctx: EngineContext;
  pair: PairPlan;
  request: ReconcileRequest;
  /** The mapped fields' remote ids per side. */
  fields: Record<SideName, string[]>;
  units: Map<string, Unit>;
  /** Links of records seen again on a side where they were marked deleted. */
  reappeared: Set<string>;
  /** Entries to queue in the commit, in order. */
  queue: QueueEntry[];
  issues: RecordIssue[];
  result: ReconcileResult;
  /** When the records were decided. */
  now: string;
}

export { otherSide as other, SIDES } from '@lockstep/domain';

/**
 * Long synchronous loops over a page's records give the event loop a turn every YIELD_EVERY records: the
 * earlier pages' app writes and store commits, running in the background, then send their next statement as
 * soon as the previous one answers instead of after the whole loop (docs/performance.md).
 */
export const YIELD_EVERY = 64;

export function mappedFields(pair: PairPlan, side: SideName): string[] {
  return pair.fields.map((field) => fieldEnd(field, side).remoteId);
}

export function pick(values: Record<string, CanonicalValue>, fields: string[]): Values {
  const out: Values = {};
  for (const field of fields) out[field] = values[field] ?? null;
  return out;
}

/** How many times the records of this call were already merged again after an edit under a write. */
export function remergeRound(request: ReconcileRequest): number {
  return request.kind === 'remerge' ? request.round : 0;
}

export function onCommitOf(request: ReconcileRequest): OnCommit | null {
  return request.kind === 'initial' || request.kind === 'feed' || request.kind === 'restore'
    ? request.onCommit
    : null;
}

/** How often the queued push of a record was already tried (0 outside the queue). */
export function attemptsOf(request: ReconcileRequest, recordId: string): number {
  return request.kind === 'queue' ? (request.attempts.get(recordId) ?? 0) : 0;
}

/** Runs `work` with `resource` marked busy in the pass's figures (an initial sync page's), else just runs it. */
export function timed<T>(request: ReconcileRequest, resource: Resource, work: () => Promise<T>): Promise<T> {
  const times = request.kind === 'initial' ? request.times : null;
  return times ? times.during(resource, work) : work();
}
