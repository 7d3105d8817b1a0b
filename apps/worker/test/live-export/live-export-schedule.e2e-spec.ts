/**
 * Live export schedules and crash recovery with the real worker process: the schedule tick (Bull repeatable
 * job) under a clock the test controls (`LIVE_EXPORT_TEST_CLOCK=1`, "now" in a Redis key; the test adds tick
 * jobs instead of waiting), a slot never runs twice even when ticks race, a daily slot on a spring-forward
 * day, and a worker killed (SIGKILL) mid-run followed by a clean run. Run `npm run -s build` first.
 */
import type { ChildProcess } from 'node:child_process';
import type { Queue } from 'bull';
import type { DataSource } from 'typeorm';
import { LIVE_EXPORT_JOBS } from '@lockstep/jobs';
import mysql from 'mysql2/promise';
import {
  type My,
  MYSQL_URL,
  type Pg,
  scratchMysql,
  scratchPg,
  store,
  waitFor,
  workerProcess,
} from '../support/fixture';
import { TEST_CLOCK_KEY } from '../../src/live-export/live-export.processor';
import {
  createAccount,
  createSavedExport,
  finished,
  getRun,
  runsOf,
  testQueue,
  triggerRun,
  workerReady,
} from '../support/live-export-fixture';

let db: DataSource;
let pg: Pg;
let my: My;
let queue: Queue;
let prefix: string;
let worker: ChildProcess | null = null;
let accountId: string;

const workerEnv = () => ({
  QUEUE_PREFIX: prefix,
  LIVE_EXPORT_TEST_CLOCK: '1',
  LIVE_EXPORT_STALE_SECONDS: '3',
  LIVE_EXPORT_BATCH_ROWS: '200',
});

async function setClock(iso: string): Promise<void> {
  await queue.client.set(`${prefix}:${TEST_CLOCK_KEY}`, String(Date.parse(iso)));
}

/** Runs one tick job and waits for its result. */
interface Tick {
  queued: { runId: string; liveExportId: string; slotAt: string }[];
  skipped: { liveExportId: string; slotAt: string; reason: string }[];
}
async function tick(): Promise<Tick> {
  const job = await queue.add(LIVE_EXPORT_JOBS.tick, {}, { removeOnComplete: false });
  return (await job.finished()) as Tick;
}

async function simpleExport(table: string): Promise<string> {
  return createSavedExport(db, accountId, {
    source: { connector: 'postgres', base: pg.schema },
    destination: { connector: 'mysql', location: my.database },
    tables: [
      {
        sourceTable: table,
        destinationTable: `${table}_copy`,
        columns: [
          { sourceField: 'a', column: 'a', typeClass: 'integer' },
          { sourceField: 'b', column: 'b', typeClass: 'text' },
        ],
      },
    ],
  });
}

beforeAll(async () => {
  db = await store();
  pg = await scratchPg(`
    CREATE TABLE small (id int PRIMARY KEY, a int, b text);
    INSERT INTO small SELECT g, g, 'row ' || g FROM generate_series(1, 50) g;
    CREATE TABLE large (id int PRIMARY KEY, a int, b text);
    INSERT INTO large SELECT g, g, 'row ' || g FROM generate_series(1, 100000) g;`);
  my = await scratchMysql([]);
  accountId = await createAccount(db, 'business');
  const test = testQueue();
  queue = test.queue;
  prefix = test.prefix;
  worker = workerProcess(accountId, workerEnv());
  await workerReady(queue);
}, 60_000);

afterAll(async () => {
  worker?.kill('SIGKILL');
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await pg?.drop();
  await my?.drop();
  await db?.destroy();
});

