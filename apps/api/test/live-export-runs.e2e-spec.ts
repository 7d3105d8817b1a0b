import { DataSource } from 'typeorm';
import { JobProducer, QUEUES } from '@lockstep/jobs';
import { bearer, createTestApp, type TestApp } from './support/test-app';
import {
  scratchMysql,
  scratchPg,
  uniqueName,
  type ScratchMysql,
  type ScratchPg,
} from './support/scratch-dbs';
import { follow, mysqlDestination, pgSource } from './support/live-export';

/**
 * Live export schedule, trigger, runs and cancel through the API (spec 2.15, 3.4, 4.8). No worker runs here (the
 * queue has its own prefix), so runs stay `queued` unless a test moves them; executing runs is the worker's suite.
 */
describe('live export schedule and runs', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let write: string;
  let read: string;
  let operate: string;
  let db: DataSource;
  let jobs: JobProducer;

  beforeAll(async () => {
    t = await createTestApp({ QUEUE_PREFIX: uniqueName('lxapi') });
    db = t.app.get(DataSource);
    jobs = t.app.get(JobProducer);
    pg = await scratchPg(`CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL);`);
    my = await scratchMysql();
    const accountId = (await t.account({ plan: 'business' })).id;
    write = await t.key(accountId, 'readwrite');
    read = await t.key(accountId, 'read');
    operate = await t.key(accountId, 'operate');
  });
  afterAll(async () => {
    await jobs
      ?.queue(QUEUES.liveExport)
      .obliterate({ force: true })
      .catch(() => undefined);
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  const DOC = {
    tables: [
      {
        source_table: 'companies',
        destination_table: uniqueName('companies'),
        fields: [{ source_field: 'name' }],
      },
    ],
  };

  async function draft(key = write) {
    return (
      await t
        .http()
        .post('/v1/live-export/live-exports')
        .set(bearer(key))
        .send({ name: 'runs', source: pgSource(pg), destination: mysqlDestination(my) })
        .expect(201)
    ).body;
  }
  async function saved(key = write) {
    const lex = await draft(key);
    await t
      .http()
      .put(follow(lex.mappings_url))
      .set(bearer(key))
      .set('If-Match', '"1"')
      .send({ tables: [{ ...DOC.tables[0], destination_table: uniqueName('companies') }] })
      .expect(200);
    await t.http().post(follow(lex.save_url)).set(bearer(key)).expect(200);
    return lex;
  }
  const trigger = (id: string, body?: object) =>
    t.http().post(`/v1/live-export/live-exports/${id}/trigger`).set(bearer(operate)).send(body);
  const cancel = (runId: string) =>
    t.http().post(`/v1/live-export/runs/${runId}/cancel`).set(bearer(operate));
  const schedulePatch = (id: string, body: object, key = write) =>
    t.http().patch(`/v1/live-export/live-exports/${id}/schedule`).set(bearer(key)).send(body);
  const wallClock = (iso: string, timeZone: string) =>
    new Intl.DateTimeFormat('en-GB', {
      timeZone,
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(new Date(iso));

  it('schedule: not_provisioned before the first save, 404 until the first PATCH creates it, then cadence rules', async () => {
    const lex = await draft();
    expect((await t.http().get(follow(lex.schedule_url)).set(bearer(read)).expect(409)).body.error.code).toBe(
      'not_provisioned',
    );
    expect((await schedulePatch(lex.id, { cadence: 'hourly' }).expect(409)).body.error.code).toBe(
      'not_provisioned',
    );

    const ready = await saved();
    expect(
      (await t.http().get(follow(ready.schedule_url)).set(bearer(read)).expect(404)).body.error.code,
    ).toBe('not_found');
    const created = (await schedulePatch(ready.id, { enabled: true }).expect(200)).body;
    expect(created).toMatchObject({
      live_export: ready.id,
      cadence: 'manual',
      enabled: true,
      time_of_day: null,
      timezone: null,
      next_run_at: null,
      allowed_cadences: ['manual', 'every_10_minutes', 'every_30_minutes', 'hourly', 'daily'],
    });
    expect((await t.http().get(follow(ready.schedule_url)).set(bearer(read)).expect(200)).body).toEqual(
      created,
    );

    const refusals: [object, string][] = [
      [{ cadence: 'daily' }, 'invalid_request'],
      [{ cadence: 'daily', time_of_day: '25:00' }, 'invalid_request'],
      [{ cadence: 'daily', time_of_day: '06:30', timezone: 'Mars/Olympus' }, 'invalid_request'],
      [{ cadence: 'hourly', time_of_day: '06:30' }, 'invalid_request'],
      [{ cadence: 'weekly' }, 'invalid_request'],
      [{ enabled: 'yes' }, 'invalid_request'],
    ];
    for (const [body, code] of refusals)
      expect([body, (await schedulePatch(ready.id, body)).body.error?.code]).toEqual([body, code]);

    const daily = (
      await schedulePatch(ready.id, {
        cadence: 'daily',
        time_of_day: '06:30',
        timezone: 'Europe/Berlin',
      }).expect(200)
    ).body;
    expect(daily).toMatchObject({
      cadence: 'daily',
      enabled: true,
      time_of_day: '06:30',
      timezone: 'Europe/Berlin',
    });
    expect(new Date(daily.next_run_at).getTime()).toBeGreaterThan(Date.now());
    expect(new Date(daily.next_run_at).getTime() - Date.now()).toBeLessThanOrEqual(25 * 3600_000);
    expect(wallClock(daily.next_run_at, 'Europe/Berlin')).toBe('06:30');

    // Missing fields keep their values; the switch turns slots off.
    const off = (await schedulePatch(ready.id, { enabled: false }).expect(200)).body;
    expect(off).toMatchObject({
      cadence: 'daily',
      enabled: false,
      time_of_day: '06:30',
      timezone: 'Europe/Berlin',
      next_run_at: null,
    });
    const utcDaily = (await schedulePatch(ready.id, { enabled: true, time_of_day: '23:15' }).expect(200))
      .body;
    expect(utcDaily).toMatchObject({ time_of_day: '23:15', timezone: 'Europe/Berlin' });
    expect(wallClock(utcDaily.next_run_at, 'Europe/Berlin')).toBe('23:15');

    // Leaving daily clears its time; interval cadences run on UTC boundaries.
    const tenMinutes = (await schedulePatch(ready.id, { cadence: 'every_10_minutes' }).expect(200)).body;
    expect(tenMinutes).toMatchObject({ cadence: 'every_10_minutes', time_of_day: null, timezone: null });
    const next = new Date(tenMinutes.next_run_at);
    expect([next.getUTCMinutes() % 10, next.getUTCSeconds(), next.getUTCMilliseconds()]).toEqual([0, 0, 0]);
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(10 * 60_000);
    const daylight = (await schedulePatch(ready.id, { cadence: 'daily', time_of_day: '07:00' }).expect(200))
      .body;
    expect(daylight).toMatchObject({ time_of_day: '07:00', timezone: 'UTC' });
    expect(wallClock(daylight.next_run_at, 'UTC')).toBe('07:00');

    // A plan without the cadence: plan_required naming the allowed ones.
    const proAccount = (await t.account({ plan: 'pro' })).id;
    const proKey = await t.key(proAccount, 'readwrite');
    const pro = await saved(proKey);
    expect(
      (await schedulePatch(pro.id, { cadence: 'every_10_minutes' }, proKey).expect(403)).body.error,
    ).toMatchObject({ code: 'plan_required', details: { allowed_cadences: ['manual', 'hourly', 'daily'] } });
    expect(
      (await schedulePatch(pro.id, { cadence: 'hourly' }, proKey).expect(200)).body.allowed_cadences,
    ).toEqual(['manual', 'hourly', 'daily']);
  });

  it('trigger queues one run with its Bull job; run_in_progress, unsaved_changes, force, not_provisioned', async () => {
    const lex = await draft();
    expect((await trigger(lex.id).expect(409)).body.error.code).toBe('not_provisioned');
    const ready = await saved();
    const run = (await trigger(ready.id).expect(202)).body;
    expect(run).toMatchObject({
      live_export: ready.id,
      state: 'queued',
      trigger: 'manual',
      forced: false,
      slot_at: null,
      started_at: null,
      finished_at: null,
      rows_read: 0,
      rows_written: 0,
      rows_removed: 0,
      error: null,
    });
    expect(run.id).toMatch(/^run_[0-9a-z]{20}$/);
    expect(run.cancel_url).toBe(`http://lockstep.test/v1/live-export/runs/${run.id}/cancel`);
    const job = await jobs.queue(QUEUES.liveExport).getJob(`run:${run.id}`);
    expect(job?.name).toBe('run');
    expect(job?.data).toEqual({ runId: run.id });

    const busy = (await trigger(ready.id).expect(409)).body.error;
    expect(busy).toMatchObject({ code: 'run_in_progress', details: { run: run.id } });
    expect((await trigger(ready.id, { force: 'yes' }).expect(400)).body.error.code).toBe('invalid_request');

    // Cancel the queued run: canceled at once, its job removed.
    const canceled = (await cancel(run.id).expect(200)).body;
    expect(canceled).toMatchObject({ state: 'canceled', cancel_url: null });
    expect(canceled.finished_at).not.toBeNull();
    expect(await jobs.queue(QUEUES.liveExport).getJob(`run:${run.id}`)).toBeNull();
    expect((await cancel(run.id).expect(409)).body.error.code).toBe('run_not_active');

    // Unsaved edits block a trigger unless forced.
    const current = await t.http().get(follow(ready.mappings_url)).set(bearer(read)).expect(200);
    await t
      .http()
      .put(follow(ready.mappings_url))
      .set(bearer(write))
      .set('If-Match', current.headers['etag'])
      .send({
        tables: [
          { ...current.body.tables[0], fields: [...current.body.tables[0].fields, { source_field: 'id' }] },
        ],
      })
      .expect(200);
    expect((await trigger(ready.id).expect(409)).body.error).toMatchObject({
      code: 'unsaved_changes',
      details: { mappings_version: 3, saved_version: 2 },
    });
    const forced = (await trigger(ready.id, { force: true }).expect(202)).body;
    expect(forced).toMatchObject({ state: 'queued', forced: true });
  });

  it('two concurrent triggers: exactly one run', async () => {
    const ready = await saved();
    const answers = await Promise.all([trigger(ready.id), trigger(ready.id), trigger(ready.id)]);
    expect(answers.map((res) => res.status).sort()).toEqual([202, 409, 409]);
    expect(answers.filter((res) => res.status === 409).map((res) => res.body.error.code)).toEqual([
      'run_in_progress',
      'run_in_progress',
    ]);
    expect(
      Number(
        (
          await db.query(`SELECT count(*) AS n FROM live_export_runs WHERE live_export_id = $1`, [ready.id])
        )[0].n,
      ),
    ).toBe(1);
  });

  it('cancel: a running run gets cancel_requested_at and stays running; a finished one is run_not_active', async () => {
    const ready = await saved();
    const run = (await trigger(ready.id).expect(202)).body;
    await db.query(`UPDATE live_export_runs SET state = 'running', started_at = now() WHERE id = $1`, [
      run.id,
    ]);
    const asked = (await cancel(run.id).expect(200)).body;
    expect(asked).toMatchObject({ state: 'running', finished_at: null });
    expect(asked.cancel_requested_at).not.toBeNull();
    expect((await cancel(run.id).expect(200)).body.cancel_requested_at).toBe(asked.cancel_requested_at); // asking twice keeps the first time

    await db.query(
      `UPDATE live_export_runs SET state = 'succeeded', finished_at = now(), rows_read = 12, rows_written = 10, rows_removed = 2 WHERE id = $1`,
      [run.id],
    );
    expect((await cancel(run.id).expect(409)).body.error).toMatchObject({
      code: 'run_not_active',
      details: { state: 'succeeded' },
    });
    expect(
      (await t.http().get(`/v1/live-export/runs/${run.id}`).set(bearer(read)).expect(200)).body,
    ).toMatchObject({
      state: 'succeeded',
      rows_read: 12,
      rows_written: 10,
      rows_removed: 2,
      cancel_url: null,
    });

    const failed = (await trigger(ready.id).expect(202)).body;
    await db.query(
      `UPDATE live_export_runs SET state = 'failed', finished_at = now(), error = '{"code":"live_export_invalid_structure","message":"Table gone"}' WHERE id = $1`,
      [failed.id],
    );
    expect(
      (await t.http().get(`/v1/live-export/runs/${failed.id}`).set(bearer(read)).expect(200)).body.error,
    ).toEqual({ code: 'live_export_invalid_structure', message: 'Table gone' });
    expect((await cancel(failed.id).expect(409)).body.error.code).toBe('run_not_active');
    expect(
      (await t.http().get('/v1/live-export/runs/run_00000000000000000000').set(bearer(read)).expect(404)).body
        .error.code,
    ).toBe('not_found');
    expect(
      (await t.http().get('/v1/live-export/runs/nope').set(bearer(read)).expect(404)).body.error.code,
    ).toBe('not_found');
  });

  it('runs listing: live_export required, newest first, paginated', async () => {
    const list = (query: string) => t.http().get(`/v1/live-export/runs${query}`).set(bearer(read));
    expect((await list('').expect(400)).body.error.code).toBe('missing_live_export');
    expect((await list('?live_export=').expect(400)).body.error.code).toBe('missing_live_export');
    expect((await list('?live_export=sync_00000000000000000000').expect(400)).body.error.code).toBe(
      'invalid_live_export',
    );
    expect((await list('?live_export=lex_00000000000000000000').expect(404)).body.error.code).toBe(
      'not_found',
    );

    const ready = await saved();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const run = (await trigger(ready.id).expect(202)).body;
      ids.push(run.id);
      await db.query(`UPDATE live_export_runs SET state = 'succeeded', finished_at = now() WHERE id = $1`, [
        run.id,
      ]);
    }
    const all = (await list(`?live_export=${ready.id}`).expect(200)).body;
    expect(all.data.map((run: { id: string }) => run.id)).toEqual([...ids].reverse());
    expect(all).toMatchObject({ has_more: false, next_cursor: null });
    const first = (await list(`?live_export=${ready.id}&limit=2`).expect(200)).body;
    expect(first.data.map((run: { id: string }) => run.id)).toEqual([ids[2], ids[1]]);
    const second = (
      await list(`?live_export=${ready.id}&limit=2&cursor=${encodeURIComponent(first.next_cursor)}`).expect(
        200,
      )
    ).body;
    expect(second).toMatchObject({ has_more: false, data: [expect.objectContaining({ id: ids[0] })] });
    expect((await list(`?live_export=${ready.id}&limit=26`).expect(400)).body.error.code).toBe(
      'invalid_limit',
    );
    const other = await saved();
    expect(
      (await list(`?live_export=${other.id}&cursor=${encodeURIComponent(first.next_cursor)}`).expect(400))
        .body.error.code,
    ).toBe('invalid_cursor');
    expect((await t.http().get(follow(ready.runs_url)).set(bearer(read)).expect(200)).body.data).toHaveLength(
      3,
    );
  });

  it('DELETE cancels the active run and removes the schedule and runs', async () => {
    const ready = await saved();
    await schedulePatch(ready.id, { cadence: 'hourly' }).expect(200);
    const run = (await trigger(ready.id).expect(202)).body;
    const deleted = (await t.http().delete(follow(ready.url)).set(bearer(write)).expect(200)).body;
    expect(deleted).toMatchObject({ id: ready.id, deleted: true, canceled_run: run.id });
    expect(await jobs.queue(QUEUES.liveExport).getJob(`run:${run.id}`)).toBeNull();
    const left = await db.query(
      `SELECT (SELECT count(*) FROM live_export_runs WHERE live_export_id = $1) AS runs, (SELECT count(*) FROM live_export_schedules WHERE live_export_id = $1) AS schedules`,
      [ready.id],
    );
    expect(left[0]).toEqual({ runs: '0', schedules: '0' });
    expect(
      (await t.http().get(`/v1/live-export/runs/${run.id}`).set(bearer(read)).expect(404)).body.error.code,
    ).toBe('not_found');
  });
});
