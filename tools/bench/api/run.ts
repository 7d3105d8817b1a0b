/**
 * API load benchmark (`npm run bench:api`, see README.md): requests per second, p99 latency and errors of the
 * main authenticated reads next to `GET /healthz`, in the same run, with autocannon (50 connections, 60 s per
 * case by default), and the API process's resident set size before and after each case.
 *
 * The built API (`dist/apps/api/src/main.js`) runs as its own process on a throw-away service store and queue
 * prefix, so the load generator does not share its event loop. One account and one read key (made with the
 * operator CLI, as an operator would) and a few syncs with sides, table pairs and operations are seeded. It
 * prints figures; it is not a test (exit 0 when the goal is missed, 1 only when something failed to run).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { newId } from '@lockstep/domain';
import { benchArgs } from '../common/args';
import { MASTER_KEY, ROOT, serviceStore, type ServiceStore } from '../engine/service';

/** Where the API and CLI measured are built: this checkout, or BENCH_API_ROOT (another build, to compare). */
const API_ROOT = process.env['BENCH_API_ROOT'] ?? ROOT;

const CASES = ['floor', 'healthz', 'syncs', 'sync', 'connectors', 'operations'] as const;
type Case = (typeof CASES)[number];

const USAGE = `usage: npm run bench:api -- [--duration S] [--connections N] [--only CASES] [--syncs N] [--log-level L] [--pg-url URL] [--keep]
  --duration S      seconds per case (default $BENCH_API_DURATION or 60; 5 is enough for a quick comparison)
  --connections N   concurrent clients (default 50)
  --only CASES      comma-separated, from ${CASES.join(', ')} (default all; healthz is the reference, floor
                    an empty NestJS route in a process of its own: the framework's best on this machine)
  --syncs N         syncs of the account (default 5), each with two sides and three table pairs
  --log-level L     the API's LOG_LEVEL (default info, as in production; its output goes to /dev/null)
  --pg-url URL      PostgreSQL admin URL (default $BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --keep            keep the throw-away database (its name is printed)`;

/** The goal of issue 31 at 50 clients: reads at half of /healthz's rate or more, p99 under 50 ms, no errors. */
const GOAL = { ratio: 0.5, p99Ms: 50 };

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
// autocannon ships no type declarations; this is the part of its API the benchmark uses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (options: Record<string, unknown>) => Promise<AutocannonResult>;

interface Seeded {
  accountId: string;
  syncIds: string[];
  key: string;
}

