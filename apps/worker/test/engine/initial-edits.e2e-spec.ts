/**
 * No outside change made during the initial sync is lost (issue 30): while the initial sync copies a table
 * into an empty one, another application updates copied rows of the target, inserts rows there and deletes
 * copied rows. Once the initial sync is done, every one of those edits reaches the source, and both sides end
 * equal. Both directions: the PostgreSQL target (statement triggers) and the MariaDB one (row triggers).
 */
import type { INestApplicationContext } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  createStartedSync,
  inProcessWorker,
  type My,
  phase,
  type Pg,
  scratchMysql,
  scratchPg,
  store,
  waitFor,
} from '../support/fixture';

jest.setTimeout(240_000);

const ROWS = 12_000;
/** Small pages, so that the copy takes many of them and the edits land between them. */
const WORKER_ENV = { ENGINE_PAGE_SIZE: '200', ENGINE_WRITE_BATCH: '100' };

interface Row {
  id: number;
  name: string;
  note: string | null;
}

describe('engine: outside edits of the target during the initial sync', () => {
  let db: DataSource;
  let pg: Pg;
  let my: My;
  let worker: INestApplicationContext | null = null;

  beforeAll(async () => {
    db = await store();
  });
  afterAll(async () => {
    await db.destroy();
  });
  beforeEach(async () => {
    pg = await scratchPg(`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, note text)`);
    my = await scratchMysql([
      `CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, note TEXT)`,
    ]);
  });
  afterEach(async () => {
    await worker?.close();
    worker = null;
    await pg.drop();
    await my.drop();
  });

  const sides = () => ({
    postgres: {
      rows: () => pg.sql<Row>(`SELECT id, name, note FROM items ORDER BY id`),
      count: async () => Number((await pg.sql<{ n: string }>(`SELECT count(*) AS n FROM items`))[0]!.n),
      sql: (text: string) => pg.sql(text),
    },
    mysql: {
      rows: async () =>
        (await my.sql<Row>(`SELECT id, name, note FROM items ORDER BY id`)).map((row) => ({
          id: Number(row.id),
          name: row.name,
          note: row.note,
        })),
      count: async () => Number((await my.sql<{ n: number }>(`SELECT count(*) AS n FROM items`))[0]!.n),
      sql: (text: string) => my.sql(text),
    },
  });

  async function copyWithEdits(source: 'postgres' | 'mysql'): Promise<void> {
    const target = source === 'postgres' ? 'mysql' : 'postgres';
    if (source === 'postgres')
      await pg.sql(`INSERT INTO items SELECT g, 'name ' || g, NULL FROM generate_series(1, ${ROWS}) g`);
    else await my.sql(`INSERT INTO items SELECT seq, CONCAT('name ', seq), NULL FROM seq_1_to_${ROWS}`);
    const { syncId, accountId } = await createStartedSync(db, {
      left: { connector: 'postgres', base: pg.schema },
      right: { connector: 'mysql', base: my.database },
      pairs: [
        {
          left: 'items',
          right: 'items',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['note', 'note'],
          ],
        },
      ],
      deleteApproval: 'auto_approve',
    });
    worker = await inProcessWorker(accountId, WORKER_ENV);
    const on = sides();
    // The copy is under way: some rows are in the target, far from all.
    const copied = await waitFor(
      'the first pages copied',
      async () => {
        const n = await on[target].count();
        return n >= 1000 ? n : null;
      },
      120_000,
      20,
    );
    // Another application edits the target: copied rows updated and deleted, new rows inserted.
    await on[target].sql(`UPDATE items SET note = 'edited on the target' WHERE id BETWEEN 1 AND 20`);
    await on[target].sql(`DELETE FROM items WHERE id BETWEEN 31 AND 35`);
    await on[target].sql(
      `INSERT INTO items (id, name, note) VALUES ${Array.from({ length: 10 }, (_, k) => `(${900_001 + k}, 'inserted ${k}', 'new on the target')`).join(', ')}`,
    );
    const atEdit = { phase: await phase(db, syncId), count: await on[target].count() };
    expect(copied).toBeLessThan(ROWS);
    // The edits raced the copy (it was still running after them), so they were not made after it.
    expect(atEdit.phase).toBe('running');
    expect(atEdit.count).toBeLessThan(ROWS);

    await waitFor('initial sync done', async () => (await phase(db, syncId)) === 'done', 180_000);
    const expected: Row[] = [];
    for (let id = 1; id <= ROWS; id += 1) {
      if (id >= 31 && id <= 35) continue;
      expected.push({ id, name: `name ${id}`, note: id <= 20 ? 'edited on the target' : null });
    }
    for (let k = 0; k < 10; k += 1)
      expected.push({ id: 900_001 + k, name: `inserted ${k}`, note: 'new on the target' });
    // Every edit reaches the source (through the change feed after the initial sync), and nothing else moves.
    await waitFor(
      'the edits on the source',
      async () => JSON.stringify(await on[source].rows()) === JSON.stringify(expected),
      60_000,
      250,
    );
    expect(await on[target].rows()).toEqual(expected);
    expect(await on[source].rows()).toEqual(expected);
    // One link per record, none twice; the deletes' commits land just after their app writes.
    const links = async () =>
      (
        await db.query(
          `SELECT count(*)::int AS n, count(DISTINCT left_remote_id)::int AS l, count(DISTINCT right_remote_id)::int AS r
             FROM record_links WHERE sync_id = $1 AND NOT left_deleted AND NOT right_deleted`,
          [syncId],
        )
      )[0] as { n: number; l: number; r: number };
    const want = { n: expected.length, l: expected.length, r: expected.length };
    await waitFor(
      'the deletes committed',
      async () => JSON.stringify(await links()) === JSON.stringify(want),
    );
    expect(await links()).toEqual(want);
  }

  it('PostgreSQL -> MariaDB: updates, deletes and inserts made on the MariaDB target while it is copied all reach PostgreSQL', async () => {
    await copyWithEdits('postgres');
  });

  it('MariaDB -> PostgreSQL: updates, deletes and inserts made on the PostgreSQL target while it is copied all reach MariaDB', async () => {
    await copyWithEdits('mysql');
  });
});
