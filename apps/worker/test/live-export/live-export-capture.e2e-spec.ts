/**
 * Live export change capture end to end (the real worker process against real PostgreSQL and MariaDB): the
 * first run installs the export's own capture in the source, later runs read only the rows it logged and still
 * end with an exact mirror (inserts, updates, deletes, a key change, bulk statements). Also: a capture removed
 * and installed again in between, a source login that may not create triggers, a destination row deleted by
 * hand (restored by the periodic full compare), a table leaving the plan and a deleted export, each handled
 * as docs/live-export.md says. Run `npm run -s build` first (the worker runs from dist/).
 */
import type { ChildProcess } from 'node:child_process';
import type { Queue } from 'bull';
import type { DataSource } from 'typeorm';
import { LIVE_EXPORT_JOBS } from '@lockstep/jobs';
import { CaptureStore } from '@lockstep/persistence';
import { type My, type Pg, scratchMysql, scratchPg, store, waitFor, workerProcess } from '../support/fixture';
import {
  capturesOf,
  createAccount,
  createSavedExport,
  type ExportSpec,
  finished,
  testQueue,
  triggerRun,
  withSourceCapture,
  workerReady,
} from '../support/live-export-fixture';

let db: DataSource;
let pg: Pg;
let my: My;
let queue: Queue;
let worker: ChildProcess;
let accountId: string;

const run = async (exportId: string) => finished(db, await triggerRun(db, queue, accountId, exportId));