/** The account and key through the operator CLI, then syncs and operations the way the API and engine store them. */
async function seed(store: ServiceStore, env: NodeJS.ProcessEnv, syncs: number): Promise<Seeded> {
  const cli = (...args: string[]) =>
    JSON.parse(
      execFileSync(process.execPath, [join(API_ROOT, 'dist/apps/api/src/cli/main.js'), ...args], {
        env,
        encoding: 'utf8',
      }),
    ) as Record<string, string>;
  const accountId = cli(
    'account',
    'create',
    '--email',
    `bench-${randomBytes(4).toString('hex')}@example.com`,
    '--password',
    'a long bench password',
    '--plan',
    'business',
  ).id!;
  const key = cli('key', 'create', '--account', accountId, '--name', 'bench', '--scope', 'read').secret!;
  const syncIds: string[] = [];
  for (let i = 0; i < syncs; i++) {
    const syncId = newId('sync');
    syncIds.push(syncId);
    await store.sql(`INSERT INTO syncs (id, account_id, name, status) VALUES ($1, $2, $3, 'active')`, [
      syncId,
      accountId,
      `bench sync ${i + 1}`,
    ]);
    for (const side of ['left', 'right']) {
      await store.sql(
        `INSERT INTO sync_sides (sync_id, side, connector, auth_method, base_id, base_name, auth_status, connected_at)
         VALUES ($1, $2, $3, 'api_key', $4, $4, 'ok', now())`,
        [syncId, side, side === 'left' ? 'postgres' : 'mysql', side === 'left' ? 'public' : 'crm'],
      );
    }
    for (const [position, name] of ['people', 'companies', 'deals'].entries()) {
      await store.sql(
        `INSERT INTO sync_tables (id, sync_id, side, remote_id, name, position) VALUES ($1, $3, 'left', $4, $4, $5), ($2, $3, 'right', $4, $4, $5)`,
        [newId('table'), newId('table'), syncId, name, position],
      );
    }
    await store.sql(
      `INSERT INTO operations (id, sync_id, record_id, table_pair, side, table_id, table_name, record_remote_id, record_name, action, trigger, field_changes, occurred_at)
       SELECT 'op_' || substr(md5($1 || g::text), 1, 20), $1, 'rec_' || lpad(to_hex(g % 50), 20, '0'), 0, 'right', NULL, 'contacts', (g % 50)::text,
              'Record ' || (g % 50), 'updated', 'push', jsonb_build_array(jsonb_build_object('field', 'name', 'before', 'v' || g, 'after', 'v' || (g + 1))),
              now() - make_interval(secs => g)
       FROM generate_series(1, 200) g`,
      [syncId],
    );
  }
  return { accountId, syncIds, key };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The empty NestJS route (`floor.ts`), built beside this benchmark, on a port of its own. */
async function startFloor(): Promise<{ process: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'dist/tools/bench/api/floor.js')], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the floor server exited with code ${code}`)));
    child.stdout!.once('data', () => resolve());
  });
  return { process: child, base: `http://127.0.0.1:${port}` };
}

