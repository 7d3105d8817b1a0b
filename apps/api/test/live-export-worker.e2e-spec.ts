import { liveExportWorld, type LiveExportWorld, type RunBody } from './support/live-export-worker';
import { exportCaptureOf } from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import { PG_URL, scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';
import { bearer } from './support/test-app';
import { mysqlDestination, mysqlSource, pgDestination, pgSource } from './support/live-export';

/**
 * Live export end to end as a user drives it: accounts and keys from the test app, exports created, mapped and
 * saved over HTTP, runs triggered, listed, watched and canceled over HTTP, and the REAL worker process
 * (dist/apps/worker/src/main.js, limited to the test account, schedule test clock on) doing the work against a
 * scratch PostgreSQL schema and a scratch MariaDB database. Schedules fire from `tick` jobs under a clock the
 * test sets (`LIVE_EXPORT_TEST_CLOCK=1`: the worker's "now" is a Redis key), never from waiting; the API's own
 * `next_run_at` is read with this process's Date faked (the API runs in-process). Run `npm run -s build` first.
 */
describe('live export with the worker process (through HTTP)', () => {
  let w: LiveExportWorld;
  let pg: ScratchPg;
  let my: ScratchMysql;

  const BIG = 200_000;

  beforeAll(async () => {
    w = await liveExportWorld();
    pg = await scratchPg(`
      CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), qty int, active boolean, added date);
      INSERT INTO items SELECT g, 'item ' || g, (g * 1.25)::numeric(10,2), g % 7, g % 2 = 0, date '2024-01-01' + g FROM generate_series(1, 1000) g;
      CREATE TABLE big (id int PRIMARY KEY, a int NOT NULL, b text NOT NULL);
      INSERT INTO big SELECT g, g, 'v1-' || g FROM generate_series(1, ${BIG}) g;`);
    my = await scratchMysql([
      `CREATE TABLE crash_src (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40) NOT NULL)`,
      `INSERT INTO crash_src SELECT seq, seq, CONCAT('m-', seq) FROM seq_1_to_${BIG}`,
    ]);
    // A clock long before any schedule exists: no slot is due until a test moves it.
    await w.setClock('2000-01-01T00:00:00Z');
    await w.startWorker();
  }, 60_000);
  afterAll(async () => {
    await w?.close();
    await Promise.all([pg?.drop(), my?.drop()]);
  });

  const itemsMapping = (destinationTable: string) => ({
    source_table: 'items',
    destination_table: destinationTable,
    fields: [
      { source_field: 'id', primary: true },
      { source_field: 'name' },
      { source_field: 'price' },
      { source_field: 'qty' },
      { source_field: 'active' },
      { source_field: 'added' },
    ],
  });
  const itemsExport = (name: string, destinationTable: string) =>
    w.createExport({
      name,
      source: pgSource(pg),
      destination: mysqlDestination(my),
      tables: [itemsMapping(destinationTable)],
    });

  /** The destination (rows the export wrote) equals the source, value for value. */
  async function expectItemsMirror(destinationTable: string): Promise<number> {
    const source = await pg.sql(
      `SELECT id, name, price::text AS price, qty, active, added::text AS added FROM ${pg.schema}.items ORDER BY id`,
    );
    const copied = (await my.sql(
      `SELECT lockstep_source_id AS sid, id, name, CAST(price AS CHAR) AS price, qty, active, CAST(added AS CHAR) AS added
         FROM \`${destinationTable}\` WHERE lockstep_source_id IS NOT NULL ORDER BY id`,
    )) as Record<string, unknown>[];
    expect(
      copied.map(({ sid, active, ...row }) => ({
        ...row,
        sid,
        active: active === null ? null : Boolean(active),
      })),
    ).toEqual(source.map((row) => ({ ...row, sid: String(row['id']) })));
    return source.length;
  }

  /** The token of the export change capture on a table of the PostgreSQL source (null when none is installed). */
  async function captureToken(table: string): Promise<string | null> {
    const connection = await findConnector('postgres')!.connect({ connectionString: PG_URL }, pg.schema, {
      egress: { allowPrivate: true, allowLoopback: true },
    });
    try {
      return await exportCaptureOf(connection)!.sourceCaptureToken(table);
    } finally {
      await connection.close();
    }
  }

  /** A copy of `big` rows: every row the export wrote, as (a, b) states counted. */
  async function bigStates(): Promise<{
    v1: number;
    v2: number;
    torn: number;
    total: number;
    distinct: number;
  }> {
    const [row] = (await my.sql(
      `SELECT COUNT(*) AS total, COUNT(DISTINCT lockstep_source_id) AS \`distinct\`,
              SUM(a = CAST(lockstep_source_id AS SIGNED) AND b = CONCAT('v1-', lockstep_source_id)) AS v1,
              SUM(a = CAST(lockstep_source_id AS SIGNED) + 1000000 AND b = CONCAT('v2-', lockstep_source_id)) AS v2
         FROM big_copy WHERE lockstep_source_id IS NOT NULL`,
    )) as Record<string, string | number | null>[];
    const [total, distinct, v1, v2] = [row!['total'], row!['distinct'], row!['v1'], row!['v2']].map((value) =>
      Number(value ?? 0),
    ) as [number, number, number, number];
    return { total, distinct, v1, v2, torn: total - v1 - v2 };
  }

  /** Waits until the run is `running` (per the API) and `check` holds (the copy is under way); fails at once if it already finished. */
  async function whileRunning(runId: string, check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const run = await w.run(runId);
      if (['succeeded', 'failed', 'canceled'].includes(run.state))
        throw new Error(
          `run ${runId} finished (${run.state} ${JSON.stringify(run.error)}) before the test could act on it mid-run`,
        );
      if (run.state === 'running' && (await check())) return;
      if (Date.now() > deadline)
        throw new Error(`run ${runId} is still ${run.state} with nothing written after 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Reads the API's schedule with this process's clock (the API's `new Date()`) set to `iso`. */
  async function scheduleAt(liveExportId: string, iso: string): Promise<Record<string, unknown>> {
    jest.useFakeTimers({
      now: new Date(iso),
      advanceTimers: true,
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    try {
      return await w.schedule(liveExportId);
    } finally {
      jest.useRealTimers();
    }
  }

  const cancel = (runId: string) =>
    w.t.http().post(`/v1/live-export/runs/${runId}/cancel`).set(bearer(w.keys.operate));
  const scheduled = (runs: RunBody[]) => runs.filter((run) => run.trigger === 'schedule');

  it('PostgreSQL -> MariaDB: a triggered run mirrors the source; the next one writes only changes and removals; rows the export did not write stay', async () => {
    const lex = await itemsExport('items', 'items_copy');
    await my.sql(`INSERT INTO items_copy (name, qty) VALUES ('kept by hand', 42)`);

    const first = await w.trigger(lex.id);
    // The worker may claim the run before the trigger's answer is read back: queued or already running.
    expect(first).toMatchObject({ live_export: lex.id, trigger: 'manual' });
    expect(['queued', 'running']).toContain(first.state);
    const done = await w.finished(first.id);
    expect(done).toMatchObject({
      state: 'succeeded',
      rows_read: 1000,
      rows_written: 1000,
      rows_removed: 0,
      error: null,
    });
    expect(done.started_at).not.toBeNull();
    expect(done.finished_at).not.toBeNull();
    await expectItemsMirror('items_copy');

    await pg.sql(`UPDATE ${pg.schema}.items SET name = name || ' v2' WHERE id IN (10, 20, 30)`);
    await pg.sql(`UPDATE ${pg.schema}.items SET price = NULL, active = NULL WHERE id = 40`);
    await pg.sql(
      `INSERT INTO ${pg.schema}.items (id, name, qty) VALUES (1001, 'new one', 1), (1002, 'new two', 2)`,
    );
    await pg.sql(`DELETE FROM ${pg.schema}.items WHERE id IN (5, 6, 7, 8)`);
    const second = await w.finished((await w.trigger(lex.id)).id);
    // The first run installed the export's change capture in the source: only the 6 logged rows that still
    // exist are read (5-8 are gone and removed).
    expect(second).toMatchObject({ state: 'succeeded', rows_read: 6, rows_written: 6, rows_removed: 4 });
    expect(await expectItemsMirror('items_copy')).toBe(998);
    expect(
      await my.sql(`SELECT name, qty, lockstep_row_hash FROM items_copy WHERE lockstep_source_id IS NULL`),
    ).toEqual([{ name: 'kept by hand', qty: 42, lockstep_row_hash: null }]);

    const third = await w.finished((await w.trigger(lex.id)).id);
    expect(third).toMatchObject({ state: 'succeeded', rows_read: 0, rows_written: 0, rows_removed: 0 });
    expect((await w.runs(lex.id)).map((run) => run.id)).toEqual([third.id, second.id, first.id]);

    // Deleting the export removes its change capture from the source (the worker does it shortly after).
    expect(await captureToken('items')).not.toBeNull();
    const deleted = (
      await w.t.http().delete(`/v1/live-export/live-exports/${lex.id}`).set(bearer(w.keys.write)).expect(200)
    ).body;
    expect(deleted.note).toContain('change capture');
    const deadline = Date.now() + 30_000;
    while ((await captureToken('items')) !== null) {
      if (Date.now() > deadline)
        throw new Error("the deleted export's change capture is still installed after 30 s");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('a schedule fires at its slot under the test clock: exactly one `schedule` run per slot, none once disabled', async () => {
    const lex = await itemsExport('every ten minutes', 'items_scheduled');
    const schedule = await w.patchSchedule(lex.id, { cadence: 'every_10_minutes' });
    expect(schedule).toMatchObject({ cadence: 'every_10_minutes', enabled: true });
    const slot = Date.parse(String(schedule['next_run_at']));
    expect(slot % 600_000).toBe(0);

    await w.setClock(new Date(slot - 1000));
    await w.tick();
    expect(await w.runs(lex.id)).toEqual([]);

    await w.setClock(new Date(slot + 2000));
    await Promise.all([w.tick(), w.tick(), w.tick()]);
    const fired = await w.runs(lex.id);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({
      trigger: 'schedule',
      slot_at: new Date(slot).toISOString(),
      forced: false,
    });
    const rows = Number((await pg.sql(`SELECT count(*)::int AS n FROM ${pg.schema}.items`))[0]!['n']);
    expect(await w.finished(fired[0]!.id)).toMatchObject({
      state: 'succeeded',
      rows_read: rows,
      rows_written: rows,
    });
    await expectItemsMirror('items_scheduled');
    await w.tick();
    expect(await w.runs(lex.id)).toHaveLength(1);

    // The next slot runs again (nothing changed: nothing written).
    await w.setClock(new Date(slot + 600_000 + 1000));
    await w.tick();
    const again = scheduled(await w.runs(lex.id));
    expect(again.map((run) => run.slot_at)).toEqual([
      new Date(slot + 600_000).toISOString(),
      new Date(slot).toISOString(),
    ]);
    expect(await w.finished(again[0]!.id)).toMatchObject({
      state: 'succeeded',
      rows_written: 0,
      rows_removed: 0,
    });

    // Switched off: no run for later slots.
    expect(await w.patchSchedule(lex.id, { enabled: false })).toMatchObject({
      enabled: false,
      next_run_at: null,
    });
    await w.setClock(new Date(slot + 3 * 600_000 + 1000));
    await w.tick();
    expect(await w.runs(lex.id)).toHaveLength(2);
  });

  it('a daily 02:30 Europe/Berlin schedule runs at 03:00 CEST (01:00Z) on the spring-forward day, exactly once', async () => {
    const lex = await itemsExport('daily berlin', 'items_daily');
    expect(
      await w.patchSchedule(lex.id, { cadence: 'daily', time_of_day: '02:30', timezone: 'Europe/Berlin' }),
    ).toMatchObject({ time_of_day: '02:30', timezone: 'Europe/Berlin' });
    // schedule.ts: a time of day that does not exist that day (02:00 -> 03:00 on 2027-03-28) runs at the change, 03:00 CEST.
    expect((await scheduleAt(lex.id, '2027-03-26T12:00:00Z'))['next_run_at']).toBe(
      '2027-03-27T01:30:00.000Z',
    ); // 02:30 CET
    expect((await scheduleAt(lex.id, '2027-03-27T12:00:00Z'))['next_run_at']).toBe(
      '2027-03-28T01:00:00.000Z',
    ); // the gap: 03:00 CEST
    expect((await scheduleAt(lex.id, '2027-03-28T12:00:00Z'))['next_run_at']).toBe(
      '2027-03-29T00:30:00.000Z',
    ); // 02:30 CEST

    // Just before the change, the latest passed slot (the day before, 02:30 CET) is the one due: one run for it.
    await w.setClock('2027-03-28T00:59:59Z');
    await w.tick();
    const before = scheduled(await w.runs(lex.id));
    expect(before.map((run) => run.slot_at)).toEqual(['2027-03-27T01:30:00.000Z']);
    expect(await w.finished(before[0]!.id)).toMatchObject({ state: 'succeeded' });
    await w.tick();
    expect(await w.runs(lex.id)).toHaveLength(1);

    await w.setClock('2027-03-28T01:00:00Z');
    await Promise.all([w.tick(), w.tick()]);
    const atChange = scheduled(await w.runs(lex.id));
    expect(atChange.map((run) => run.slot_at)).toEqual([
      '2027-03-28T01:00:00.000Z',
      '2027-03-27T01:30:00.000Z',
    ]);
    expect(await w.finished(atChange[0]!.id)).toMatchObject({ state: 'succeeded', trigger: 'schedule' });

    // Nothing more that day (no second run at 01:30Z, the 02:30 CET instant that did not happen).
    await w.setClock('2027-03-29T00:29:59Z');
    await w.tick();
    expect(await w.runs(lex.id)).toHaveLength(2);
    await w.setClock('2027-03-29T00:30:00Z');
    await w.tick();
    expect(scheduled(await w.runs(lex.id))[0]).toMatchObject({ slot_at: '2027-03-29T00:30:00.000Z' });
    await w.finished(scheduled(await w.runs(lex.id))[0]!.id);
    await w.patchSchedule(lex.id, { enabled: false });
  });

  it('cancel stops a running copy within 2 s, leaves no torn row, and the next run completes an exact mirror', async () => {
    const lex = await w.createExport({
      name: 'big',
      source: pgSource(pg),
      destination: mysqlDestination(my),
      tables: [
        {
          source_table: 'big',
          destination_table: 'big_copy',
          fields: [{ source_field: 'a' }, { source_field: 'b' }],
        },
      ],
    });
    const copied = async () =>
      Number(((await my.sql(`SELECT COUNT(*) AS n FROM big_copy`)) as { n: number }[])[0]!.n);

    // 1: cancel a first copy midway: the rows there are whole source rows.
    const first = await w.trigger(lex.id);
    await whileRunning(first.id, async () => (await copied()) > 0);
    let asked = Date.now();
    const answer = await cancel(first.id).expect(200);
    expect(answer.body).toMatchObject({ id: first.id, state: 'running', finished_at: null });
    expect(answer.body.cancel_requested_at).not.toBeNull();
    let canceled = await w.finished(first.id, 10_000);
    const firstStopMs = Date.now() - asked;
    expect(canceled).toMatchObject({ state: 'canceled', error: null });
    expect(firstStopMs).toBeLessThan(2000);
    const afterFirst = await bigStates();
    expect(afterFirst).toMatchObject({ torn: 0, v2: 0, distinct: afterFirst.total });
    expect(afterFirst.total).toBeGreaterThan(0);
    expect(afterFirst.total).toBeLessThan(BIG);
    expect((await cancel(first.id).expect(409)).body.error).toMatchObject({ code: 'run_not_active' });

    // 2: every source row changes both columns; a run canceled midway leaves each row before, after, or absent.
    await pg.sql(`UPDATE ${pg.schema}.big SET a = id + 1000000, b = 'v2-' || id`);
    const second = await w.trigger(lex.id);
    await whileRunning(second.id, async () => (await bigStates()).v2 > 0);
    asked = Date.now();
    await cancel(second.id).expect(200);
    canceled = await w.finished(second.id, 10_000);
    const secondStopMs = Date.now() - asked;
    expect(canceled.state).toBe('canceled');
    expect(secondStopMs).toBeLessThan(2000);
    const afterSecond = await bigStates();
    expect(afterSecond).toMatchObject({ torn: 0, distinct: afterSecond.total });
    expect(afterSecond.v2).toBeGreaterThan(0);
    expect(afterSecond.v2).toBeLessThan(BIG);

    // 3: the next run repairs everything: an exact mirror, writing only what was still missing or old.
    const third = await w.finished((await w.trigger(lex.id)).id);
    expect(third).toMatchObject({
      state: 'succeeded',
      rows_read: BIG,
      rows_written: BIG - afterSecond.v2,
      rows_removed: 0,
    });
    expect(await bigStates()).toEqual({ total: BIG, distinct: BIG, v1: 0, v2: BIG, torn: 0 });
    expect((await w.runs(lex.id)).map((run) => run.state)).toEqual(['succeeded', 'canceled', 'canceled']);
  });

  it('MariaDB -> PostgreSQL: a worker killed (SIGKILL) mid-run; a new worker recovers the run and the destination is an exact mirror', async () => {
    const lex = await w.createExport({
      name: 'crash',
      source: mysqlSource(my),
      destination: pgDestination(pg),
      tables: [
        {
          source_table: 'crash_src',
          destination_table: 'crash_copy',
          fields: [{ source_field: 'a' }, { source_field: 'b' }],
        },
      ],
    });
    const copied = async () =>
      Number((await pg.sql(`SELECT count(*)::int AS n FROM ${pg.schema}.crash_copy`))[0]!['n']);
    const run = await w.trigger(lex.id);
    await whileRunning(run.id, async () => (await copied()) > 0);
    await w.killWorker();
    const orphan = await w.run(run.id);
    expect(orphan.state).toBe('running');
    const partial = await copied();
    expect(partial).toBeLessThan(BIG);

    // A new worker notices the stale heartbeat (2 s here), re-queues the run once and completes it.
    await w.startWorker({ LIVE_EXPORT_STALE_SECONDS: '2' });
    const recovered = await w.finished(run.id, 60_000);
    expect(recovered).toMatchObject({
      state: 'succeeded',
      error: null,
      rows_read: BIG,
      rows_written: BIG - partial,
    });
    const mirror = async () =>
      (
        await pg.sql(
          `SELECT count(*)::int AS total, count(DISTINCT lockstep_source_id)::int AS ids,
                count(*) FILTER (WHERE a::text <> lockstep_source_id OR b <> 'm-' || lockstep_source_id)::int AS wrong
           FROM ${pg.schema}.crash_copy`,
        )
      )[0];
    expect(await mirror()).toEqual({ total: BIG, ids: BIG, wrong: 0 });

    // And the next run is clean: nothing to write.
    await my.sql(`UPDATE crash_src SET b = 'changed' WHERE id = 7`);
    const next = await w.finished((await w.trigger(lex.id)).id);
    expect(next).toMatchObject({ state: 'succeeded', rows_read: 1, rows_written: 1, rows_removed: 0 });
    expect(await pg.sql(`SELECT b FROM ${pg.schema}.crash_copy WHERE lockstep_source_id = '7'`)).toEqual([
      { b: 'changed' },
    ]);
  });
});
