/**
 * The run rows (`live_export_runs`) as the worker changes them: every transition is a conditional update, so a
 * repeated job, a second worker or a recovered orphan never moves a run the wrong way.
 *
 * `worker_token` says who owns a running run: `n:<uuid>` for a first attempt, `r:<uuid>` for the one attempt
 * after a re-queue; the literal `requeued` marks a queued run that was orphaned once (so the next orphaning
 * fails it instead of re-queuing it again).
 */
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';

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

interface ClaimedRow {
  live_export_id: string;
  account_id: string;
  worker_token: string;
}

export class RunStore {
  constructor(private readonly db: DataSource) {}

  /** Moves a queued run to running for this worker; null when it is not queued (any more). */
  async claim(runId: string): Promise<{ token: string; liveExportId: string; accountId: string } | null> {
    const rows = (await this.db.query(
      `UPDATE live_export_runs SET state = 'running', worker_token = (CASE WHEN worker_token = $2 THEN 'r:' ELSE 'n:' END) || $3,
              started_at = now(), heartbeat_at = now(), rows_read = 0, rows_written = 0, rows_removed = 0
        WHERE id = $1 AND state = 'queued' RETURNING live_export_id, account_id, worker_token`,
      [runId, REQUEUED_TOKEN, randomUUID()],
    )) as [ClaimedRow[], number];
    const row = rows[0][0];
    return row ? { token: row.worker_token, liveExportId: row.live_export_id, accountId: row.account_id } : null;
  }

  /**
   * Heartbeat with the counters so far; returns whether a cancel was requested, or null when this worker no
   * longer owns the run (it was recovered as an orphan, or deleted with its export).
   */
  async heartbeat(runId: string, token: string, counters: RunCounters): Promise<{ cancelRequested: boolean } | null> {
    const rows = (await this.db.query(
      `UPDATE live_export_runs SET heartbeat_at = now(), rows_read = $3, rows_written = $4, rows_removed = $5
        WHERE id = $1 AND worker_token = $2 AND state = 'running' RETURNING cancel_requested_at`,
      [runId, token, counters.rowsRead, counters.rowsWritten, counters.rowsRemoved],
    )) as [{ cancel_requested_at: Date | null }[], number];
    const row = rows[0][0];
    return row ? { cancelRequested: row.cancel_requested_at !== null } : null;
  }

  /** A cheap look at the cancel flag (polled every 200 ms while a run works). */
  async cancelRequested(runId: string, token: string): Promise<boolean | null> {
    const rows = (await this.db.query(`SELECT cancel_requested_at, worker_token, state FROM live_export_runs WHERE id = $1`, [runId])) as {
      cancel_requested_at: Date | null;
      worker_token: string | null;
      state: string;
    }[];
    const row = rows[0];
    if (!row || row.worker_token !== token || row.state !== 'running') return null;
    return row.cancel_requested_at !== null;
  }

  /** Records the outcome; false when this worker no longer owns the run. */
  async finish(runId: string, token: string, state: FinalState, counters: RunCounters, error: RunError | null): Promise<boolean> {
    const rows = (await this.db.query(
      `UPDATE live_export_runs SET state = $3, finished_at = now(), heartbeat_at = now(), rows_read = $4, rows_written = $5, rows_removed = $6, error = $7
        WHERE id = $1 AND worker_token = $2 AND state = 'running' RETURNING id`,
      [runId, token, state, counters.rowsRead, counters.rowsWritten, counters.rowsRemoved, error ? JSON.stringify(error) : null],
    )) as [unknown[], number];
    return rows[0].length > 0;
  }

  /**
   * Orphans: running runs whose heartbeat is older than `staleSeconds`. A first-attempt run goes back to
   * queued (returned, to enqueue again); a run that was already re-queued once is failed.
   */
  async recoverOrphans(staleSeconds: number, accountId: string | undefined): Promise<{ requeued: string[]; failed: string[] }> {
    const filter = accountId ? 'AND account_id = $3' : '';
    const params: unknown[] = [staleSeconds, REQUEUED_TOKEN];
    if (accountId) params.push(accountId);
    const requeued = (await this.db.query(
      `UPDATE live_export_runs SET state = 'queued', worker_token = $2, heartbeat_at = NULL
        WHERE state = 'running' AND heartbeat_at < now() - make_interval(secs => $1) AND worker_token LIKE 'n:%' ${filter} RETURNING id`,
      params,
    )) as [{ id: string }[], number];
    const error = JSON.stringify({ code: 'worker_lost', message: 'The worker running this export stopped twice; the next run repairs the destination' });
    const failed = (await this.db.query(
      `UPDATE live_export_runs SET state = 'failed', finished_at = now(), error = $2::jsonb
        WHERE state = 'running' AND heartbeat_at < now() - make_interval(secs => $1) AND worker_token NOT LIKE 'n:%' ${accountId ? 'AND account_id = $3' : ''} RETURNING id`,
      accountId ? [staleSeconds, error, accountId] : [staleSeconds, error],
    )) as [{ id: string }[], number];
    return { requeued: requeued[0].map((row) => row.id), failed: failed[0].map((row) => row.id) };
  }

  /** Queued runs older than `seconds` (their job may have been lost: the caller makes sure one exists). */
  async staleQueued(seconds: number, accountId: string | undefined): Promise<string[]> {
    const rows = (await this.db.query(
      `SELECT id FROM live_export_runs WHERE state = 'queued' AND created_at < now() - make_interval(secs => $1) ${accountId ? 'AND account_id = $2' : ''} LIMIT 100`,
      accountId ? [seconds, accountId] : [seconds],
    )) as { id: string }[];
    return rows.map((row) => row.id);
  }
}
