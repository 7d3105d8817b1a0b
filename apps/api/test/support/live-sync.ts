/**
 * A real sync between a scratch PostgreSQL schema (left) and a scratch MariaDB database (right), set up the
 * way a user does it: created and mapped over the API, started by a person (the operator CLI stands in for
 * the console), carried by the real worker process (`dist/apps/worker/src/main.js`) limited to this account.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { cli } from './cli';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './scratch-dbs';
import { bearer, TEST_MASTER_KEY, type TestApp } from './test-app';

const ROOT = join(__dirname, '..', '..', '..', '..');

export interface LiveSyncOptions {
  pgSetup: string;
  mySetup: string[];
  /** The mappings document's `tables` (spec 2.8). */
  tables: object[];
  /** `sync start` options: `--match` and `--prefer`. */
  match?: string;
  prefer?: 'left' | 'right';
  deleteApproval?: 'review_required' | 'auto_approve';
  /** Extra worker environment (for example `ENGINE_FULL_SCAN_SECONDS`). */
  workerEnv?: Record<string, string>;
}

export interface LiveSync {
  id: string;
  accountId: string;
  pg: ScratchPg;
  my: ScratchMysql;
  keys: { read: string; operate: string; write: string };
  db: DataSource;
  worker: ChildProcess | null;
  /** Starts (or restarts) the worker process. */
  startWorker(): void;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 150,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(
    `timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : String(last)}` : ''}`,
  );
}

export async function liveSync(t: TestApp, options: LiveSyncOptions): Promise<LiveSync> {
  const pg = await scratchPg(options.pgSetup);
  const my = await scratchMysql(options.mySetup);
  const accountId = (await t.account()).id;
  const keys = {
    read: await t.key(accountId, 'read'),
    operate: await t.key(accountId, 'operate'),
    write: await t.key(accountId, 'readwrite'),
  };
  const db = t.app.get(DataSource);
  const created = await t
    .http()
    .post('/v1/sync/syncs')
    .set(bearer(keys.write))
    .send({
      name: 'Live',
      left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
      right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
    });
  if (created.status !== 201)
    throw new Error(`sync create: ${created.status} ${JSON.stringify(created.body)}`);
  const id: string = created.body.id;
  const mappings = await t.http().get(`/v1/sync/syncs/${id}/mappings`).set(bearer(keys.read));
  const put = await t
    .http()
    .put(`/v1/sync/syncs/${id}/mappings`)
    .set(bearer(keys.write))
    .set('If-Match', mappings.headers['etag'])
    .send({ tables: options.tables });
  if (put.status !== 200) throw new Error(`mappings PUT: ${put.status} ${JSON.stringify(put.body)}`);
  const args = ['sync', 'start', '--id', id];
  if (options.match) args.push('--match', options.match);
  if (options.prefer) args.push('--prefer', options.prefer);
  const started = cli(...args);
  if (started.code !== 0) throw new Error(`sync start: ${started.stderr}`);
  if (options.deleteApproval)
    await db.query(`UPDATE syncs SET delete_approval = $2 WHERE id = $1`, [id, options.deleteApproval]);

  const live: LiveSync = {
    id,
    accountId,
    pg,
    my,
    keys,
    db,
    worker: null,
    startWorker() {
      live.worker = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
        env: {
          ...process.env,
          LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
          ENGINE_ACCOUNT_ID: accountId,
          ENGINE_LEASE_SECONDS: '3',
          LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
          ...options.workerEnv,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
    },
    async stopWorker() {
      const worker = live.worker;
      live.worker = null;
      if (!worker || worker.exitCode !== null) return;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGTERM');
      const timer = setTimeout(() => worker.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
    async close() {
      await live.stopWorker();
      await Promise.all([pg.drop().catch(() => undefined), my.drop().catch(() => undefined)]);
    },
  };
  live.startWorker();
  await waitUntil(
    'the initial sync to finish',
    async () =>
      (await db.query(`SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`, [id]))[0]?.phase ===
      'done',
    90_000,
  );
  return live;
}
