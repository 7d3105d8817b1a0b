/**
 * What the engine benchmark's parts share (run.ts, initial.ts): options, printing, the summary and figures,
 * the environment of a run, waiting, and the worker's start and stop.
 */
import type { AppKind, AppSide } from './apps';
import { type ServiceStore, startWorker, type Worker } from './service';

export type Bench = 'initial' | 'latency' | 'idle' | 'airtable';

export interface Options {
  rows: number;
  /** The Airtable round trip: PostgreSQL rows synced into the simulator and back. */
  airtableRows: number;
  only: Bench[];
  updates: number;
  latencyRows: number;
  syncs: number;
  idleRows: number;
  idleSeconds: number;
  timeoutSeconds: number;
  workerLog: string;
  pgUrl: string;
  mysqlUrl: string;
  /** Initial sync: the source side of each direction run. */
  from: AppKind[];
  /** Initial sync: skip the write ceiling (a long extra at a million rows). */
  noCeiling: boolean;
  /**
   * Initial sync: with more than 1, the same sync runs again on fresh tables with this many worker processes
   * sharing its key ranges, and their rate is printed next to one worker's.
   */
  workers: number;
}

export const say = (line = '') => process.stdout.write(`${line}\n`);
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const secs = (s: number) => `${s.toFixed(2)} s`;
export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
export const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
export const ms = (n: number) => `${n.toFixed(0)} ms`;
export const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
export const sleep = (msec: number) => new Promise((resolve) => setTimeout(resolve, msec));
export const serverName = (kind: AppKind) => (kind === 'postgres' ? 'PostgreSQL' : 'MariaDB');

export interface SummaryRow {
  benchmark: string;
  figure: string;
  value: string;
  target: string;
  verdict: string;
}

export const summary: SummaryRow[] = [];
export const figures: Record<string, unknown> = {};
export const errors: string[] = [];

export function row(
  benchmark: string,
  figure: string,
  value: string,
  target = '',
  ok: boolean | null = null,
): void {
  summary.push({ benchmark, figure, value, target, verdict: ok === null ? '' : ok ? 'ok' : 'MISSED' });
}

/** Everything one benchmark run sets up; torn down in reverse at the end (also on Ctrl-C). */
export interface Env {
  store: ServiceStore;
  pg: AppSide;
  my: AppSide;
  workers: Worker[];
}

export async function waitUntil<T>(
  what: string,
  timeoutMs: number,
  everyMs: number,
  check: () => Promise<T | null | false | undefined>,
  worker?: Worker,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (worker?.exited())
      throw new Error(`the worker exited while waiting for ${what} (log: ${worker.logFile})`);
    if (Date.now() > deadline)
      throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

export async function bootWorker(
  env: Env,
  accountId: string,
  workerLog: string,
  extra: Record<string, string> = {},
): Promise<Worker> {
  const worker = startWorker(env.store, accountId, workerLog, extra);
  env.workers.push(worker);
  // The worker has nothing to do yet (the account's syncs are drafts): give it time to boot, so that the
  // clock measures the engine, not Node and Nest starting.
  await sleep(3000);
  if (worker.exited()) throw new Error(`the worker exited during start-up (log: ${worker.logFile})`);
  return worker;
}

export async function stopWorker(env: Env, worker: Worker): Promise<void> {
  await worker.stop();
  env.workers = env.workers.filter((w) => w !== worker);
}

export async function openIssues(
  store: ServiceStore,
  accountId: string,
): Promise<{ code: string; message: string; n: number }[]> {
  return store.sql(
    `SELECT i.code, min(i.message) AS message, count(*)::int AS n FROM sync_issues i JOIN syncs s ON s.id = i.sync_id
     WHERE s.account_id = $1 AND i.resolved_at IS NULL GROUP BY i.code ORDER BY n DESC`,
    [accountId],
  );
}
