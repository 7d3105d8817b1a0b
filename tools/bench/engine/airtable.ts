/**
 * The engine benchmark's Airtable round trip (`--only airtable`, issue 26's speed goal): an initial sync of N
 * PostgreSQL rows (default 5,000 for this benchmark) into an empty Airtable table of the simulator, through the
 * real worker process, then a second sync copying that Airtable table back into an empty PostgreSQL table. The
 * simulator answers with Airtable's own limits (5 requests/s per base, 50 per token, 30 s of 429s past either).
 * Printed: records per second from the start to `initial_sync_phase = 'done'` as a share of Airtable's budget
 * (writes 5 requests/s x 10 records = 50 records/s per base; reads 5 x 100 = 500 records/s), the requests the
 * simulator answered and the 429s among them. Targets (into Airtable): >= 90% of the write budget, 0 429s.
 */
import { appendFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Connection } from '@lockstep/connectors-core';
import { airtableConnector } from '@lockstep/connector-airtable';
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { type AppSide, FIELDS } from './apps';
import {
  createAccount,
  createDraftSync,
  type PairSpec,
  type ServiceStore,
  startSyncs,
  startWorker,
  type SyncSide,
  type Worker,
} from './service';

const TOKEN = 'patENGINEBENCH.0123456789abcdef';
const WRITE_BUDGET = 50;
const READ_BUDGET = 500;
const WRITE_TARGET = 0.9;

