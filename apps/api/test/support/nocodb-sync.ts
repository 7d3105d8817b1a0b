/**
 * A sync with a NocoDB side set up as a user does it: created and mapped over the API (the NocoDB side with its
 * address, an API token and a base title), started by a person (the operator CLI stands in for the console),
 * carried by the real worker process against the real NocoDB (tools/test/nocodb). The API listens on a
 * loopback port that the worker gives NocoDB as PUBLIC_URL, so NocoDB's webhooks reach its notification
 * endpoint; without `publicUrl` the worker polls alone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { cli } from './cli';
import { waitUntil } from './live-sync';
import { bearer, TEST_MASTER_KEY, type TestApp } from './test-app';

const ROOT = join(__dirname, '..', '..', '..', '..');

export interface NocodbSync {
  id: string;
  key: string;
  stop(): Promise<void>;
}

/** Makes the test API listen on loopback (NocoDB calls it there) and returns its address. */
export async function listenOnLoopback(t: TestApp): Promise<string> {
  await t.app.listen(0, '127.0.0.1');
  const { port } = t.app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

export function startWorker(accountId: string, env: Record<string, string>): () => Promise<void> {
  const worker: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
    env: {
      ...process.env,
      LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
      ENGINE_ACCOUNT_ID: accountId,
      ENGINE_LEASE_SECONDS: '3',
      LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return async () => {
    if (worker.exitCode !== null) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  };
}

export async function startNocodbSync(
  t: TestApp,
  options: {
    left: object;
    nocodb: { url: string; token: string; base: string };
    tables: object[];
    publicUrl: string | null;
    pollSeconds: number;
  },
): Promise<NocodbSync> {
  const accountId = (await t.account()).id;
  const key = await t.key(accountId, 'readwrite');
  const created = await t
    .http()
    .post('/v1/sync/syncs')
    .set(bearer(key))
    .send({
      name: 'NocoDB',
      left: options.left,
      right: {
        connector: 'nocodb',
        auth: { baseUrl: options.nocodb.url, apiToken: options.nocodb.token },
        base: options.nocodb.base,
      },
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
  const stop = startWorker(accountId, {
    NOCODB_POLL_SECONDS: String(options.pollSeconds),
    ...(options.publicUrl ? { PUBLIC_URL: options.publicUrl } : {}),
  });
  const db = t.app.get(DataSource);
  try {
    await waitUntil(
      'the initial sync to finish',
      async () =>
        (await db.query(`SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`, [id]))[0]?.phase ===
        'done',
      180_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { id, key, stop };
}
