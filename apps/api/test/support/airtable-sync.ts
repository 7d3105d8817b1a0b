/**
 * A PostgreSQL <-> Airtable sync set up as a user does it: created and mapped over the API (the Airtable side
 * with a token and a base name), started by a person (the operator CLI stands in for the console), carried by
 * the real worker process, which reaches the Airtable simulator through `AIRTABLE_API_URL`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
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
}

export async function startAirtableSync(
  t: TestApp,
  options: { pg: ScratchPg; token: string; base: string; apiUrl: string; tables: object[] },
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
  const put = await t
    .http()
    .put(`/v1/sync/syncs/${id}/mappings`)
    .set(bearer(key))
    .send({ tables: options.tables });
  if (put.status !== 200) throw new Error(`mappings PUT: ${put.status} ${JSON.stringify(put.body)}`);
  const started = cli('sync', 'start', '--id', id);
  if (started.code !== 0) throw new Error(`sync start: ${started.stderr}`);
  const worker: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
    env: {
      ...process.env,
      LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
      ENGINE_ACCOUNT_ID: accountId,
      ENGINE_LEASE_SECONDS: '3',
      AIRTABLE_API_URL: options.apiUrl,
      LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
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
  return { id, key, stop };
}