beforeAll(async () => {
  db = await store();
  pg = await scratchPg(`
    CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty integer);
    INSERT INTO items SELECT g, 'item ' || g, g % 10 FROM generate_series(1, 2000) g;
    CREATE TABLE extra (id integer PRIMARY KEY, label text);
    INSERT INTO extra VALUES (1, 'one'), (2, 'two');`);
  my = await scratchMysql([
    `CREATE TABLE members (id INT PRIMARY KEY, email VARCHAR(100) NOT NULL, score INT)`,
    `INSERT INTO members (id, email, score) SELECT seq, CONCAT('m', seq, '@example.com'), seq % 100 FROM seq_1_to_3000`,
  ]);
  accountId = await createAccount(db);
  const test = testQueue();
  queue = test.queue;
  worker = workerProcess(accountId, { QUEUE_PREFIX: test.prefix, LIVE_EXPORT_BATCH_ROWS: '500' });
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

const membersExport = (destinationTable: string): ExportSpec => ({
  source: { connector: 'mysql', base: my.database },
  destination: { connector: 'postgres', location: pg.schema },
  tables: [
    {
      sourceTable: 'members',
      destinationTable,
      columns: [
        { sourceField: 'email', column: 'email', typeClass: 'text', typeDetails: { max_length: 100 } },
        { sourceField: 'score', column: 'score', typeClass: 'integer' },
      ],
    },
  ],
});

const itemsTable = (destinationTable: string) => ({
  sourceTable: 'items',
  destinationTable,
  columns: [
    { sourceField: 'name', column: 'name', typeClass: 'text' as const },
    { sourceField: 'qty', column: 'qty', typeClass: 'integer' as const },
  ],
});

/** The destination rows as `id|email|score` lines, and the source's, for an exact comparison. */
async function membersMirror(table: string): Promise<{ source: string[]; destination: string[] }> {
  const source = await my.sql<{ line: string }>(
    `SELECT CONCAT_WS('|', id, email, COALESCE(score, 'null')) AS line FROM members ORDER BY id`,
  );
  const destination = await pg.sql<{ line: string }>(
    `SELECT concat_ws('|', lockstep_source_id, email, coalesce(score::text, 'null')) AS line FROM ${pg.schema}.${table} WHERE lockstep_source_id IS NOT NULL ORDER BY lockstep_source_id::int`,
  );
  return { source: source.map((row) => row.line), destination: destination.map((row) => row.line) };
}

async function itemsMirror(table: string): Promise<{ source: string[]; destination: string[] }> {
  const source = await pg.sql<{ line: string }>(
    `SELECT concat_ws('|', id, name, coalesce(qty::text, 'null')) AS line FROM ${pg.schema}.items ORDER BY id`,
  );
  const destination = await my.sql<{ line: string }>(
    `SELECT CONCAT_WS('|', lockstep_source_id, name, COALESCE(qty, 'null')) AS line FROM ${table} WHERE lockstep_source_id IS NOT NULL ORDER BY CAST(lockstep_source_id AS UNSIGNED)`,
  );
  return { source: source.map((row) => row.line), destination: destination.map((row) => row.line) };
}

describe('live export change capture (worker process)', () => {
  it('MariaDB -> PostgreSQL: the first run installs the capture; later runs read only the logged rows and keep an exact mirror', async () => {
    const spec = membersExport('members_copy');
    const exportId = await createSavedExport(db, accountId, spec);
    expect(await run(exportId)).toMatchObject({
      state: 'succeeded',
      rows_read: '3000',
      rows_written: '3000',
    });
    const [capture] = await capturesOf(db, exportId);
    expect(capture).toMatchObject({
      source_table: 'members',
      destination_table: 'members_copy',
      released_at: null,
    });
    expect(await withSourceCapture(spec.source, (layer) => layer.sourceCaptureToken('members'))).toBe(
      capture!.token,
    );

    // 3 updates, 2 inserts, 2 deletes, one key change (id 10 -> 5010: a delete of 10 and an insert of 5010).
    await my.sql(`UPDATE members SET score = 999 WHERE id IN (1, 2, 3)`);
    await my.sql(
      `INSERT INTO members (id, email, score) VALUES (4001, 'new1@example.com', NULL), (4002, 'new2@example.com', 7)`,
    );
    await my.sql(`DELETE FROM members WHERE id IN (20, 21)`);
    await my.sql(`UPDATE members SET id = 5010 WHERE id = 10`);
    const second = await run(exportId);
    // Only the 6 rows that exist now were read; 10, 20 and 21 left the source.
    expect(second).toMatchObject({
      state: 'succeeded',
      rows_read: '6',
      rows_written: '6',
      rows_removed: '3',
    });
    const mirror = await membersMirror('members_copy');
    expect(mirror.destination).toEqual(mirror.source);

    // A bulk statement and a rolled-back one.
    await my.sql(`UPDATE members SET score = score + 1 WHERE id <= 1500`);
    await my.sql(`START TRANSACTION`);
    await my.sql(`UPDATE members SET email = 'rolled back' WHERE id = 2000`);
    await my.sql(`ROLLBACK`);
    const third = await run(exportId);
    expect(third).toMatchObject({ state: 'succeeded', rows_written: '1497', rows_removed: '0' }); // ids 1-1500 less 10 (moved to 5010), 20 and 21
    const after = await membersMirror('members_copy');
    expect(after.destination).toEqual(after.source);

    // Nothing changed: nothing read, nothing written.
    expect(await run(exportId)).toMatchObject({
      state: 'succeeded',
      rows_read: '0',
      rows_written: '0',
      rows_removed: '0',
    });
  });

  it('PostgreSQL -> MariaDB: statement-sized changes (INSERT ... SELECT, UPDATE of every row, DELETE of a range) reach the mirror', async () => {
    const spec: ExportSpec = {
      source: { connector: 'postgres', base: pg.schema },
      destination: { connector: 'mysql', location: my.database },
      tables: [itemsTable('items_copy')],
    };
    const exportId = await createSavedExport(db, accountId, spec);
    expect(await run(exportId)).toMatchObject({ state: 'succeeded', rows_written: '2000' });
    await pg.sql(
      `INSERT INTO ${pg.schema}.items SELECT g, 'bulk ' || g, NULL FROM generate_series(2001, 2500) g`,
    );
    await pg.sql(`DELETE FROM ${pg.schema}.items WHERE id BETWEEN 100 AND 199`);
    await pg.sql(`UPDATE ${pg.schema}.items SET id = id + 10000 WHERE id BETWEEN 300 AND 309`);
    const second = await run(exportId);
    expect(second).toMatchObject({
      state: 'succeeded',
      rows_read: '510',
      rows_written: '510',
      rows_removed: '110',
    });
    let mirror = await itemsMirror('items_copy');
    expect(mirror.destination).toEqual(mirror.source);

    await pg.sql(`UPDATE ${pg.schema}.items SET qty = coalesce(qty, 0) + 1`);
    expect(await run(exportId)).toMatchObject({
      state: 'succeeded',
      rows_written: '2400',
      rows_removed: '0',
    });
    mirror = await itemsMirror('items_copy');
    expect(mirror.destination).toEqual(mirror.source);
  });

  it('a capture removed and installed again in between is noticed: the run compares everything and repairs what the log missed', async () => {
    const spec = membersExport('members_reinstalled');
    const exportId = await createSavedExport(db, accountId, spec);
    expect(await run(exportId)).toMatchObject({ state: 'succeeded' });
    const before = (await capturesOf(db, exportId))[0]!.token;
    // Another party removes the capture; a change lands unlogged; the capture is installed again.
    await withSourceCapture(spec.source, (layer) => layer.stopSourceCapture('members'));
    await my.sql(`UPDATE members SET email = 'unlogged@example.com' WHERE id = 1`);
    const again = await withSourceCapture(spec.source, (layer) => layer.startSourceCapture('members'));
    expect(again!.token).not.toBe(before);
    const repaired = await run(exportId);
    expect(repaired).toMatchObject({ state: 'succeeded', rows_written: '1' });
    expect(Number(repaired.rows_read)).toBeGreaterThan(2000); // a full compare
    expect((await capturesOf(db, exportId))[0]!.token).toBe(again!.token);
    const mirror = await membersMirror('members_reinstalled');
    expect(mirror.destination).toEqual(mirror.source);
  });

  it('a destination row deleted by hand is restored by the periodic full compare, not by a run that reads only the log', async () => {
    const spec = membersExport('members_edited');
    const exportId = await createSavedExport(db, accountId, spec);
    expect(await run(exportId)).toMatchObject({ state: 'succeeded' });
    await pg.sql(`DELETE FROM ${pg.schema}.members_edited WHERE lockstep_source_id = '5'`);
    expect(await run(exportId)).toMatchObject({ state: 'succeeded', rows_read: '0', rows_written: '0' });
    expect(
      await pg.sql(`SELECT email FROM ${pg.schema}.members_edited WHERE lockstep_source_id = '5'`),
    ).toEqual([]);
    // The last full compare was LIVE_EXPORT_FULL_COMPARE_HOURS (24) ago.
    await db.query(
      `UPDATE live_export_captures SET full_compare_at = now() - interval '25 hours' WHERE live_export_id = $1`,
      [exportId],
    );
    const full = await run(exportId);
    expect(full).toMatchObject({ state: 'succeeded', rows_written: '1' });
    expect(
      await pg.sql(`SELECT email FROM ${pg.schema}.members_edited WHERE lockstep_source_id = '5'`),
    ).toEqual([{ email: 'm5@example.com' }]);
    expect((await capturesOf(db, exportId))[0]!.full_compare_at.getTime()).toBeGreaterThan(
      Date.now() - 60_000,
    );
  });

  it('a source login without the TRIGGER privilege gets no capture: every run compares all rows and the mirror stays exact', async () => {
    const user = `lx_${Date.now().toString(36)}`;
    await my.sql(`CREATE USER '${user}'@'%' IDENTIFIED BY 'pw'`);
    await my.sql(`GRANT SELECT ON \`${my.database}\`.* TO '${user}'@'%'`);
    try {
      const spec = membersExport('members_no_trigger');
      spec.source.url = `mysql://${user}:pw@127.0.0.1:3306`;
      const exportId = await createSavedExport(db, accountId, spec);
      expect(await run(exportId)).toMatchObject({ state: 'succeeded', error: null });
      expect(await capturesOf(db, exportId)).toEqual([]);
      await my.sql(`UPDATE members SET score = -1 WHERE id = 7`);
      const second = await run(exportId);
      expect(second).toMatchObject({ state: 'succeeded', rows_written: '1' });
      expect(Number(second.rows_read)).toBeGreaterThan(2000); // every row compared
      const mirror = await membersMirror('members_no_trigger');
      expect(mirror.destination).toEqual(mirror.source);
    } finally {
      await my.sql(`DROP USER '${user}'@'%'`);
    }
  });

  it('a table that leaves the plan loses its capture; a deleted export has its capture removed from the source', async () => {
    const spec: ExportSpec = {
      source: { connector: 'postgres', base: pg.schema },
      destination: { connector: 'postgres', location: pg.schema },
      tables: [
        itemsTable('items_pg_copy'),
        {
          sourceTable: 'extra',
          destinationTable: 'extra_copy',
          columns: [{ sourceField: 'label', column: 'label', typeClass: 'text' }],
        },
      ],
    };
    const exportId = await createSavedExport(db, accountId, spec);
    expect(await run(exportId)).toMatchObject({ state: 'succeeded' });
    expect((await capturesOf(db, exportId)).map((row) => row.source_table)).toEqual(['extra', 'items']);
    expect(await withSourceCapture(spec.source, (layer) => layer.sourceCaptureToken('extra'))).not.toBeNull();

    // The plan (as a save leaves it) no longer maps `extra`.
    await db.query(
      `UPDATE live_exports SET plan = jsonb_set(plan, '{tables}', (plan->'tables') - 1) WHERE id = $1`,
      [exportId],
    );
    expect(await run(exportId)).toMatchObject({ state: 'succeeded' });
    expect((await capturesOf(db, exportId)).map((row) => row.source_table)).toEqual(['items']);
    expect(await withSourceCapture(spec.source, (layer) => layer.sourceCaptureToken('extra'))).toBeNull();

    // Deleting the export releases its captures (as the API's delete does) and the worker removes them.
    await db.transaction(async (m) => {
      await new CaptureStore(m).releaseAll(exportId);
      await m.query(`DELETE FROM live_exports WHERE id = $1`, [exportId]);
    });
    expect((await capturesOf(db, exportId))[0]).toMatchObject({
      source_table: 'items',
      released_at: expect.any(Date),
    });
    await queue.add(
      LIVE_EXPORT_JOBS.releaseCaptures,
      { liveExportId: exportId },
      { jobId: `release:${exportId}` },
    );
    await waitFor(
      'the released capture to be removed',
      async () => ((await capturesOf(db, exportId)).length === 0 ? true : null),
      30_000,
      100,
    );
    expect(await withSourceCapture(spec.source, (layer) => layer.sourceCaptureToken('items'))).toBeNull();
  });
});