describe('live export schedule (worker process, test clock)', () => {
  it('registers the tick as a Bull repeatable job every 15 s', async () => {
    const repeatable = (await queue.getRepeatableJobs()).filter((job) => job.name === LIVE_EXPORT_JOBS.tick);
    expect(repeatable).toHaveLength(1);
    expect(Number(repeatable[0]!.every)).toBe(15_000);
  });

  it('fires a scheduled run at its slot, once per slot even when ticks race, and not for a disabled schedule', async () => {
    const exportId = await simpleExport('small');
    await db.query(
      `INSERT INTO live_export_schedules (live_export_id, cadence, enabled, updated_at) VALUES ($1, 'every_10_minutes', true, '2030-01-01T12:01:00Z')`,
      [exportId],
    );
    await setClock('2030-01-01T12:09:59Z');
    expect((await tick()).queued).toEqual([]);
    await setClock('2030-01-01T12:10:02Z');
    const ticks = await Promise.all([tick(), tick(), tick()]);
    const queued = ticks.flatMap((result) => result.queued);
    expect(queued).toHaveLength(1);
    expect(queued[0]!.slotAt).toBe('2030-01-01T12:10:00.000Z');
    const run = await finished(db, queued[0]!.runId);
    expect(run).toMatchObject({ state: 'succeeded', trigger: 'schedule', rows_written: '50' });
    expect(run.slot_at?.toISOString()).toBe('2030-01-01T12:10:00.000Z');
    expect(await my.sql(`SELECT COUNT(*) AS count FROM small_copy`)).toEqual([{ count: 50 }]);
    // Same slot again: nothing; the next slot: a run; disabled: nothing.
    expect((await tick()).queued).toEqual([]);
    await setClock('2030-01-01T12:20:00Z');
    const next = (await tick()).queued;
    expect(next).toHaveLength(1);
    expect(await finished(db, next[0]!.runId)).toMatchObject({ state: 'succeeded', rows_written: '0' });
    await db.query(`UPDATE live_export_schedules SET enabled = false WHERE live_export_id = $1`, [exportId]);
    await setClock('2030-01-01T12:30:00Z');
    expect((await tick()).queued).toEqual([]);
    expect((await runsOf(db, exportId)).map((found) => found.slot_at?.toISOString())).toEqual([
      '2030-01-01T12:10:00.000Z',
      '2030-01-01T12:20:00.000Z',
    ]);
  });

  it('runs a daily schedule at 03:00 CEST on the spring-forward day when its time (02:30) does not exist', async () => {
    const exportId = await simpleExport('small');
    await db.query(
      `INSERT INTO live_export_schedules (live_export_id, cadence, time_of_day, timezone, enabled, last_slot_at) VALUES ($1, 'daily', '02:30', 'Europe/Berlin', true, '2031-03-29T01:30:00Z')`,
      [exportId],
    );
    // 2031-03-30: Berlin jumps from 02:00 CET to 03:00 CEST at 01:00Z.
    await setClock('2031-03-30T00:59:00Z');
    expect((await tick()).queued).toEqual([]);
    await setClock('2031-03-30T01:00:05Z');
    const queued = (await tick()).queued;
    expect(queued.map((item) => item.slotAt)).toEqual(['2031-03-30T01:00:00.000Z']);
    expect(await finished(db, queued[0]!.runId)).toMatchObject({ state: 'succeeded', trigger: 'schedule' });
  });

  it('skips a slot while a run is active (recorded in last_slot_at) and queues nothing for it', async () => {
    const exportId = await simpleExport('small');
    await db.query(
      `INSERT INTO live_export_schedules (live_export_id, cadence, enabled, updated_at) VALUES ($1, 'hourly', true, '2032-01-01T00:00:00Z')`,
      [exportId],
    );
    // An active run the worker does not see (no job): the slot must be skipped.
    await db.query(
      `INSERT INTO live_export_runs (id, live_export_id, account_id, state, trigger) VALUES ('run_blocking_${exportId.slice(4, 12)}', $1, $2, 'running', 'manual')`,
      [exportId, accountId],
    );
    await db.query(
      `UPDATE live_export_runs SET heartbeat_at = now() + interval '1 hour', worker_token = 'n:test' WHERE live_export_id = $1`,
      [exportId],
    );
    await setClock('2032-01-01T01:00:01Z');
    const result = await tick();
    expect(result.queued.filter((item) => item.liveExportId === exportId)).toEqual([]);
    expect(result.skipped).toEqual([
      { liveExportId: exportId, slotAt: '2032-01-01T01:00:00.000Z', reason: 'run_active' },
    ]);
    const [schedule] = (await db.query(
      `SELECT last_slot_at FROM live_export_schedules WHERE live_export_id = $1`,
      [exportId],
    )) as { last_slot_at: Date }[];
    expect(schedule!.last_slot_at.toISOString()).toBe('2032-01-01T01:00:00.000Z');
    await db.query(`DELETE FROM live_export_runs WHERE live_export_id = $1`, [exportId]);
  });

  it('a worker killed mid-run: the run is re-queued after its heartbeat goes stale and the next worker completes it cleanly', async () => {
    const exportId = await simpleExport('large');
    // Another transaction holds an uncommitted row with the key of row 50,000, so the run waits there (its
    // earlier batches committed) and is certainly killed mid-run, however fast the machine copies (a run of
    // 100,000 rows can end before its first heartbeat).
    const holder = await mysql.createConnection({ uri: MYSQL_URL, database: my.database });
    let runId: string;
    try {
      await holder.query('START TRANSACTION');
      await holder.query(`INSERT INTO large_copy (lockstep_source_id) VALUES ('50000')`);
      runId = await triggerRun(db, queue, accountId, exportId);
      // The heartbeat reports the rows of the batches committed before the held row.
      await waitFor(
        'the run to have written some rows',
        async () => Number((await getRun(db, runId)).rows_written) > 0 || null,
        30_000,
        20,
      );
      worker!.kill('SIGKILL');
      await new Promise<void>((resolve) => worker!.once('exit', () => resolve()));
      worker = null;
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    expect((await getRun(db, runId)).state).toBe('running');
    const [{ partial }] = await my.sql<{ partial: number }>(`SELECT COUNT(*) AS partial FROM large_copy`);
    expect(Number(partial)).toBeGreaterThan(0);
    expect(Number(partial)).toBeLessThan(100_000);
    worker = workerProcess(accountId, workerEnv());
    const run = await finished(db, runId, 45_000);
    expect(run).toMatchObject({ state: 'succeeded', error: null });
    const [{ count, distinct_ids, wrong }] = await my.sql<{
      count: number;
      distinct_ids: number;
      wrong: number;
    }>(
      `SELECT COUNT(*) AS count, COUNT(DISTINCT lockstep_source_id) AS distinct_ids, SUM(b <> CONCAT('row ', a) OR a <> CAST(lockstep_source_id AS SIGNED)) AS wrong FROM large_copy`,
    );
    expect([Number(count), Number(distinct_ids), Number(wrong)]).toEqual([100_000, 100_000, 0]);
    // The recovered run only wrote what the dead worker had not committed.
    expect(Number(run.rows_written)).toBe(100_000 - Number(partial));
    const clean = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(clean).toMatchObject({ state: 'succeeded', rows_written: '0', rows_removed: '0' });
  });
});
