/**
 * Live export runs end to end: the real worker process (dist/apps/worker/src/main.js) against real
 * PostgreSQL and MariaDB: first runs both ways mirror the source, a second run converges and writes only what
 * changed, rows the export did not create are never touched, a table altered so it cannot be written fails the
 * run with `live_export_invalid_structure`, and cancel stops a running copy within a second with every row as
 * before or as after. Run `npm run -s build` first (the worker runs from dist/).
 */
import type { ChildProcess } from 'node:child_process';
import type { Queue } from 'bull';
import type { DataSource } from 'typeorm';
import type { LiveExportPlanTable } from '@lockstep/domain';
import { Client } from 'pg';
import {
  type My,
  PG_URL,
  type Pg,
  scratchMysql,
  scratchPg,
  store,
  waitFor,
  workerProcess,
} from '../support/fixture';
import {
  createAccount,
  createSavedExport,
  finished,
  testQueue,
  triggerRun,
  workerReady,
} from '../support/live-export-fixture';

let db: DataSource;
let pg: Pg;
let my: My;
let queue: Queue;
let worker: ChildProcess;
let accountId: string;

const PG_SOURCE = `
  CREATE TABLE products (id bigint PRIMARY KEY, name text NOT NULL, price numeric(10,2), qty integer, active boolean,
    added date, seen timestamptz, doc jsonb, tags text[]);
  INSERT INTO products SELECT g, 'product ' || g, (g * 1.25)::numeric(10,2), g % 7, g % 2 = 0, date '2024-01-01' + g,
    timestamptz '2024-01-01 00:00:00+00' + g * interval '1 minute', jsonb_build_object('n', g), ARRAY['t' || g, 'x'] FROM generate_series(1, 500) g;`;

const productColumns = (
  typeClass: (name: string) => LiveExportPlanTable['columns'][number]['typeClass'],
): LiveExportPlanTable['columns'] =>
  ['name', 'price', 'qty', 'active', 'added', 'seen', 'doc'].map((name) => ({
    sourceField: name,
    column: name === 'name' ? 'title' : name,
    typeClass: typeClass(name),
    ...(name === 'price' ? { typeDetails: { precision: 10, scale: 2 } } : {}),
  }));
const CLASSES: Record<string, LiveExportPlanTable['columns'][number]['typeClass']> = {
  name: 'text',
  price: 'decimal',
  qty: 'integer',
  active: 'boolean',
  added: 'date',
  seen: 'timestamp',
  doc: 'json',
  tags: 'array',
};

