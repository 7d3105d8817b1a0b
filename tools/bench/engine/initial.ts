/**
 * The engine benchmark's initial sync (run.ts): N rows on one side, the other table empty, a two-way pair; rows
 * per second from the start to `initial_sync_phase = 'done'` next to the target connector's raw write measured
 * around it, the write ceiling (ceiling.ts), the worker's peak RSS and CPU, and where the pass's wall time went
 * (stages.ts).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type AppKind, type AppSide, FIELDS, rawWrite, type RawWrite } from './apps';
import { writeCeiling, type WriteCeiling } from './ceiling';
import {
  createAccount,
  createDraftSync,
  procStats,
  RssSampler,
  ServerCpuSampler,
  startSyncs,
  type SyncSide,
} from './service';
import {
  bootWorker,
  type Env,
  errors,
  figures,
  int,
  mb,
  message,
  openIssues,
  type Options,
  pct,
  row,
  say,
  secs,
  serverName,
  stopWorker,
  waitUntil,
} from './shared';
import { readStageTimes, stageLines } from './stages';

const INITIAL_RATIO_TARGET = 0.4;
const RSS_BOUND = 500 * 1024 * 1024;
const WRITE_BATCH = 500;

// ---------------------------------------------------------------------------------------------------------
// 1. Initial sync

interface SeveralWorkers {
  workers: number;
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  /** How many of the workers took at least one key range of the pair. */
  takers: number;
  /** The workers' CPU time together. */
  cpuSeconds: number;
  targetMatchesSource: boolean;
}

/**
 * The same initial sync again, on fresh tables (`<table>_w`) and an account of its own (so the first run's
 * sync, still active, is nobody's business here), with `options.workers` worker processes that share the
 * pair's key ranges; timed the same way, from the start to `initial_sync_phase = 'done'`.
 */
