/**
 * A PostgreSQL <-> Airtable sync set up as a user does it: created and mapped over the API (the Airtable side
 * with a token and a base name), started by a person (the operator CLI stands in for the console), carried by
 * the real worker process, which reaches the Airtable simulator through `AIRTABLE_API_URL`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { CredentialCipher, sideOwner } from '@lockstep/persistence';
import { cli } from './cli';
import { waitUntil } from './live-sync';
import type { ScratchPg } from './scratch-dbs';
import { bearer, TEST_MASTER_KEY, type TestApp } from './test-app';

const ROOT = join(__dirname, '..', '..', '..', '..');

export interface AirtableSync {
  id: string;
  /** A read-write key of the sync's account. */
  key: string;
  stop(): Promise<void>;
  /** Stops the worker process and starts a new one (nothing kept in memory). */
  restart(): Promise<void>;
}

export async function startAirtableSync(
  t: TestApp,
  options: {
    pg: ScratchPg;
    token: string;
    base: string;
    apiUrl: string;
    tables: object[];
    /**
     * The Airtable side as a person signing in leaves it (`auth_method: oauth`, these tokens as its sealed
     * credentials) instead of the token it was created with: the console's sign-in, tested in the browser.
     */
    signedIn?: Record<string, string>;
    /** More worker settings (`AIRTABLE_OAUTH_URL`, `OAUTH_CLIENTS`). */
    workerEnv?: Record<string, string>;
  },
): Promise<AirtableSync> {
  const accountId = (await t.account()).id;
  const key = await t.key(accountId, 'readwrite');
  const created = await t
    .http()
    .post('/v1/sync/syncs')
    .set(bearer(key))
    .send({
      name: 'Airtable',
      left: { connector: 'postgres', auth: { connectionString: options.pg.url }, base: options.pg.schema },
      right: { connector: 'airtable', auth: { apiKey: options.token }, base: options.base },
    });
  if (created.status !== 201)
    throw new Error(`sync create: ${created.status} ${JSON.stringify(created.body)}`);
  const id: string = created.body.id;
  if (options.signedIn) {
    await t.app
      .get(DataSource)
      .query(
        `UPDATE sync_sides SET auth_method = 'oauth', credentials = $3 WHERE sync_id = $1 AND side = $2`,
        [id, 'right', t.app.get(CredentialCipher).encrypt(options.signedIn, sideOwner(id, 'right'))],
      );
  }
  const put = await t
    .http()
    .put(`/v1/sync/syncs/${id}/mappings`)
    .set(bearer(key))
    .send({ tables: options.tables });
  if (put.status !== 200) throw new Error(`mappings PUT: ${put.status} ${JSON.stringify(put.body)}`);
  const started = cli('sync', 'start', '--id', id);
  if (started.code !== 0) throw new Error(`sync start: ${started.stderr}`);
  const spawnWorker = (): ChildProcess =>
    spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
      env: {
        ...process.env,
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
        ENGINE_ACCOUNT_ID: accountId,
        ENGINE_LEASE_SECONDS: '3',
        AIRTABLE_API_URL: options.apiUrl,
        LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
        ...options.workerEnv,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  let worker = spawnWorker();
  const stop = async () => {
    if (worker.exitCode !== null) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  };
  const db = t.app.get(DataSource);
  try {
    await waitUntil(
      'the initial sync to finish',
      async () =>
        (await db.query(`SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`, [id]))[0]?.phase ===
        'done',
      90_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const restart = async () => {
    await stop();
    worker = spawnWorker();
  };
  return { id, key, stop, restart };
}
