import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { createTestApp, TEST_MASTER_KEY, type TestApp } from './support/test-app';
import { MYSQL_URL, scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';

const root = join(__dirname, '..', '..', '..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * Credentials never leave the service: a unique secret is planted in both sides' credentials, the real API
 * process runs with debug logging, and every response body and header and every log line is scanned.
 */
describe('credentials are never returned or logged', () => {
  const secret = `Planted${randomBytes(8).toString('hex')}`;
  const user = `ls_e2e_${randomBytes(3).toString('hex')}`;
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let admin: mysql.Connection;
  let api: ChildProcess;
  let logs = '';
  let base: string;
  let key: string;
  const seen: string[] = [];

  async function call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    seen.push(`${res.status} ${JSON.stringify([...res.headers.entries()])} ${text}`);
    return { status: res.status, body: text ? JSON.parse(text) : {} };
  }

  beforeAll(async () => {
    t = await createTestApp();
    pg = await scratchPg('CREATE TABLE t (id serial PRIMARY KEY)');
    my = await scratchMysql(['CREATE TABLE t (id int PRIMARY KEY)']);
    admin = await mysql.createConnection({ uri: MYSQL_URL });
    await admin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${secret}'`);
    await admin.query(`CREATE USER '${user}'@'localhost' IDENTIFIED BY '${secret}'`);
    await admin.query(`GRANT ALL ON \`${my.database}\`.* TO '${user}'@'%'`);
    await admin.query(`GRANT ALL ON \`${my.database}\`.* TO '${user}'@'localhost'`);
    const account = await t.account();
    key = await t.key(account.id, 'readwrite');

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    api = spawn(process.execPath, [join(root, 'dist/apps/api/src/main.js')], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        LOG_LEVEL: 'debug',
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
        PUBLIC_URL: base,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    api.stdout!.on('data', (d) => (logs += d));
    api.stderr!.on('data', (d) => (logs += d));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (
        await fetch(`${base}/healthz`)
          .then((r) => r.ok)
          .catch(() => false)
      )
        break;
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  afterAll(async () => {
    api?.kill('SIGTERM');
    await admin?.query(`DROP USER IF EXISTS '${user}'@'%'`);
    await admin?.query(`DROP USER IF EXISTS '${user}'@'localhost'`);
    await admin?.end();
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  it('appears in no response, no log line and not in clear in the store', async () => {
    const pgAuth = { connectionString: `postgres://postgres:${secret}@127.0.0.1:5432/postgres` };
    const myAuth = { connectionString: `mysql://${user}:${secret}@127.0.0.1:3306/${my.database}` };
    const created = await call('POST', '/v1/sync/syncs', {
      name: 'Secrets',
      left: { connector: 'postgres', auth: pgAuth, base: pg.schema },
      right: { connector: 'mysql', auth: myAuth, base: my.database },
    });
    expect(created.status).toBe(201);
    const id = created.body['id'] as string;
    expect((await call('GET', `/v1/sync/syncs/${id}`)).status).toBe(200);
    expect((await call('GET', '/v1/sync/syncs')).status).toBe(200);
    expect((await call('GET', `/v1/sync/syncs/${id}/status`)).status).toBe(200);
    expect((await call('GET', `/v1/sync/syncs/${id}/sides/right/bases`)).status).toBe(200);
    expect((await call('GET', `/v1/sync/syncs/${id}/tables?side=right`)).status).toBe(200);
    expect((await call('PATCH', `/v1/sync/syncs/${id}`, { right: { auth: myAuth } })).status).toBe(200);
    // Failures whose driver messages could carry the connection string.
    const wrong = await call('PATCH', `/v1/sync/syncs/${id}`, {
      right: { auth: { connectionString: `mysql://${user}:${secret}x@127.0.0.1:3306/${my.database}` } },
    });
    expect(wrong.body).toMatchObject({ error: { code: 'invalid_auth' } });
    const malformed = await call('POST', '/v1/sync/syncs', {
      name: 'x',
      left: {
        connector: 'postgres',
        auth: { connectionString: `postgres://postgres:${secret}@127.0.0.1:notaport/postgres` },
        base: 'public',
      },
      right: { connector: 'mysql' },
    });
    expect(malformed.status).toBe(400);
    const unreachable = await call('POST', '/v1/sync/syncs', {
      name: 'x',
      left: {
        connector: 'mysql',
        auth: { connectionString: `mysql://${user}:${secret}@127.0.0.1:1/${my.database}` },
        base: my.database,
      },
      right: { connector: 'postgres' },
    });
    expect(unreachable.body).toMatchObject({ error: { code: 'connection_error' } });

    await new Promise((r) => setTimeout(r, 300));
    expect(logs).toContain('"url":"/v1/sync/syncs"');
    expect(logs).toContain('"statusCode":400');
    for (const text of [...seen, logs]) expect(text).not.toContain(secret);
    const stored = await t.app
      .get(DataSource)
      .query(
        `SELECT credentials::text AS text, encode(credentials, 'escape') AS raw FROM sync_sides WHERE sync_id = $1`,
        [id],
      );
    expect(stored).toHaveLength(2);
    for (const row of stored) expect(`${row.text}${row.raw}`).not.toContain(secret);
  });
});
