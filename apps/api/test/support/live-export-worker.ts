/**
 * Live export driven the way a user drives it, with the real worker process carrying the runs: the test app
 * (in this process) on a queue prefix of the test's own, accounts and keys made through it, exports created,
 * mapped (PUT with If-Match) and saved over HTTP, runs triggered, watched and canceled over HTTP, and
 * `dist/apps/worker/src/main.js` spawned with the same store, Redis, queue prefix and master key, limited to
 * the test account (`ENGINE_ACCOUNT_ID`) and with the schedule test clock on (`LIVE_EXPORT_TEST_CLOCK=1`).
 * Run `npm run -s build` first when the worker changed (jest's global setup also compiles into dist/).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Queue } from 'bull';
import { JobProducer, LIVE_EXPORT_JOBS, QUEUES } from '@lockstep/jobs';
import { waitUntil } from './live-sync';
import { uniqueName } from './scratch-dbs';
import { bearer, createTestApp, TEST_MASTER_KEY, type TestApp } from './test-app';

const ROOT = join(__dirname, '..', '..', '..', '..');
/** The worker reads the scheduler's "now" from `<QUEUE_PREFIX>:<this key>` (apps/worker/src/live-export/live-export.processor.ts). */
const TEST_CLOCK_KEY = 'live-export:clock';
const FINISHED = ['succeeded', 'failed', 'canceled'];

export interface RunBody {
  id: string;
  live_export: string;
  state: string;
  trigger: string;
  slot_at: string | null;
  forced: boolean;
  rows_read: number;
  rows_written: number;
  rows_removed: number;
  error: { code: string; message: string } | null;
  started_at: string | null;
  finished_at: string | null;
  cancel_requested_at: string | null;
}

export interface ExportSide {
  connector: string;
  auth: Record<string, unknown>;
  base?: string;
  location?: string;
}

export interface LiveExportWorld {
  t: TestApp;
  accountId: string;
  keys: { read: string; write: string; operate: string };
  prefix: string;
  queue: Queue;
  worker: ChildProcess | null;
  /** Spawns the worker; resolves once it has registered its schedule tick (a fresh queue prefix has none). */
  startWorker(extraEnv?: Record<string, string>): Promise<void>;
  /** SIGKILL, as a crash: no shutdown hooks run. */
  killWorker(): Promise<void>;
  close(): Promise<void>;
  /** The scheduler's "now" (the worker's test clock). */
  setClock(at: string | Date): Promise<void>;
  /** Adds one `tick` job and waits until the worker has carried it out. */
  tick(): Promise<void>;
  /** Create (POST), map (GET mappings for the ETag, PUT with If-Match) and save (POST .../save) an export. */
  createExport(input: {
    name: string;
    source: ExportSide;
    destination: ExportSide;
    tables: object[];
  }): Promise<{ id: string; body: Record<string, string> }>;
  trigger(liveExportId: string): Promise<RunBody>;
  run(runId: string): Promise<RunBody>;
  /** `GET /v1/live-export/runs?live_export=...` (newest first, up to 25). */
  runs(liveExportId: string): Promise<RunBody[]>;
  /** Polls `GET /v1/live-export/runs/{id}` until the run has finished. */
  finished(runId: string, timeoutMs?: number): Promise<RunBody>;
  schedule(liveExportId: string): Promise<Record<string, unknown>>;
  patchSchedule(liveExportId: string, body: object): Promise<Record<string, unknown>>;
}

function ok<T>(what: string, res: { status: number; body: unknown }, status: number): T {
  if (res.status !== status)
    throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as T;
}