export interface AirtableBenchContext {
  store: ServiceStore;
  pg: AppSide;
  rows: number;
  timeoutSeconds: number;
  workerLog: string;
  say(line?: string): void;
  row(benchmark: string, figure: string, value: string, target?: string, ok?: boolean | null): void;
  errors: string[];
  figures: Record<string, unknown>;
  /** Workers still running (stopped by the caller's cleanup when a step fails). */
  workers: Worker[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

/** Airtable's counterpart of the benchmark table (`apps.ts`), `id` first so it is the primary field. */
const AIRTABLE_FIELDS = [
  { name: 'id', type: 'number', options: { precision: 0 } },
  { name: 'name', type: 'singleLineText' },
  { name: 'qty', type: 'number', options: { precision: 0 } },
  { name: 'note', type: 'multilineText' },
  {
    name: 'updated_at',
    type: 'dateTime',
    options: { dateFormat: { name: 'iso' }, timeFormat: { name: '24hour' }, timeZone: 'utc' },
  },
];

interface Leg {
  seconds: number;
  requests: number;
  rateLimited: number;
}

export async function airtableRoundTrip(ctx: AirtableBenchContext): Promise<void> {
  const simulator = await AirtableSimulator.start();
  try {
    simulator.addToken(TOKEN);
    const base = simulator.addBase('Bench');
    const table = simulator.addTable(base, 'Rows', AIRTABLE_FIELDS);
    const fieldId = (name: string) => table.fields.find((field) => field.name === name)!.id;
    const airtable = { kind: 'airtable', base: base.id, credentials: { apiKey: TOKEN } };
    const connect = (): Promise<Connection> =>
      airtableConnector.connect(airtable.credentials, base.id, {
        egress: { allowPrivate: true, allowLoopback: true },
        settings: { AIRTABLE_API_URL: simulator.url },
      });
    const env = { AIRTABLE_API_URL: simulator.url };
    const pairFields = FIELDS.map((field) => [field, fieldId(field)] as [string, string]);

    ctx.say();
    ctx.say(
      `== initial sync PostgreSQL -> Airtable (simulator) and back, ${ctx.rows.toLocaleString('en-US')} rows ==`,
    );
    await ctx.pg.createTable('at_source');
    await ctx.pg.generate('at_source', ctx.rows);
    const into = await leg(ctx, simulator, env, (accountId) =>
      draftSync(ctx, accountId, [ctx.pg, ctx.pg.connect], [airtable, connect], {
        left: 'at_source',
        right: table.id,
        fields: pairFields,
      }),
    );
    const written = table.records.size;
    const writeShare = ctx.rows / into.seconds / WRITE_BUDGET;
    ctx.say(
      `  into Airtable: ${written} records in ${into.seconds.toFixed(1)} s = ${(ctx.rows / into.seconds).toFixed(1)} records/s, ${pct(writeShare)} of ${WRITE_BUDGET}/s; ${into.requests} requests, 429s: ${into.rateLimited}`,
    );
    if (written !== ctx.rows)
      ctx.errors.push(`airtable: ${written} records in Airtable, ${ctx.rows} rows sent`);

    await ctx.pg.createTable('at_back');
    const back = await leg(ctx, simulator, env, (accountId) =>
      draftSync(ctx, accountId, [airtable, connect], [ctx.pg, ctx.pg.connect], {
        left: table.id,
        right: 'at_back',
        fields: pairFields.map(([pg, at]) => [at, pg] as [string, string]),
      }),
    );
    const copied = await ctx.pg.summary('at_back');
    const expected = await ctx.pg.summary('at_source');
    const same =
      copied.rows === expected.rows && copied.qtySum === expected.qtySum && copied.namesOk === expected.rows;
    const readShare = ctx.rows / back.seconds / READ_BUDGET;
    ctx.say(
      `  back into PostgreSQL: ${copied.rows} rows in ${back.seconds.toFixed(1)} s = ${(ctx.rows / back.seconds).toFixed(1)} records/s, ${pct(readShare)} of ${READ_BUDGET}/s; ${back.requests} requests, 429s: ${back.rateLimited}`,
    );
    ctx.say(
      `    back table vs source: ${same ? 'same row count, sum of qty, every name matching its id' : `DIFFERENT: ${JSON.stringify(copied)} vs ${JSON.stringify(expected)}`}`,
    );
    if (!same) ctx.errors.push(`airtable: the table copied back differs from the source`);

    summarise(ctx, into, back, same);
    await ctx.pg.sql(`DROP TABLE "${ctx.pg.base}"."at_source", "${ctx.pg.base}"."at_back" CASCADE`);
  } finally {
    await simulator.close();
  }
}

/** The summary rows and the JSON figures. */
function summarise(ctx: AirtableBenchContext, into: Leg, back: Leg, backMatchesSource: boolean): void {
  const writeShare = ctx.rows / into.seconds / WRITE_BUDGET;
  const readShare = ctx.rows / back.seconds / READ_BUDGET;
  const limited = into.rateLimited + back.rateLimited;
  const bench = 'initial PG <-> Airtable';
  ctx.row(
    bench,
    'into Airtable, share of 50 records/s',
    pct(writeShare),
    `>= ${pct(WRITE_TARGET)}`,
    writeShare >= WRITE_TARGET,
  );
  ctx.row(bench, '429s', String(limited), '0', limited === 0);
  ctx.row(bench, 'back into PG, share of 500 records/s', pct(readShare));
  ctx.figures['initial_postgres_airtable'] = {
    rows: ctx.rows,
    into,
    back,
    writeShare,
    readShare,
    backMatchesSource,
  };
}

type Side = [SyncSide['app'], () => Promise<Connection>];

/** A draft sync of one table pair, written as the API leaves it (`createDraftSync`); its connections closed. */
async function draftSync(
  ctx: AirtableBenchContext,
  accountId: string,
  [leftApp, leftConnect]: Side,
  [rightApp, rightConnect]: Side,
  pair: PairSpec,
): Promise<string> {
  const left = await leftConnect();
  const right = await rightConnect().catch(async (error: unknown) => {
    await left.close();
    throw error;
  });
  try {
    return await createDraftSync(
      ctx.store,
      accountId,
      { app: leftApp, connection: left },
      { app: rightApp, connection: right },
      [pair],
      `${leftApp.kind} -> ${rightApp.kind}`,
    );
  } finally {
    await left.close();
    await right.close();
  }
}

/**
 * One sync of its own account (so the worker runs only it), written as a draft, started with the worker
 * running, timed from the start to `initial_sync_phase = 'done'`.
 */
async function leg(
  ctx: AirtableBenchContext,
  simulator: AirtableSimulator,
  env: Record<string, string>,
  draft: (accountId: string) => Promise<string>,
): Promise<Leg> {
  const accountId = await createAccount(ctx.store);
  const syncId = await draft(accountId);
  const worker = startWorker(ctx.store, accountId, ctx.workerLog, env);
  ctx.workers.push(worker);
  try {
    await sleep(3000);
    const before = { ...simulator.stats };
    simulator.trace = [];
    const started = performance.now();
    await startSyncs(ctx.store, worker, [syncId]);
    const deadline = Date.now() + ctx.timeoutSeconds * 1000;
    for (;;) {
      const [sync] = await ctx.store.sql<{ phase: string }>(
        `SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`,
        [syncId],
      );
      if (sync?.phase === 'done') break;
      if (worker.exited()) throw new Error(`the worker exited (log: ${worker.logFile})`);
      if (Date.now() > deadline)
        throw new Error(`the initial sync did not finish in ${ctx.timeoutSeconds} s`);
      await sleep(100);
    }
    writeTrace(worker.logFile, started, simulator.trace);
    simulator.trace = null;
    return {
      seconds: (performance.now() - started) / 1000,
      requests: simulator.stats.requests - before.requests,
      rateLimited: simulator.stats.rateLimited - before.rateLimited,
    };
  } finally {
    await worker.stop();
    ctx.workers.splice(ctx.workers.indexOf(worker), 1);
  }
}

/** The requests the simulator answered during a leg, next to the worker's log: ms from the start, gap, request. */
function writeTrace(logFile: string, started: number, trace: AirtableSimulator['trace']): void {
  let previous = started;
  const lines = (trace ?? []).map(({ at, method, path }) => {
    const line = `${(at - started).toFixed(0).padStart(7)} +${(at - previous).toFixed(0).padStart(5)} ${method} ${path}`;
    previous = at;
    return line;
  });
  appendFileSync(`${logFile}.airtable-trace`, `== leg ==\n${lines.join('\n')}\n`);
}
