/**
 * The run rows (`live_export_runs`): the worker's transitions and the API's requests (queue, cancel, list).
 * Every worker transition is a conditional update, so a repeated job, a second worker or a recovered orphan
 * never moves a run the wrong way.
 *
 * `worker_token` says who owns a running run: `n:<uuid>` for a first attempt, `r:<uuid>` for the one attempt
 * after a re-queue; the literal `requeued` marks a queued run that was orphaned once (so the next orphaning
 * fails it instead of re-queuing it again).
 */
import { randomUUID } from 'node:crypto';
import { type EntityManager, In } from 'typeorm';
import { LiveExportRunEntity } from '../../entities';
import type { PageKey, PagePosition } from '../paging';

export interface RunCounters {
  rowsRead: number;
  rowsWritten: number;
  rowsRemoved: number;
}

export interface RunError {
  code: string;
  message: string;
}

export type FinalState = 'succeeded' | 'failed' | 'canceled';

export const REQUEUED_TOKEN = 'requeued';

export interface LastRun {
  live_export_id: string;
  state: string;
  at: Date;
}

interface ClaimedRow {
  live_export_id: string;
  account_id: string;
  worker_token: string;
}

const CLAIM_SQL = `
  UPDATE live_export_runs
     SET state = 'running', worker_token = (CASE WHEN worker_token = $2 THEN 'r:' ELSE 'n:' END) || $3,
         started_at = now(), heartbeat_at = now(), rows_read = 0, rows_written = 0, rows_removed = 0
   WHERE id = $1 AND state = 'queued'
  RETURNING live_export_id, account_id, worker_token`;

const HEARTBEAT_SQL = `
  UPDATE live_export_runs
     SET heartbeat_at = now(), rows_read = $3, rows_written = $4, rows_removed = $5
   WHERE id = $1 AND worker_token = $2 AND state = 'running'
  RETURNING cancel_requested_at`;

const CANCEL_FLAG_SQL = `
  SELECT cancel_requested_at, worker_token, state FROM live_export_runs WHERE id = $1`;

const FINISH_SQL = `
  UPDATE live_export_runs
     SET state = $3, finished_at = now(), heartbeat_at = now(), rows_read = $4, rows_written = $5,
         rows_removed = $6, error = $7
   WHERE id = $1 AND worker_token = $2 AND state = 'running'
  RETURNING id`;

const REQUEUE_ORPHANS_SQL = (byAccount: boolean) => `
  UPDATE live_export_runs SET state = 'queued', worker_token = $2, heartbeat_at = NULL
   WHERE state = 'running' AND heartbeat_at < now() - make_interval(secs => $1) AND worker_token LIKE 'n:%'
         ${byAccount ? 'AND account_id = $3' : ''}
  RETURNING id`;

const FAIL_ORPHANS_SQL = (byAccount: boolean) => `
  UPDATE live_export_runs SET state = 'failed', finished_at = now(), error = $2::jsonb
   WHERE state = 'running' AND heartbeat_at < now() - make_interval(secs => $1)
         AND worker_token NOT LIKE 'n:%'
         ${byAccount ? 'AND account_id = $3' : ''}
  RETURNING id`;

const STALE_QUEUED_SQL = (byAccount: boolean) => `
  SELECT id FROM live_export_runs
   WHERE state = 'queued' AND created_at < now() - make_interval(secs => $1)
         ${byAccount ? 'AND account_id = $2' : ''}
   LIMIT 100`;

const INSERT_SCHEDULED_SQL = `
  INSERT INTO live_export_runs (id, live_export_id, account_id, state, trigger, slot_at, forced)
  VALUES ($1, $2, $3, 'queued', 'schedule', $4, false)
  ON CONFLICT DO NOTHING
  RETURNING id`;

const PAGE_SQL = (after: boolean) => `
  SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key
    FROM live_export_runs
   WHERE live_export_id = $1 ${after ? 'AND (created_at, id) < ($3::timestamptz, $4)' : ''}
   ORDER BY created_at DESC, id DESC
   LIMIT $2`;