beforeAll(async () => {
  db = await store();
  pg = await scratchPg(PG_SOURCE);
  my = await scratchMysql([
    `CREATE TABLE people (id INT PRIMARY KEY, email VARCHAR(100) NOT NULL, score DECIMAL(8,3), born DATE, joined DATETIME(6), vip TINYINT(1), note TEXT)`,
    `INSERT INTO people VALUES (1, 'a@example.com', 1.5, '1990-05-01', '2024-01-02 03:04:05.123456', 1, 'first'),
       (2, 'b@example.com', NULL, NULL, NULL, 0, NULL), (3, 'c@example.com', -2.25, '2000-02-29', '2024-06-30 23:59:59.000000', NULL, 'tab\\there')`,
    `CREATE TABLE big (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(20) NOT NULL)`,
  ]);
  accountId = await createAccount(db);
  const test = testQueue();
  queue = test.queue;
  worker = workerProcess(accountId, { QUEUE_PREFIX: test.prefix, LIVE_EXPORT_BATCH_ROWS: '200' });
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

describe('live export runs (worker process)', () => {
  it('PostgreSQL -> MariaDB: a first run mirrors the source; a second run writes only changed rows and removes deleted ones; foreign rows stay', async () => {
    const exportId = await createSavedExport(db, accountId, {
      source: { connector: 'postgres', base: pg.schema },
      destination: { connector: 'mysql', location: my.database },
      tables: [
        {
          sourceTable: 'products',
          destinationTable: 'products_copy',
          columns: productColumns((name) => CLASSES[name]!),
        },
      ],
    });
    await my.sql(`INSERT INTO products_copy (title) VALUES ('not exported')`);
    const first = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(first).toMatchObject({
      state: 'succeeded',
      rows_read: '500',
      rows_written: '500',
      rows_removed: '0',
      error: null,
    });
    const copied = await my.sql<Record<string, unknown>>(
      `SELECT lockstep_source_id AS id, title, CAST(price AS CHAR) AS price, qty, active, CAST(added AS CHAR) AS added, CAST(seen AS CHAR) AS seen, doc
         FROM products_copy WHERE lockstep_source_id IN ('1', '2', '500') ORDER BY qty`,
    );
    expect(copied).toEqual([
      {
        id: '1',
        title: 'product 1',
        price: '1.25',
        qty: 1,
        active: 0,
        added: '2024-01-02',
        seen: '2024-01-01 00:01:00.000000',
        doc: { n: 1 },
      },
      {
        id: '2',
        title: 'product 2',
        price: '2.50',
        qty: 2,
        active: 1,
        added: '2024-01-03',
        seen: '2024-01-01 00:02:00.000000',
        doc: { n: 2 },
      },
      {
        id: '500',
        title: 'product 500',
        price: '625.00',
        qty: 3,
        active: 1,
        added: '2025-05-15',
        seen: '2024-01-01 08:20:00.000000',
        doc: { n: 500 },
      },
    ]);
    // Changes in the source: 5 updates (one of them to NULL), 2 inserts, 3 deletes.
    await pg.sql(`UPDATE products SET name = name || ' v2' WHERE id IN (10, 20, 30, 40)`);
    await pg.sql(`UPDATE products SET price = NULL WHERE id = 50`);
    await pg.sql(`INSERT INTO products (id, name, qty) VALUES (1001, 'new one', 1), (1002, 'new two', 2)`);
    await pg.sql(`DELETE FROM products WHERE id IN (7, 8, 9)`);
    const second = await finished(db, await triggerRun(db, queue, accountId, exportId));
    // Read through the change capture the first run installed: only the 7 changed rows that still exist.
    expect(second).toMatchObject({
      state: 'succeeded',
      rows_read: '7',
      rows_written: '7',
      rows_removed: '3',
    });
    const [{ count }] = await my.sql<{ count: number }>(
      `SELECT COUNT(*) AS count FROM products_copy WHERE lockstep_source_id IS NOT NULL`,
    );
    expect(Number(count)).toBe(499);
    expect(
      await my.sql(
        `SELECT title FROM products_copy WHERE lockstep_source_id IN ('10', '1001') ORDER BY title`,
      ),
    ).toEqual([{ title: 'new one' }, { title: 'product 10 v2' }]);
    expect(await my.sql(`SELECT price FROM products_copy WHERE lockstep_source_id = '50'`)).toEqual([
      { price: null },
    ]);
    expect(await my.sql(`SELECT title FROM products_copy WHERE lockstep_source_id IS NULL`)).toEqual([
      { title: 'not exported' },
    ]);
    // Nothing changed: a third run writes nothing.
    const third = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(third).toMatchObject({ state: 'succeeded', rows_written: '0', rows_removed: '0' });
  });

  it('MariaDB -> PostgreSQL: a first run mirrors values and types; a second run converges', async () => {
    const exportId = await createSavedExport(db, accountId, {
      source: { connector: 'mysql', base: my.database },
      destination: { connector: 'postgres', location: pg.schema },
      tables: [
        {
          sourceTable: 'people',
          destinationTable: 'people_copy',
          columns: [
            { sourceField: 'email', column: 'email', typeClass: 'text', typeDetails: { max_length: 100 } },
            {
              sourceField: 'score',
              column: 'score',
              typeClass: 'decimal',
              typeDetails: { precision: 8, scale: 3 },
            },
            { sourceField: 'born', column: 'born', typeClass: 'date' },
            { sourceField: 'joined', column: 'joined', typeClass: 'datetime' },
            { sourceField: 'vip', column: 'vip', typeClass: 'boolean' },
            { sourceField: 'note', column: 'note', typeClass: 'text' },
          ],
        },
      ],
    });
    const first = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(first).toMatchObject({ state: 'succeeded', rows_read: '3', rows_written: '3' });
    const types = await pg.sql(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'people_copy' ORDER BY ordinal_position`,
      [pg.schema],
    );
    expect(types).toEqual([
      { column_name: 'lockstep_source_id', data_type: 'text' },
      { column_name: 'lockstep_row_hash', data_type: 'text' },
      { column_name: 'email', data_type: 'text' },
      { column_name: 'score', data_type: 'numeric' },
      { column_name: 'born', data_type: 'date' },
      { column_name: 'joined', data_type: 'timestamp without time zone' },
      { column_name: 'vip', data_type: 'boolean' },
      { column_name: 'note', data_type: 'text' },
    ]);
    const rows = await pg.sql(
      `SELECT lockstep_source_id AS id, email, score::text, born::text, joined::text, vip, note FROM ${pg.schema}.people_copy ORDER BY lockstep_source_id`,
    );
    expect(rows).toEqual([
      {
        id: '1',
        email: 'a@example.com',
        score: '1.500',
        born: '1990-05-01',
        joined: '2024-01-02 03:04:05.123456',
        vip: true,
        note: 'first',
      },
      { id: '2', email: 'b@example.com', score: null, born: null, joined: null, vip: false, note: null },
      {
        id: '3',
        email: 'c@example.com',
        score: '-2.250',
        born: '2000-02-29',
        joined: '2024-06-30 23:59:59',
        vip: null,
        note: 'tab\there',
      },
    ]);
    await my.sql(`UPDATE people SET email = 'changed@example.com' WHERE id = 2`);
    await my.sql(`DELETE FROM people WHERE id = 3`);
    const second = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(second).toMatchObject({ state: 'succeeded', rows_written: '1', rows_removed: '1' });
    expect(
      await pg.sql(`SELECT lockstep_source_id AS id, email FROM ${pg.schema}.people_copy ORDER BY 1`),
    ).toEqual([
      { id: '1', email: 'a@example.com' },
      { id: '2', email: 'changed@example.com' },
    ]);
  });

  it('fails with live_export_invalid_structure when the destination table was changed so it cannot be written, and recovers once repaired', async () => {
    const exportId = await createSavedExport(db, accountId, {
      source: { connector: 'postgres', base: pg.schema },
      destination: { connector: 'postgres', location: pg.schema },
      tables: [
        {
          sourceTable: 'products',
          destinationTable: 'products_mirror',
          columns: productColumns((name) => CLASSES[name]!),
        },
      ],
    });
    await pg.sql(`ALTER TABLE ${pg.schema}.products_mirror DROP COLUMN qty`);
    const failed = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(failed.state).toBe('failed');
    expect(failed.error).toEqual({
      code: 'live_export_invalid_structure',
      message: 'Column "qty" of "products_mirror" no longer exists',
    });
    await pg.sql(`ALTER TABLE ${pg.schema}.products_mirror ADD COLUMN qty bigint`);
    const repaired = await finished(db, await triggerRun(db, queue, accountId, exportId));
    const [{ count }] = await pg.sql<{ count: string }>(
      `SELECT count(*)::text AS count FROM ${pg.schema}.products`,
    );
    expect(repaired).toMatchObject({ state: 'succeeded', rows_written: count });
  });

  it('cancel stops a running copy within a second; every row is as before or as after', async () => {
    await my.sql(`INSERT INTO big (id, a, b) SELECT seq, seq, 'before' FROM seq_1_to_60000`);
    const exportId = await createSavedExport(db, accountId, {
      source: { connector: 'mysql', base: my.database },
      destination: { connector: 'postgres', location: pg.schema },
      tables: [
        {
          sourceTable: 'big',
          destinationTable: 'big_copy',
          columns: [
            { sourceField: 'a', column: 'a', typeClass: 'integer' },
            { sourceField: 'b', column: 'b', typeClass: 'text' },
          ],
        },
      ],
    });
    expect(await finished(db, await triggerRun(db, queue, accountId, exportId))).toMatchObject({
      state: 'succeeded',
      rows_written: '60000',
    });
    // Both columns change together; a torn row would have one changed and not the other.
    await my.sql(`UPDATE big SET a = a + 1000000, b = 'after'`);
    // Another transaction holds a row of the second half locked, so the run is certainly still running (its
    // batch waits for that row) when it is canceled, however fast the machine copies: the cancel must also stop a
    // statement that is waiting.
    const holder = new Client({ connectionString: PG_URL });
    await holder.connect();
    let run: Awaited<ReturnType<typeof finished>>;
    let tookMs: number;
    try {
      await holder.query('BEGIN');
      await holder.query(
        `SELECT 1 FROM ${pg.schema}.big_copy WHERE lockstep_source_id::text = '45000' FOR UPDATE`,
      );
      const runId = await triggerRun(db, queue, accountId, exportId);
      await waitFor(
        'the run to wait for the locked row',
        async () =>
          (
            await pg.sql(
              `SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%big_copy%'`,
            )
          ).length > 0 || null,
        30_000,
        20,
      );
      await db.query(`UPDATE live_export_runs SET cancel_requested_at = now() WHERE id = $1`, [runId]);
      const asked = Date.now();
      run = await finished(db, runId, 5000);
      tookMs = Date.now() - asked;
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    expect(run.state).toBe('canceled');
    expect(tookMs).toBeLessThan(1000);
    const states = await pg.sql<{ a_after: boolean; b: string; count: string }>(
      `SELECT a >= 1000000 AS a_after, b, count(*)::text AS count FROM ${pg.schema}.big_copy GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    // Only whole rows: (old a, 'before') or (new a, 'after'); some of each, since the run stopped midway.
    expect(states.map((state) => [state.a_after, state.b])).toEqual([
      [false, 'before'],
      [true, 'after'],
    ]);
    expect(states.reduce((sum, state) => sum + Number(state.count), 0)).toBe(60000);
    // The next run completes the copy.
    const next = await finished(db, await triggerRun(db, queue, accountId, exportId));
    expect(next.state).toBe('succeeded');
    expect(Number(next.rows_written)).toBe(60000 - Number(states[1]!.count));
    expect(
      await pg.sql(`SELECT count(*)::int AS count FROM ${pg.schema}.big_copy WHERE b = 'after'`),
    ).toEqual([{ count: 60000 }]);
  });
});
