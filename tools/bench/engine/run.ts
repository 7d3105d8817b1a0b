/**
 * Engine benchmark (`tools/bench/engine/run.sh`, see README.md): the real worker process syncing real
 * PostgreSQL and MariaDB databases.
 *
 * 1. initial sync of N rows (200,000) PostgreSQL -> MariaDB and MariaDB -> PostgreSQL: rows per second from
 *    the sync being started to `initial_sync_phase = 'done'`, next to the target connector's raw bulk write
 *    (`createRecords`, batches of 500) measured in the same run, and next to the write ceiling (`ceiling.ts`: the
 *    same writes with their text built beforehand); the worker's peak RSS.
 *    Targets: >= 40% of the raw write rate; peak RSS < 500 MB.
 * 2. change latency: single-row updates on one side of an active sync, each timed from its commit to its value
 *    being readable on the other side. Targets: p95 < 1 s (PostgreSQL source), < 2 s (MariaDB source).
 * 3. idle cost: the worker's CPU over a window with many active, idle syncs. Target: < 10% of one core.
 *
 * It prints figures; it is not a test (exit 0 when targets are missed, 1 only when something failed to run).
 */
import { benchArgs } from '../common/args';
import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { type AppKind, type AppSide, canonicalRow, FIELDS, mariadbApp, postgresApp } from './apps';
import { airtableRoundTrip } from './airtable';
import { initialSync } from './initial';
import {
  createAccount,
  createDraftSync,
  procStats,
  serviceStore,
  type ServiceStore,
  startSyncs,
  type SyncSide,
} from './service';
import {
  type Bench,
  bootWorker,
  type Env,
  errors,
  figures,
  int,
  mb,
  message,
  ms,
  openIssues,
  type Options,
  pct,
  row,
  say,
  secs,
  serverName,
  sleep,
  stopWorker,
  summary,
  waitUntil,
} from './shared';

const LATENCY_P95_TARGET: Record<AppKind, number> = { postgres: 1000, mysql: 2000 };
const IDLE_CPU_TARGET = 0.1;

const USAGE = `usage: run.sh [--rows N] [--only initial,latency,idle] [--from postgres,mysql] [--no-ceiling] [--updates N] [--latency-rows N] [--syncs N]
              [--idle-rows N] [--idle-seconds N] [--timeout S] [--worker-log LEVEL] [--pg-url URL] [--mysql-url URL]
  --rows N           initial sync: rows in the source table (default 200000)
  --only LIST        benchmarks to run (default initial,latency,idle; airtable on request)
  --airtable-rows N  airtable: PostgreSQL rows synced into the Airtable simulator and back (default 5000)
  --from LIST        initial sync: the directions, by source (default postgres,mysql)
  --no-ceiling       initial sync: do not measure the write ceiling
  --workers N        initial sync: also run it with N worker processes sharing its key ranges (default 1: not)
  --updates N        change latency: single-row updates per direction (default 200)
  --latency-rows N   change latency: rows in the synced table (default 1000)
  --syncs N          idle cost: active syncs (default 200)
  --idle-rows N      idle cost: rows in each sync's table (default 10)
  --idle-seconds N   idle cost: length of the CPU measurement window (default 60)
  --timeout S        longest wait for an initial sync (or all idle syncs) to finish (default 900)
  --worker-log LEVEL the worker's LOG_LEVEL (default silent; the log goes to a file under the temp dir)
  --pg-url URL       PostgreSQL admin URL (default $BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --mysql-url URL    MariaDB admin URL (default $BENCH_MYSQL_URL or mysql://root@127.0.0.1:3306)`;