/** `workerEnv` goes to the worker and the in-process API alike (`AIRTABLE_API_URL`...). */
export async function liveExportWorld(workerEnv: Record<string, string> = {}): Promise<LiveExportWorld> {
  const prefix = uniqueName('lxw');
  const t = await createTestApp({ ...workerEnv, QUEUE_PREFIX: prefix });
  const accountId = (await t.account({ plan: 'business' })).id;
  const keys = {
    read: await t.key(accountId, 'read'),
    write: await t.key(accountId, 'readwrite'),
    operate: await t.key(accountId, 'operate'),
  };
  const queue = t.app.get(JobProducer).queue(QUEUES.liveExport);
  const http = () => t.http();

  const world: LiveExportWorld = {
    t,
    accountId,
    keys,
    prefix,
    queue,
    worker: null,
    async startWorker(extraEnv = {}) {
      const child = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
        env: {
          ...process.env,
          DATABASE_URL: t.config.DATABASE_URL,
          REDIS_URL: t.config.REDIS_URL,
          QUEUE_PREFIX: prefix,
          LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
          ENGINE_ACCOUNT_ID: accountId,
          LIVE_EXPORT_TEST_CLOCK: '1',
          LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
          ...workerEnv,
          ...extraEnv,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      world.worker = child;
      await waitUntil(
        'the worker to register its live export tick',
        async () => {
          if (child.exitCode !== null) throw new Error(`the worker exited with ${child.exitCode}`);
          return (await queue.getRepeatableJobs()).some((job) => job.name === LIVE_EXPORT_JOBS.tick);
        },
        30_000,
        100,
      );
    },
    async killWorker() {
      const child = world.worker;
      world.worker = null;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    async close() {
      await world.killWorker();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.client.del(`${prefix}:${TEST_CLOCK_KEY}`).catch(() => undefined);
      await t.close();
    },
    async setClock(at) {
      await queue.client.set(`${prefix}:${TEST_CLOCK_KEY}`, String(new Date(at).getTime()));
    },
    async tick() {
      const job = await queue.add(
        LIVE_EXPORT_JOBS.tick,
        {},
        { removeOnComplete: false, removeOnFail: false },
      );
      await job.finished();
    },
    async createExport(input) {
      const created = ok<Record<string, string>>(
        'create',
        await http()
          .post('/v1/live-export/live-exports')
          .set(bearer(keys.write))
          .send({ name: input.name, source: input.source, destination: input.destination }),
        201,
      );
      const id = created['id']!;
      const current = await http().get(`/v1/live-export/live-exports/${id}/mappings`).set(bearer(keys.read));
      ok('mappings GET', current, 200);
      const etag = current.headers['etag'];
      if (typeof etag !== 'string') throw new Error('mappings GET: no ETag');
      ok(
        'mappings PUT',
        await http()
          .put(`/v1/live-export/live-exports/${id}/mappings`)
          .set(bearer(keys.write))
          .set('If-Match', etag)
          .send({ tables: input.tables }),
        200,
      );
      ok('save', await http().post(`/v1/live-export/live-exports/${id}/save`).set(bearer(keys.write)), 200);
      return { id, body: created };
    },
    async trigger(liveExportId) {
      return ok<RunBody>(
        'trigger',
        await http()
          .post(`/v1/live-export/live-exports/${liveExportId}/trigger`)
          .set(bearer(keys.operate))
          .send({}),
        202,
      );
    },
    async run(runId) {
      return ok<RunBody>(
        'run GET',
        await http().get(`/v1/live-export/runs/${runId}`).set(bearer(keys.read)),
        200,
      );
    },
    async runs(liveExportId) {
      return ok<{ data: RunBody[] }>(
        'runs GET',
        await http().get(`/v1/live-export/runs?live_export=${liveExportId}&limit=25`).set(bearer(keys.read)),
        200,
      ).data;
    },
    async finished(runId, timeoutMs = 60_000) {
      return waitUntil(
        `run ${runId} to finish`,
        async () => {
          const run = await world.run(runId);
          return FINISHED.includes(run.state) ? run : null;
        },
        timeoutMs,
        50,
      );
    },
    async schedule(liveExportId) {
      return ok(
        'schedule GET',
        await http().get(`/v1/live-export/live-exports/${liveExportId}/schedule`).set(bearer(keys.read)),
        200,
      );
    },
    async patchSchedule(liveExportId, body) {
      return ok(
        'schedule PATCH',
        await http()
          .patch(`/v1/live-export/live-exports/${liveExportId}/schedule`)
          .set(bearer(keys.write))
          .send(body),
        200,
      );
    },
  };
  return world;
}