async function stop(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function startApi(env: NodeJS.ProcessEnv): ChildProcess {
  // BENCH_API_NODE_OPTIONS: flags for the API process only, for example `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const flags = (process.env['BENCH_API_NODE_OPTIONS'] ?? '').split(' ').filter(Boolean);
  return spawn(process.execPath, [...flags, join(API_ROOT, 'dist/apps/api/src/main.js')], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function waitHealthy(base: string, api: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (api.exitCode !== null) throw new Error(`the API exited with code ${api.exitCode}`);
    const ok = await fetch(`${base}/healthz`)
      .then((response) => response.ok)
      .catch(() => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the API did not become healthy within 60 s');
}

/** User plus system CPU time of a process in ms (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const rssMb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

interface Measured {
  name: Case;
  path: string;
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  total: number;
  /** The API process's CPU time per request: steadier than the rates on a shared machine. */
  cpuPerRequest: number;
  rssBefore: number;
  rssAfter: number;
}

function paths(seeded: Seeded): Record<Case, string> {
  const syncId = seeded.syncIds[0]!;
  return {
    floor: '/floor',
    healthz: '/healthz',
    syncs: '/v1/sync/syncs',
    sync: `/v1/sync/syncs/${syncId}`,
    connectors: '/v1/sync/connectors',
    operations: `/v1/sync/operations?sync=${syncId}`,
  };
}

async function measure(
  name: Case,
  base: string,
  path: string,
  key: string,
  pid: number,
  seconds: number,
  connections: number,
): Promise<Measured> {
  const headers = name === 'healthz' || name === 'floor' ? {} : { authorization: `Bearer ${key}` };
  // A short warm-up so the optimizing compiler and the connection pools are not part of the figure.
  await autocannon({ url: `${base}${path}`, connections, duration: Math.min(3, seconds), headers });
  const rssBefore = rssMb(pid);
  const cpuBefore = cpuMs(pid);
  const result = await autocannon({ url: `${base}${path}`, connections, duration: seconds, headers });
  const cpu = cpuMs(pid) - cpuBefore;
  const rssAfter = rssMb(pid);
  return {
    name,
    path,
    rate: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    total: result.requests.total,
    cpuPerRequest: result.requests.total > 0 ? cpu / result.requests.total : 0,
    rssBefore,
    rssAfter,
  };
}

function report(rows: Measured[], connections: number, seconds: number): void {
  const reference = rows.find((row) => row.name === 'healthz')?.rate ?? null;
  process.stdout.write(`\n${connections} connections, ${seconds} s per case\n\n`);
  process.stdout.write(
    '| case | path | requests/s | of /healthz | p50 ms | p99 ms | errors | requests | API CPU ms/request | RSS before -> after (MB) | goal |\n',
  );
  process.stdout.write('|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n');
  for (const row of rows) {
    const ratio = reference ? row.rate / reference : null;
    const met =
      row.name === 'healthz' || row.name === 'floor'
        ? ''
        : ratio !== null && ratio >= GOAL.ratio && row.p99 < GOAL.p99Ms && row.errors === 0
          ? 'met'
          : 'missed';
    const cells = [
      row.name,
      row.path,
      row.rate.toFixed(0),
      ratio === null ? '' : `${(ratio * 100).toFixed(1)}%`,
      String(row.p50),
      String(row.p99),
      String(row.errors),
      String(row.total),
      row.cpuPerRequest.toFixed(2),
    ];
    process.stdout.write(
      `| ${cells.join(' | ')} | ${row.rssBefore.toFixed(0)} -> ${row.rssAfter.toFixed(0)} | ${met} |\n`,
    );
  }
  if (rows.length > 0)
    process.stdout.write(
      `\nAPI RSS: ${rows[0]!.rssBefore.toFixed(0)} MB before the first measured case, ${rows[rows.length - 1]!.rssAfter.toFixed(0)} MB after the last\n`,
    );
}

async function main(): Promise<void> {
  const args = benchArgs(
    process.argv.slice(2),
    {
      duration: { type: 'string' },
      connections: { type: 'string' },
      only: { type: 'string' },
      syncs: { type: 'string' },
      'log-level': { type: 'string' },
      'pg-url': { type: 'string' },
      keep: { type: 'boolean' },
    },
    USAGE,
  );
  const seconds = args.count('duration', Number(process.env['BENCH_API_DURATION'] ?? 60));
  const connections = args.count('connections', 50);
  const cases = args.list('only', CASES, [...CASES]);
  const store = await serviceStore(
    args.text('pg-url', process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres'),
    'lockstep_bench_api',
  );
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    DATABASE_URL: store.url,
    QUEUE_PREFIX: `lockstep-bench-api-${randomBytes(4).toString('hex')}`,
    LOCKSTEP_MASTER_KEY: MASTER_KEY,
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: args.text('log-level', 'info'),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
  };
  let api: ChildProcess | null = null;
  let floor: ChildProcess | null = null;
  try {
    const seeded = await seed(store, env, args.count('syncs', 5));
    api = startApi(env);
    const base = `http://127.0.0.1:${port}`;
    await waitHealthy(base, api);
    const rows: Measured[] = [];
    for (const name of cases) {
      let target = { base, pid: api.pid! };
      if (name === 'floor') {
        const started = await startFloor();
        floor = started.process;
        target = { base: started.base, pid: floor.pid! };
      }
      const row = await measure(
        name,
        target.base,
        paths(seeded)[name],
        seeded.key,
        target.pid,
        seconds,
        connections,
      );
      if (name === 'floor') await stop(floor);
      process.stdout.write(
        `${name}: ${row.rate.toFixed(0)} requests/s, p99 ${row.p99} ms, ${row.errors} errors, ${row.cpuPerRequest.toFixed(2)} ms API CPU per request\n`,
      );
      rows.push(row);
    }
    report(rows, connections, seconds);
  } finally {
    await stop(floor);
    await stop(api);
    if (args.flag('keep')) process.stdout.write(`kept database ${store.name}\n`);
    await store.teardown(args.flag('keep'));
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench:api failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