async function severalWorkers(
  env: Env,
  options: Options,
  run: { source: AppSide; target: AppSide; table: string; label: string },
): Promise<SeveralWorkers> {
  const { source, target, label } = run;
  const table = `${run.table}_w`;
  await source.createTable(table);
  await target.createTable(table);
  await source.generate(table, options.rows);
  const accountId = await createAccount(env.store);
  const syncId = await draftSync(env, accountId, table, `${label}, ${options.workers} workers`);
  const workers = [];
  for (let index = 0; index < options.workers; index += 1)
    workers.push(await bootWorker(env, accountId, options.workerLog));
  const cpuBefore = workers.map((worker) => procStats(worker.pid)?.cpuSeconds ?? 0);
  const takers = new Set<string>();
  const started = performance.now();
  await startSyncs(env.store, workers[0]!, [syncId]);
  await waitUntil(
    `${label} with ${options.workers} workers to finish`,
    options.timeoutSeconds * 1000,
    100,
    async () => {
      const owners = await env.store.sql<{ owner: string }>(
        `SELECT DISTINCT owner FROM initial_sync_ranges WHERE sync_id = $1 AND owner IS NOT NULL`,
        [syncId],
      );
      for (const { owner } of owners) takers.add(owner);
      const [sync] = await env.store.sql<{ phase: string }>(
        `SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`,
        [syncId],
      );
      return sync!.phase === 'done';
    },
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = workers.reduce(
    (sum, worker, index) => sum + (procStats(worker.pid)?.cpuSeconds ?? 0) - cpuBefore[index]!,
    0,
  );
  for (const worker of workers) await stopWorker(env, worker);
  const copied = await target.summary(table);
  const expected = await source.summary(table);
  const same =
    copied.rows === expected.rows && copied.qtySum === expected.qtySum && copied.namesOk === expected.rows;
  if (!same)
    errors.push(
      `${label}, ${options.workers} workers: the target has ${JSON.stringify(copied)}, the source ${JSON.stringify(expected)}`,
    );
  const rowsPerSecond = options.rows / seconds;
  say(
    `  engine, ${options.workers} worker processes: started -> 'done'                              ${secs(seconds).padStart(9)}  ${int(rowsPerSecond).padStart(8)} rows/s (workers' CPU ${secs(cpuSeconds)})`,
  );
  await dropTables(source, target, table);
  return {
    workers: options.workers,
    rows: options.rows,
    seconds,
    rowsPerSecond,
    takers: takers.size,
    cpuSeconds,
    targetMatchesSource: same,
  };
}

/** A draft sync of `table` on both sides (every column mapped to itself), as the API leaves one. */
async function draftSync(env: Env, accountId: string, table: string, label: string): Promise<string> {
  const left: SyncSide = { app: env.pg, connection: await env.pg.connect() };
  const right: SyncSide = { app: env.my, connection: await env.my.connect() };
  try {
    return await createDraftSync(
      env.store,
      accountId,
      left,
      right,
      [{ left: table, right: table, fields: FIELDS.map((f) => [f, f] as [string, string]) }],
      label,
    );
  } finally {
    await left.connection.close();
    await right.connection.close();
  }
}

async function dropTables(source: AppSide, target: AppSide, table: string): Promise<void> {
  for (const side of [source, target])
    await side.sql(
      side.kind === 'postgres' ? `DROP TABLE "${side.base}"."${table}" CASCADE` : `DROP TABLE \`${table}\``,
    );
}

/** The write ceiling (ceiling.ts) with one store connection, then two; prints them. */
async function ceilingLines(
  env: Env,
  target: AppSide,
  rows: number,
  rawRate: number,
  rate: number,
): Promise<WriteCeiling[]> {
  const perRow = (cpuSeconds: number) => `${((cpuSeconds * 1e6) / rows).toFixed(0)} us/row`;
  const ceilings: WriteCeiling[] = [
    await writeCeiling(env.store, target, rows, 1),
    await writeCeiling(env.store, target, rows, 2),
  ];
  const connections = (c: WriteCeiling) =>
    `${c.storeConnections} store connection${c.storeConnections > 1 ? 's' : ''}`;
  for (const ceiling of ceilings) {
    say(
      `  write ceiling (target rows + links + operations, text built beforehand), ${connections(ceiling).padEnd(20)}${secs(ceiling.seconds).padStart(9)}  ${int(ceiling.rowsPerSecond).padStart(8)} rows/s`,
    );
  }
  say(
    `    write ceiling / raw write: ${ceilings.map((c) => `${pct(c.rowsPerSecond / rawRate)} (${connections(c)}; PostgreSQL ${perRow(c.serverCpuSeconds.postgres)}, MariaDB ${perRow(c.serverCpuSeconds.mariadb)})`).join(', ')}; the engine reaches ${pct(rate / Math.max(...ceilings.map((c) => c.rowsPerSecond)))} of the higher; building the texts took this process ${perRow(ceilings[0]!.buildSeconds)} (not timed)`,
  );
  return ceilings;
}

export async function initialSync(env: Env, options: Options, sourceKind: AppKind): Promise<void> {
  const source = sourceKind === 'postgres' ? env.pg : env.my;
  const target = sourceKind === 'postgres' ? env.my : env.pg;
  const label = `initial sync ${serverName(source.kind)} -> ${serverName(target.kind)}`;
  const key = `initial_${source.kind}_to_${target.kind}`;
  say();
  say(`== ${label}, ${int(options.rows)} rows ==`);
  const table = `initial_${source.kind === 'postgres' ? 'pg' : 'my'}`;
  const setupStarted = performance.now();
  await source.createTable(table);
  await target.createTable(table);
  await source.generate(table, options.rows);
  say(
    `  source table ${table} on ${source.server}: ${int(options.rows)} rows generated in ${secs((performance.now() - setupStarted) / 1000)}; target table on ${target.server} empty`,
  );

  // The raw bulk write of the target connector on the same machine, now (the machine otherwise idle).
  const raw: RawWrite = await rawWrite(target, options.rows, WRITE_BATCH, false);
  say(
    `  raw write (${target.kind} connector createRecords, batches of ${WRITE_BATCH}, fresh table)            ${secs(raw.seconds).padStart(9)}  ${int(raw.rowsPerSecond).padStart(8)} rows/s`,
  );
  const rawCapture: RawWrite = await rawWrite(target, options.rows, WRITE_BATCH, true);
  say(
    `  raw write, with change capture triggers (as the engine prepares its target)         ${secs(rawCapture.seconds).padStart(9)}  ${int(rawCapture.rowsPerSecond).padStart(8)} rows/s`,
  );
  if (raw.failed + rawCapture.failed > 0)
    errors.push(`${label}: the raw write refused ${raw.failed + rawCapture.failed} rows`);

  const accountId = await createAccount(env.store);
  const syncId = await draftSync(env, accountId, table, label);
  const stageFile = join(tmpdir(), `lockstep-bench-stages-${process.pid}-${key}.json`);
  const worker = await bootWorker(env, accountId, options.workerLog, { ENGINE_STAGE_TIMES_FILE: stageFile });
  const sampler = new RssSampler(worker.pid, 200);
  sampler.start();
  const cpuBefore = procStats(worker.pid)?.cpuSeconds ?? 0;
  const servers = new ServerCpuSampler();
  servers.start();
  // The clock starts before the start is written (the job that wakes the worker is part of starting).
  const started = performance.now();
  await startSyncs(env.store, worker, [syncId]);
  let lastReport = started;
  let phases: Record<string, number> = {};
  try {
    await waitUntil(
      `${label} to finish`,
      options.timeoutSeconds * 1000,
      100,
      async () => {
        const [sync] = await env.store.sql<{
          initial_sync_phase: string;
          progress: {
            pairs?: {
              stage: string;
              processed: { left: number; right: number };
              created: { left: number; right: number };
              failed: number;
            }[];
          } | null;
        }>(`SELECT initial_sync_phase, initial_sync_progress AS progress FROM syncs WHERE id = $1`, [syncId]);
        const phase = sync!.initial_sync_phase;
        const at = (performance.now() - started) / 1000;
        if (!(phase in phases)) phases = { ...phases, [phase]: at };
        if (performance.now() - lastReport >= 15_000) {
          lastReport = performance.now();
          const pair = sync!.progress?.pairs?.[0];
          say(
            `  ... ${at.toFixed(0)} s: phase ${phase}${pair ? `, stage ${pair.stage}, processed ${int(pair.processed.left + pair.processed.right)}, created ${int(pair.created.left + pair.created.right)}, failed ${pair.failed}` : ''}, worker RSS ${mb(procStats(worker.pid)?.rssBytes ?? 0)}`,
          );
        }
        return phase === 'done';
      },
      worker,
    );
  } catch (error) {
    const issues = await openIssues(env.store, accountId).catch(() => []);
    throw new Error(`${message(error)}${issues.length ? `; open issues: ${JSON.stringify(issues)}` : ''}`);
  }
  const seconds = (performance.now() - started) / 1000;
  const peak = sampler.stop();
  const stats = procStats(worker.pid);
  const cpu = (stats?.cpuSeconds ?? 0) - cpuBefore;
  const serverCpu = servers.stop();
  await stopWorker(env, worker);

  const stages = await readStageTimes(stageFile);
  const copied = await target.summary(table);
  const expected = await source.summary(table);
  const same =
    copied.rows === expected.rows && copied.qtySum === expected.qtySum && copied.namesOk === expected.rows;
  if (!same)
    errors.push(`${label}: the target has ${JSON.stringify(copied)}, the source ${JSON.stringify(expected)}`);
  const issues = await openIssues(env.store, accountId);
  const rate = options.rows / seconds;
  say(
    `  engine: started -> initial_sync_phase 'done'                                        ${secs(seconds).padStart(9)}  ${int(rate).padStart(8)} rows/s`,
  );
  // The raw write again, right after: this machine's speed drifts by a third and more between minutes (the raw
  // write alone measured 31,000 to 56,000 rows/s within an hour), so the engine is compared with the raw write of
  // both sides of its run: all rows of both raw writes over their total time.
  const rawAfter: RawWrite = await rawWrite(target, options.rows, WRITE_BATCH, false);
  if (rawAfter.failed > 0)
    errors.push(`${label}: the raw write after the run refused ${rawAfter.failed} rows`);
  const rawRate = (raw.rows + rawAfter.rows) / (raw.seconds + rawAfter.seconds);
  const ratio = rate / rawRate;
  say(
    `  raw write again, after the engine run                                                ${secs(rawAfter.seconds).padStart(9)}  ${int(rawAfter.rowsPerSecond).padStart(8)} rows/s`,
  );
  say(
    `    phases reached at: ${Object.entries(phases)
      .map(([phase, at]) => `${phase} ${at.toFixed(1)} s`)
      .join(', ')}`,
  );
  say(
    `    ratio to the raw write (before and after together, ${int(rawRate)} rows/s): ${pct(ratio)} (target >= ${pct(INITIAL_RATIO_TARGET)}); to the one before only: ${pct(rate / raw.rowsPerSecond)}; to the raw write with change capture: ${pct(rate / rawCapture.rowsPerSecond)}`,
  );
  say(
    `    worker peak RSS: ${mb(peak)} sampled every 200 ms, VmHWM ${mb(stats?.hwmBytes ?? 0)} (target < ${mb(RSS_BOUND)}); worker CPU ${secs(cpu)} (${pct(cpu / seconds)} of one core)`,
  );
  const perRow = (cpuSeconds: number) => `${((cpuSeconds * 1e6) / options.rows).toFixed(0)} us/row`;
  say(
    `    CPU time during the run: worker ${secs(cpu)} (${perRow(cpu)}), PostgreSQL processes ${secs(serverCpu.postgres)} (${perRow(serverCpu.postgres)}, service store and app), MariaDB ${secs(serverCpu.mariadb)} (${perRow(serverCpu.mariadb)})`,
  );
  for (const line of stageLines(stages)) say(line);
  // The write ceiling (ceiling.ts): the same writes with their text built beforehand, nothing read or decided.
  const ceilings = options.noCeiling ? [] : await ceilingLines(env, target, options.rows, rawRate, rate);
  say(
    `    target table vs source: ${same ? `same row count (${int(copied.rows)}), same sum of qty, every name matches its id` : `DIFFERENT: ${JSON.stringify(copied)} vs ${JSON.stringify(expected)}`}`,
  );
  if (issues.length) say(`    open issues: ${JSON.stringify(issues)}`);
  const bench = `initial ${source.kind === 'postgres' ? 'PG -> MariaDB' : 'MariaDB -> PG'}`;
  row(bench, 'engine rows/s', int(rate));
  if (options.workers > 1) {
    const together = await severalWorkers(env, options, { source, target, table, label });
    say(
      `    ${options.workers} workers together: ${int(together.rowsPerSecond)} rows/s, one worker: ${int(rate)} rows/s (${pct(together.rowsPerSecond / rate)} of one's); key ranges taken by ${together.takers} of the ${options.workers} workers`,
    );
    row(
      bench,
      `engine rows/s, ${options.workers} workers`,
      `${int(together.rowsPerSecond)} (one: ${int(rate)})`,
    );
    figures[`${key}_workers`] = { ...together, oneWorkerRowsPerSecond: rate };
  }
  row(
    bench,
    `raw ${target.kind} write rows/s`,
    `${int(rawRate)} (${int(raw.rowsPerSecond)} before, ${int(rawAfter.rowsPerSecond)} after)`,
  );
  row(
    bench,
    'engine / raw write',
    pct(ratio),
    `>= ${pct(INITIAL_RATIO_TARGET)}`,
    ratio >= INITIAL_RATIO_TARGET,
  );
  row(
    bench,
    'write ceiling / raw write',
    ceilings.map((c) => `${pct(c.rowsPerSecond / rawRate)} (${c.storeConnections} conn.)`).join(', '),
  );
  const rss = Math.max(peak, stats?.hwmBytes ?? 0);
  row(bench, 'worker peak RSS', mb(rss), `< ${mb(RSS_BOUND)}`, rss < RSS_BOUND);
  figures[key] = {
    rows: options.rows,
    seconds,
    rowsPerSecond: rate,
    rawWrite: raw,
    rawWriteAfter: rawAfter,
    rawRowsPerSecond: rawRate,
    rawWriteChangeCapture: rawCapture,
    ratio,
    writeCeilings: ceilings,
    peakRssBytes: peak,
    vmHwmBytes: stats?.hwmBytes ?? null,
    cpuSeconds: cpu,
    serverCpuSeconds: serverCpu,
    phases,
    stageTimes: stages,
    targetMatchesSource: same,
    openIssues: issues,
  };
  await dropTables(source, target, table);
}
