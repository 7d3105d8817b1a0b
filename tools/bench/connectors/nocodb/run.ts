/**
 * NocoDB connector benchmark against the real NocoDB (tools/test/nocodb), in one run:
 * 1. Initial sync speed: N rows read from PostgreSQL in pages of 1000 and written through the connector's
 *    `createRecords` in calls of 500 (the engine's page and write batch), into a table with the "Lockstep ID"
 *    field (each batch of 100 is one lookup of its service ids and one create), next to NocoDB's own bulk
 *    insert of the same rows through its API (100 a request, the most an API token may send, one after
 *    another, no budget) into a twin table. Prints both rates and their ratio (goal >= 50%).
 * 2. Change latency with webhooks: a record edited in NocoDB, its webhook calling a loopback notification
 *    endpoint that wakes the connection's watcher, the change read by `readChanges` and written to PostgreSQL;
 *    the time from the edit's answer to the PostgreSQL commit, p50 and p95 (goal p95 < 2 s).
 * The machine is shared: figures are noisy. Not a test.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { nocodbConnector } from '@lockstep/connector-nocodb';
import { LocalCoordination } from '@lockstep/connectors-http';
import { startReceiver } from '@lockstep/connector-nocodb/testing-receiver';

/** The repository (run.sh runs the benchmark from there). */
const ROOT = process.cwd();
const PG_ADMIN = process.env['TEST_DATABASE_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Server {
  url: string;
  token: string;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require(join(ROOT, 'tools', 'test', 'nocodb', 'harness.js')) as {
  ensureNocodb(): Promise<Server>;
  stopNocodb(): Promise<boolean>;
};

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

async function api<T>(server: Server, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'xc-token': server.token },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const COLUMNS = [
  { title: 'Title', uidt: 'SingleLineText' },
  { title: 'Amount', uidt: 'Decimal', meta: { precision: 2 } },
  { title: 'Day', uidt: 'Date', meta: { date_format: 'YYYY-MM-DD' } },
];

async function table(server: Server, baseId: string, title: string) {
  return api<{ id: string; columns: { id: string; title: string }[] }>(
    server,
    'POST',
    `/api/v2/meta/bases/${baseId}/tables`,
    {
      title,
      table_name: title,
      columns: COLUMNS,
    },
  );
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const rows = option('rows', 20_000);
  const rate = option('rate', 20);
  const edits = option('edits', 40);
  const server = await harness.ensureNocodb();
  const schema = `bench_nocodb_${randomBytes(4).toString('hex')}`;
  const pg = new Client({ connectionString: PG_ADMIN });
  await pg.connect();
  const base = await api<{ id: string }>(server, 'POST', '/api/v2/meta/bases', { title: schema });
  try {
    await pg.query(`CREATE SCHEMA ${schema}`);
    await pg.query(`CREATE TABLE ${schema}.src AS
      SELECT g AS id, 'row ' || g AS title, (g + 0.25)::numeric(12,2) AS amount, date '2026-11-26' AS day
      FROM generate_series(1, ${rows}) g`);
    await pg.query(`ALTER TABLE ${schema}.src ADD PRIMARY KEY (id)`);
    const pageOf = async (after: number) =>
      (
        await pg.query(
          `SELECT id, title, amount::text, to_char(day, 'YYYY-MM-DD') AS day FROM ${schema}.src
        WHERE id > $1 ORDER BY id LIMIT 1000`,
          [after],
        )
      ).rows as { id: number; title: string; amount: string; day: string }[];

    // NocoDB's own bulk insert, 100 rows a request, as fast as it answers.
    const twin = await table(server, base.id, 'bulk');
    let bulkStart = performance.now();
    for (let after = 0; ;) {
      const page = await pageOf(after);
      if (page.length === 0) break;
      for (let at = 0; at < page.length; at += 100) {
        const chunk = page
          .slice(at, at + 100)
          .map((row) => ({ Title: row.title, Amount: row.amount, Day: row.day }));
        await api(server, 'POST', `/api/v2/tables/${twin.id}/records`, chunk);
      }
      after = page[page.length - 1]!.id;
    }
    const bulkSeconds = (performance.now() - bulkStart) / 1000;
    bulkStart = 0;

    // The connector, as the engine's initial sync writes.
    const target = await table(server, base.id, 'synced');
    const shared = new LocalCoordination();
    const connection = await nocodbConnector.connect(
      { baseUrl: server.url, apiToken: server.token },
      base.id,
      {
        egress: { allowPrivate: true, allowLoopback: true },
        shared,
        settings: { NOCODB_REQUESTS_PER_SECOND: String(rate) },
      },
    );
    await connection.prepareTable(target.id, { changeCapture: false, serviceIdColumn: true });
    const field = (title: string) => target.columns.find((column) => column.title === title)!.id;
    let written = 0;
    const syncStart = performance.now();
    for (let after = 0; ;) {
      const page = await pageOf(after);
      if (page.length === 0) break;
      for (let at = 0; at < page.length; at += 500) {
        const batch = page.slice(at, at + 500).map((row) => ({
          serviceId: randomUUID(),
          values: { [field('Title')]: row.title, [field('Amount')]: row.amount, [field('Day')]: row.day },
        }));
        written += (await connection.createRecords(target.id, batch)).filter((result) => result.ok).length;
      }
      after = page[page.length - 1]!.id;
    }
    const syncSeconds = (performance.now() - syncStart) / 1000;
    const bulkRate = rows / bulkSeconds;
    const syncRate = written / syncSeconds;
    console.log(`rows ${rows}; connector budget ${rate} requests/s`);
    console.log(
      `NocoDB bulk insert (100/request, no budget): ${bulkSeconds.toFixed(1)} s = ${bulkRate.toFixed(0)} rows/s`,
    );
    console.log(
      `connector createRecords (500/call, 100/request + service id lookup): ${written} rows in ${syncSeconds.toFixed(1)} s = ` +
        `${syncRate.toFixed(0)} rows/s = ${((100 * syncRate) / bulkRate).toFixed(1)}% of the bulk insert`,
    );

    // Change latency through the webhook.
    const latencies = await changeLatency(server, base.id, pg, schema, edits);
    console.log(
      `change latency NocoDB -> PostgreSQL through the webhook, ${latencies.length} edits: ` +
        `p50 ${percentile(latencies, 50).toFixed(0)} ms, p95 ${percentile(latencies, 95).toFixed(0)} ms, ` +
        `max ${Math.max(...latencies).toFixed(0)} ms`,
    );
    await connection.close();
  } finally {
    await api(server, 'DELETE', `/api/v2/meta/bases/${base.id}`).catch(() => undefined);
    await pg.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pg.end();
    if (!process.env['NOCODB_TEST_STATE']) await harness.stopNocodb();
  }
}

/** Edits in NocoDB one after another; each is timed until the watcher's read wrote it to PostgreSQL. */
async function changeLatency(server: Server, baseId: string, pg: Client, schema: string, edits: number) {
  const shared = new LocalCoordination();
  const key = randomBytes(16).toString('hex');
  const receiver = await startReceiver(shared.signals, key);
  const watched = await table(server, baseId, 'watched');
  const connection = await nocodbConnector.connect({ baseUrl: server.url, apiToken: server.token }, baseId, {
    egress: { allowPrivate: true, allowLoopback: true },
    shared,
    settings: { PUBLIC_URL: receiver.url, NOCODB_HOOK_KEY: key, NOCODB_POLL_SECONDS: '600' },
  });
  await connection.prepareTable(watched.id, { changeCapture: true });
  await pg.query(`CREATE TABLE ${schema}.mirror (id int PRIMARY KEY, title text)`);
  const [row] = await api<{ Id: number }[]>(server, 'POST', `/api/v2/tables/${watched.id}/records`, [
    { Title: 'start' },
  ]);
  const title = watched.columns.find((column) => column.title === 'Title')!.id;
  let checkpoint = await connection.currentCheckpoint(watched.id);
  let busy = Promise.resolve();
  const stop = await connection.watch!([watched.id], () => {
    busy = busy.then(async () => {
      const batch = await connection.readChanges(watched.id, checkpoint, { limit: 100 });
      for (const change of batch.changes) {
        if (change.kind !== 'upsert') continue;
        await pg.query(
          `INSERT INTO ${schema}.mirror (id, title) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET title = $2`,
          [Number(change.remoteId), change.record!.values[title]],
        );
      }
      checkpoint = batch.checkpoint;
    });
  });
  const latencies: number[] = [];
  try {
    for (let edit = 0; edit < edits; edit += 1) {
      const value = `edit ${edit}`;
      await api(server, 'PATCH', `/api/v2/tables/${watched.id}/records`, [{ Id: row!.Id, Title: value }]);
      const started = performance.now();
      for (;;) {
        const found = await pg.query(`SELECT 1 FROM ${schema}.mirror WHERE id = $1 AND title = $2`, [
          row!.Id,
          value,
        ]);
        if (found.rowCount) break;
        if (performance.now() - started > 15_000) throw new Error(`edit ${edit} did not arrive in 15 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      latencies.push(performance.now() - started);
    }
  } finally {
    await stop();
    await receiver.close();
    await connection.close();
  }
  return latencies;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