// (A CTE so the driver returns the rows themselves, not [rows, count] as for a bare UPDATE.)
const CANCEL_ACTIVE_OF_EXPORT_SQL = `
  WITH canceled AS (
    UPDATE live_export_runs
       SET state = CASE WHEN state = 'queued' THEN 'canceled' ELSE state END,
           finished_at = CASE WHEN state = 'queued' THEN now() ELSE finished_at END,
           cancel_requested_at = coalesce(cancel_requested_at, now())
     WHERE live_export_id = $1 AND state IN ('queued', 'running')
    RETURNING id, state)
  SELECT id, state FROM canceled`;

const LAST_RUNS_SQL = `
  SELECT DISTINCT ON (live_export_id)
         live_export_id, state, coalesce(finished_at, started_at, created_at) AS at
    FROM live_export_runs
   WHERE live_export_id = ANY($1) AND account_id = $2
   ORDER BY live_export_id, created_at DESC, id DESC`;

const WORKER_LOST: RunError = {
  code: 'worker_lost',
  message: 'The worker running this export stopped twice; the next run repairs the destination',
};

export class RunStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get runs() {
    return this.db.getRepository(LiveExportRunEntity);
  }

  // ---- the worker's transitions ----

  /** Moves a queued run to running for this worker; null when it is not queued (any more). */
  async claim(runId: string): Promise<{ token: string; liveExportId: string; accountId: string } | null> {
    const rows = (await this.db.query(CLAIM_SQL, [runId, REQUEUED_TOKEN, randomUUID()])) as [
      ClaimedRow[],
      number,
    ];
    const row = rows[0][0];
    return row
      ? { token: row.worker_token, liveExportId: row.live_export_id, accountId: row.account_id }
      : null;
  }

  /**
   * Heartbeat with the counters so far; returns whether a cancel was requested, or null when this worker no
   * longer owns the run (it was recovered as an orphan, or deleted with its export).
   */
  async heartbeat(
    runId: string,
    token: string,
    counters: RunCounters,
  ): Promise<{ cancelRequested: boolean } | null> {
    const rows = (await this.db.query(HEARTBEAT_SQL, [
      runId,
      token,
      counters.rowsRead,
      counters.rowsWritten,
      counters.rowsRemoved,
    ])) as [{ cancel_requested_at: Date | null }[], number];
    const row = rows[0][0];
    return row ? { cancelRequested: row.cancel_requested_at !== null } : null;
  }

  /** A cheap look at the cancel flag (polled every 200 ms while a run works). */
  async cancelRequested(runId: string, token: string): Promise<boolean | null> {
    const rows = (await this.db.query(CANCEL_FLAG_SQL, [runId])) as {
      cancel_requested_at: Date | null;
      worker_token: string | null;
      state: string;
    }[];
    const row = rows[0];
    if (!row || row.worker_token !== token || row.state !== 'running') return null;
    return row.cancel_requested_at !== null;
  }

  /** Records the outcome; false when this worker no longer owns the run. */
  async finish(
    runId: string,
    token: string,
    state: FinalState,
    counters: RunCounters,
    error: RunError | null,
  ): Promise<boolean> {
    const rows = (await this.db.query(FINISH_SQL, [
      runId,
      token,
      state,
      counters.rowsRead,
      counters.rowsWritten,
      counters.rowsRemoved,
      error ? JSON.stringify(error) : null,
    ])) as [unknown[], number];
    return rows[0].length > 0;
  }

  /**
   * Orphans: running runs whose heartbeat is older than `staleSeconds`. A first-attempt run goes back to
   * queued (returned, to enqueue again); a run that was already re-queued once is failed.
   */
  async recoverOrphans(
    staleSeconds: number,
    accountId: string | undefined,
  ): Promise<{ requeued: string[]; failed: string[] }> {
    const byAccount = accountId ? [accountId] : [];
    const requeued = (await this.db.query(REQUEUE_ORPHANS_SQL(!!accountId), [
      staleSeconds,
      REQUEUED_TOKEN,
      ...byAccount,
    ])) as [{ id: string }[], number];
    const failed = (await this.db.query(FAIL_ORPHANS_SQL(!!accountId), [
      staleSeconds,
      JSON.stringify(WORKER_LOST),
      ...byAccount,
    ])) as [{ id: string }[], number];
    return { requeued: requeued[0].map((row) => row.id), failed: failed[0].map((row) => row.id) };
  }

  /** Queued runs older than `seconds` (their job may have been lost: the caller makes sure one exists). */
  async staleQueued(seconds: number, accountId: string | undefined): Promise<string[]> {
    const rows = (await this.db.query(
      STALE_QUEUED_SQL(!!accountId),
      accountId ? [seconds, accountId] : [seconds],
    )) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /**
   * Queues the run of a claimed schedule slot; false when the export already has an active run or this slot
   * already had a run (any unique violation leaves the slot without a run).
   */
  async queueScheduled(runId: string, liveExportId: string, accountId: string, slot: Date): Promise<boolean> {
    const inserted = (await this.db.query(INSERT_SCHEDULED_SQL, [runId, liveExportId, accountId, slot])) as {
      id: string;
    }[];
    return inserted.length > 0;
  }

  // ---- the API's requests ----

  /** Inserts a queued manual run (the active-run unique index refuses a second active run). */
  async queueManual(runId: string, liveExportId: string, accountId: string, forced: boolean): Promise<void> {
    await this.runs.insert({
      id: runId,
      liveExportId,
      accountId,
      state: 'queued',
      trigger: 'manual',
      forced,
    });
  }

  /** Takes back a queued run whose job could not be added. */
  async deleteQueued(runId: string): Promise<void> {
    await this.runs.delete({ id: runId, state: 'queued' });
  }

  async activeOf(liveExportId: string): Promise<LiveExportRunEntity | null> {
    return this.runs.findOneBy({ liveExportId, state: In(['queued', 'running']) });
  }

  async get(runId: string): Promise<LiveExportRunEntity> {
    return this.runs.findOneByOrFail({ id: runId });
  }

  async findOwned(runId: string, accountId: string): Promise<LiveExportRunEntity | null> {
    return this.runs.findOneBy({ id: runId, accountId });
  }

  async findByIds(ids: string[]): Promise<LiveExportRunEntity[]> {
    return this.runs.findBy({ id: In(ids) });
  }

  /** One page of an export's run ids, newest first (`limit` rows after `position`). */
  async page(liveExportId: string, limit: number, position: PagePosition | null): Promise<PageKey[]> {
    return this.db.query(PAGE_SQL(position !== null), [
      liveExportId,
      limit,
      ...(position ? [position.createdAt, position.id] : []),
    ]);
  }

  /** Cancels a queued run at once; false when it is not queued. */
  async cancelQueued(runId: string): Promise<boolean> {
    const queued = await this.runs
      .createQueryBuilder()
      .update()
      .set({ state: 'canceled', finishedAt: () => 'now()', cancelRequestedAt: () => 'now()' })
      .where(`id = :id AND state = 'queued'`, { id: runId })
      .execute();
    return !!queued.affected;
  }

  /** Asks the worker running the run to stop (the first request's time is kept). */
  async requestCancel(runId: string): Promise<void> {
    await this.runs
      .createQueryBuilder()
      .update()
      .set({ cancelRequestedAt: () => 'coalesce(cancel_requested_at, now())' })
      .where(`id = :id AND state = 'running'`, { id: runId })
      .execute();
  }

  /**
   * For a deleted export: its queued run is canceled and its running run asked to stop. Returns the
   * active runs as they were left.
   */
  async cancelActiveOf(liveExportId: string): Promise<{ id: string; state: string }[]> {
    return this.db.query(CANCEL_ACTIVE_OF_EXPORT_SQL, [liveExportId]);
  }

  /** The latest run of each export (state and its latest time), for the console's list. */
  async lastRuns(liveExportIds: string[], accountId: string): Promise<LastRun[]> {
    return this.db.query(LAST_RUNS_SQL, [liveExportIds, accountId]);
  }
}