function parseOptions(argv: string[]): Options {
  const args = benchArgs(
    argv,
    {
      rows: { type: 'string' },
      'airtable-rows': { type: 'string' },
      only: { type: 'string' },
      from: { type: 'string' },
      'no-ceiling': { type: 'boolean' },
      workers: { type: 'string' },
      updates: { type: 'string' },
      'latency-rows': { type: 'string' },
      syncs: { type: 'string' },
      'idle-rows': { type: 'string' },
      'idle-seconds': { type: 'string' },
      timeout: { type: 'string' },
      'worker-log': { type: 'string' },
      'pg-url': { type: 'string' },
      'mysql-url': { type: 'string' },
    },
    USAGE,
  );
  const options: Options = {
    rows: args.count('rows', 200_000),
    airtableRows: args.count('airtable-rows', 5_000),
    only: args.list<Bench>(
      'only',
      ['initial', 'latency', 'idle', 'airtable'],
      ['initial', 'latency', 'idle'],
    ),
    updates: args.count('updates', 200),
    latencyRows: args.count('latency-rows', 1_000),
    syncs: args.count('syncs', 200),
    idleRows: args.count('idle-rows', 10),
    idleSeconds: args.count('idle-seconds', 60),
    timeoutSeconds: args.count('timeout', 900),
    workerLog: args.text('worker-log', 'silent'),
    pgUrl: args.text('pg-url', process.env['BENCH_PG_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres'),
    from: args.list<AppKind>('from', ['postgres', 'mysql'], ['postgres', 'mysql']),
    noCeiling: args.flag('no-ceiling'),
    workers: args.count('workers', 1),
    mysqlUrl: args.text('mysql-url', process.env['BENCH_MYSQL_URL'] || 'mysql://root@127.0.0.1:3306'),
  };
  if (options.latencyRows < options.updates * 2) options.latencyRows = options.updates * 2;
  return options;
}

// ---------------------------------------------------------------------------------------------------------
// 2. Change latency

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

async function changeLatency(env: Env, options: Options): Promise<void> {
  say();
  say(`== change latency: ${options.updates} single-row updates per direction, PostgreSQL <-> MariaDB ==`);
  const table = 'latency';
  await env.pg.createTable(table);
  await env.my.createTable(table);
  await env.pg.generate(table, options.latencyRows);
  const accountId = await createAccount(env.store);
  const left: SyncSide = { app: env.pg, connection: await env.pg.connect() };
  const right: SyncSide = { app: env.my, connection: await env.my.connect() };
  let syncId: string;
  try {
    syncId = await createDraftSync(
      env.store,
      accountId,
      left,
      right,
      [{ left: table, right: table, fields: FIELDS.map((f) => [f, f] as [string, string]) }],
      'latency',
    );
  } finally {
    await left.connection.close();
    await right.connection.close();
  }
  const worker = await bootWorker(env, accountId, options.workerLog);
  await startSyncs(env.store, worker, [syncId]);
  const initialStarted = performance.now();
  await waitUntil(
    'the initial sync of the latency table',
    options.timeoutSeconds * 1000,
    100,
    async () => {
      const [sync] = await env.store.sql<{ initial_sync_phase: string }>(
        `SELECT initial_sync_phase FROM syncs WHERE id = $1`,
        [syncId],
      );
      return sync!.initial_sync_phase === 'done';
    },
    worker,
  );
  say(
    `  sync active, initial sync of ${int(options.latencyRows)} rows done in ${secs((performance.now() - initialStarted) / 1000)}; waiting 3 s for it to go idle`,
  );
  await sleep(3000);

  for (const sourceKind of ['postgres', 'mysql'] as AppKind[]) {
    const source = sourceKind === 'postgres' ? env.pg : env.my;
    const target = sourceKind === 'postgres' ? env.my : env.pg;
    const updateSql =
      source.kind === 'postgres'
        ? `UPDATE "${source.base}"."${table}" SET note = $1 WHERE id = $2`
        : `UPDATE \`${table}\` SET note = ? WHERE id = ?`;
    const readSql =
      target.kind === 'postgres'
        ? `SELECT note FROM "${target.base}"."${table}" WHERE id = $1`
        : `SELECT note FROM \`${table}\` WHERE id = ?`;
    const latencies: number[] = [];
    let lost = 0;
    const firstId = sourceKind === 'postgres' ? 1 : options.updates + 1;
    for (let k = 0; k < options.updates; k += 1) {
      const id = firstId + k;
      const value = `latency ${sourceKind} ${k} ${Date.now()}`;
      await source.sql(updateSql, [value, id]);
      const committed = performance.now();
      let arrived: number | null = null;
      while (performance.now() - committed < 15_000) {
        const rows = await target.sql<{ note: string | null }>(readSql, [id]);
        if (rows[0]?.note === value) {
          arrived = performance.now();
          break;
        }
        await sleep(5);
      }
      if (arrived === null) lost += 1;
      else latencies.push(arrived - committed);
      if (worker.exited())
        throw new Error(`the worker exited during the latency benchmark (log: ${worker.logFile})`);
      await sleep(100 + Math.random() * 100);
    }
    latencies.sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    const p95 = percentile(latencies, 95);
    const max = latencies[latencies.length - 1] ?? NaN;
    const targetMs = LATENCY_P95_TARGET[sourceKind];
    say(
      `  ${serverName(source.kind).padEnd(10)} -> ${serverName(target.kind).padEnd(10)} p50 ${ms(p50).padStart(7)}  p95 ${ms(p95).padStart(7)}  max ${ms(max).padStart(7)}  min ${ms(latencies[0] ?? NaN).padStart(6)}` +
        `  (${latencies.length} arrived, ${lost} not within 15 s; target p95 < ${ms(targetMs)})`,
    );
    if (lost > 0) errors.push(`change latency ${sourceKind}: ${lost} updates did not arrive within 15 s`);
    const bench = `latency ${source.kind === 'postgres' ? 'PG -> MariaDB' : 'MariaDB -> PG'}`;
    row(bench, 'p50', ms(p50));
    row(bench, 'p95', ms(p95), `< ${ms(targetMs)}`, lost === 0 && p95 < targetMs);
    figures[`latency_${source.kind}_source`] = {
      updates: options.updates,
      arrived: latencies.length,
      lost,
      p50Ms: p50,
      p95Ms: p95,
      maxMs: max,
      minMs: latencies[0] ?? null,
    };
  }
  const issues = await openIssues(env.store, accountId);
  if (issues.length) say(`  open issues: ${JSON.stringify(issues)}`);
  await stopWorker(env, worker);
}

// ---------------------------------------------------------------------------------------------------------
// 3. Idle cost

async function idleCost(env: Env, options: Options): Promise<void> {
  say();
  say(
    `== idle cost: ${options.syncs} active syncs (each its own table pair of ${options.idleRows} rows, all on the same two databases), no changes ==`,
  );
  const accountId = await createAccount(env.store);
  const left: SyncSide = { app: env.pg, connection: await env.pg.connect() };
  const right: SyncSide = { app: env.my, connection: await env.my.connect() };
  const syncIds: string[] = [];
  const setupStarted = performance.now();
  try {
    for (let n = 1; n <= options.syncs; n += 1) {
      const table = `idle_${String(n).padStart(4, '0')}`;
      await env.pg.createTable(table);
      await env.my.createTable(table);
      const values = Array.from({ length: options.idleRows }, (_, i) => canonicalRow(i + 1));
      if (values.length > 0) {
        await env.pg.sql(
          `INSERT INTO "${env.pg.base}"."${table}" (id, name, qty, note, updated_at) SELECT * FROM unnest($1::int[], $2::text[], $3::int[], $4::text[], $5::timestamptz[])`,
          [
            values.map((v) => v['id']),
            values.map((v) => v['name']),
            values.map((v) => v['qty']),
            values.map((v) => v['note']),
            values.map((v) => v['updated_at']),
          ],
        );
      }
      syncIds.push(
        await createDraftSync(
          env.store,
          accountId,
          left,
          right,
          [{ left: table, right: table, fields: FIELDS.map((f) => [f, f] as [string, string]) }],
          `idle ${n}`,
        ),
      );
    }
  } finally {
    await left.connection.close();
    await right.connection.close();
  }
  say(`  ${options.syncs} syncs written (drafts) in ${secs((performance.now() - setupStarted) / 1000)}`);
  const worker = await bootWorker(env, accountId, options.workerLog);
  const started = performance.now();
  await startSyncs(env.store, worker, syncIds);
  let lastReport = started;
  let maxPg = 0;
  let maxMy = 0;
  const counts = async () => {
    const [pgConnections, myConnections] = await Promise.all([
      env.pg.openConnections(),
      env.my.openConnections(),
    ]);
    maxPg = Math.max(maxPg, pgConnections);
    maxMy = Math.max(maxMy, myConnections);
    return { pgConnections, myConnections };
  };
  let issuesSeen: { code: string; message: string; n: number }[] = [];
  try {
    await waitUntil(
      `all ${options.syncs} initial syncs to finish`,
      options.timeoutSeconds * 1000,
      500,
      async () => {
        const [row0] = await env.store.sql<{ done: number }>(
          `SELECT count(*) FILTER (WHERE initial_sync_phase = 'done')::int AS done FROM syncs WHERE account_id = $1`,
          [accountId],
        );
        const { pgConnections, myConnections } = await counts();
        if (performance.now() - lastReport >= 10_000) {
          lastReport = performance.now();
          const issues = await openIssues(env.store, accountId);
          if (issues.length) issuesSeen = issues;
          say(
            `  ... ${((performance.now() - started) / 1000).toFixed(0)} s: ${row0!.done}/${options.syncs} initial syncs done; open connections now: PostgreSQL app db ${pgConnections}, MariaDB app db ${myConnections}` +
              `${issues.length ? `; open issues: ${issues.map((i) => `${i.code} x${i.n}`).join(', ')}` : ''}`,
          );
        }
        return row0!.done === options.syncs;
      },
      worker,
    );
  } catch (error) {
    const issues = await openIssues(env.store, accountId).catch(() => []);
    errors.push(`idle cost: ${message(error)}`);
    say(`  FAILED: ${message(error)}`);
    say(`  open issues: ${JSON.stringify(issues)}`);
    figures['idle'] = {
      syncs: options.syncs,
      failed: message(error),
      openIssues: issues,
      maxPgConnections: maxPg,
      maxMyConnections: maxMy,
    };
    row('idle', `all ${options.syncs} initial syncs done`, 'NO (timed out)', '', false);
    await stopWorker(env, worker);
    return;
  }
  const allDone = (performance.now() - started) / 1000;
  const issuesAtDone = await openIssues(env.store, accountId);
  say(
    `  all ${options.syncs} initial syncs done ${secs(allDone)} after the start; most connections seen meanwhile: PostgreSQL app db ${maxPg}, MariaDB app db ${maxMy}`,
  );
  if (issuesSeen.length || issuesAtDone.length)
    say(
      `  issues seen while starting: ${JSON.stringify(issuesSeen)}; still open: ${JSON.stringify(issuesAtDone)}`,
    );
  const settle = 15;
  say(`  settling ${settle} s, then measuring the worker's CPU for ${options.idleSeconds} s`);
  await sleep(settle * 1000);
  const storeTx = async () =>
    Number(
      (
        await env.store.sql<{ n: string }>(
          `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
        )
      )[0]!.n,
    );
  const before = procStats(worker.pid);
  const txBefore = await storeTx();
  const windowStarted = performance.now();
  let idleMaxPg = 0;
  let idleMaxMy = 0;
  const samples: string[] = [];
  while (performance.now() - windowStarted < options.idleSeconds * 1000) {
    await sleep(Math.min(5000, options.idleSeconds * 1000 - (performance.now() - windowStarted)));
    const { pgConnections, myConnections } = await counts();
    idleMaxPg = Math.max(idleMaxPg, pgConnections);
    idleMaxMy = Math.max(idleMaxMy, myConnections);
    samples.push(`${pgConnections}/${myConnections}`);
    if (worker.exited()) throw new Error(`the worker exited during the idle window (log: ${worker.logFile})`);
  }
  const after = procStats(worker.pid);
  const window = (performance.now() - windowStarted) / 1000;
  const txAfter = await storeTx();
  const cpu = (after?.cpuSeconds ?? 0) - (before?.cpuSeconds ?? 0);
  const share = cpu / window;
  const issuesAfter = await openIssues(env.store, accountId);
  // The bench's own connection to each app database is counted by the server too.
  say(
    `  worker CPU over ${secs(window)}: ${secs(cpu)} = ${pct(share)} of one core (target < ${pct(IDLE_CPU_TARGET)}); worker RSS ${mb(after?.rssBytes ?? 0)}`,
  );
  say(
    `  service store transactions during the window: ${int(txAfter - txBefore)} (${((txAfter - txBefore) / window).toFixed(1)}/s, the bench's own few included)`,
  );
  say(
    `  open connections to the app databases during the window (PostgreSQL/MariaDB, every 5 s, the bench's own 1 each included): ${samples.join(' ')}`,
  );
  if (issuesAfter.length) say(`  open issues: ${JSON.stringify(issuesAfter)}`);
  row('idle', `${options.syncs} syncs: all initial syncs done`, secs(allDone));
  row(
    'idle',
    'worker CPU, share of one core',
    pct(share),
    `< ${pct(IDLE_CPU_TARGET)}`,
    share < IDLE_CPU_TARGET,
  );
  row('idle', 'app db connections while idle (PG/MariaDB)', `${idleMaxPg}/${idleMaxMy}`);
  figures['idle'] = {
    syncs: options.syncs,
    allDoneSeconds: allDone,
    windowSeconds: window,
    cpuSeconds: cpu,
    cpuShare: share,
    storeTransactionsPerSecond: (txAfter - txBefore) / window,
    maxPgConnectionsStarting: maxPg,
    maxMyConnectionsStarting: maxMy,
    maxPgConnectionsIdle: idleMaxPg,
    maxMyConnectionsIdle: idleMaxMy,
    issuesWhileStarting: issuesSeen,
    openIssues: issuesAfter,
  };
  await stopWorker(env, worker);
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  say(
    `Lockstep engine benchmark: the real worker (dist/apps/worker/src/main.js) between PostgreSQL and MariaDB`,
  );
  const env: Env = {
    store: null as unknown as ServiceStore,
    pg: null as unknown as AppSide,
    my: null as unknown as AppSide,
    workers: [],
  };
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const worker of env.workers) await worker.stop().catch(() => undefined);
      await env.pg?.teardown().catch(() => undefined);
      await env.my?.teardown().catch(() => undefined);
      await env.store?.teardown().catch(() => undefined);
    })());
  process.once('SIGINT', () => {
    say('\ninterrupted: cleaning up');
    void cleanup().then(() => process.exit(130));
  });
  try {
    env.store = await serviceStore(options.pgUrl);
    env.pg = await postgresApp(options.pgUrl);
    env.my = await mariadbApp(options.mysqlUrl);
    say(
      `  service store: throw-away database ${env.store.name} (migrated); app databases on ${env.pg.server} and ${env.my.server}`,
    );
    const run = async (name: string, work: () => Promise<void>) => {
      try {
        await work();
      } catch (error) {
        errors.push(`${name}: ${message(error)}`);
        say(`  FAILED: ${message(error)}`);
        for (const worker of [...env.workers]) await stopWorker(env, worker).catch(() => undefined);
      }
    };
    if (options.only.includes('initial')) {
      if (options.from.includes('postgres'))
        await run('initial sync PostgreSQL -> MariaDB', () => initialSync(env, options, 'postgres'));
      if (options.from.includes('mysql'))
        await run('initial sync MariaDB -> PostgreSQL', () => initialSync(env, options, 'mysql'));
    }
    if (options.only.includes('latency')) await run('change latency', () => changeLatency(env, options));
    if (options.only.includes('idle')) await run('idle cost', () => idleCost(env, options));
    if (options.only.includes('airtable'))
      await run('initial sync PostgreSQL <-> Airtable', () =>
        airtableRoundTrip({
          store: env.store,
          pg: env.pg,
          rows: options.airtableRows,
          timeoutSeconds: options.timeoutSeconds,
          workerLog: options.workerLog,
          say,
          row,
          errors,
          figures,
          workers: env.workers,
        }),
      );
  } finally {
    await cleanup();
  }

  say();
  say('== summary ==');
  const widths = {
    benchmark: Math.max(9, ...summary.map((r) => r.benchmark.length)),
    figure: Math.max(6, ...summary.map((r) => r.figure.length)),
    value: Math.max(5, ...summary.map((r) => r.value.length)),
    target: Math.max(6, ...summary.map((r) => r.target.length)),
  };
  say(
    `  ${'benchmark'.padEnd(widths.benchmark)}  ${'figure'.padEnd(widths.figure)}  ${'value'.padStart(widths.value)}  ${'target'.padEnd(widths.target)}  verdict`,
  );
  for (const r of summary)
    say(
      `  ${r.benchmark.padEnd(widths.benchmark)}  ${r.figure.padEnd(widths.figure)}  ${r.value.padStart(widths.value)}  ${r.target.padEnd(widths.target)}  ${r.verdict}`,
    );
  for (const error of errors) say(`  ERROR: ${error}`);
  say(JSON.stringify({ options, figures, errors }));
  return errors.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `engine benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
