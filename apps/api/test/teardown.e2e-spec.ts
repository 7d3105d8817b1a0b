/**
 * Deleting a sync removes what Lockstep installed in both apps and keeps the data: a real sync between
 * PostgreSQL (left) and MariaDB (right), carried by the real worker process, is deleted over the API; the
 * worker's teardown then leaves the tables as they were before the sync (their rows, plus the rows the sync
 * copied), without triggers, the `lockstep_id` columns or MariaDB's change log.
 */
import { liveSync, type LiveSync, waitUntil } from './support/live-sync';
import { bearer, createTestApp, type TestApp } from './support/test-app';

jest.setTimeout(150_000);

describe('deleting a sync', () => {
  let t: TestApp;
  let live: LiveSync;

  beforeAll(async () => {
    t = await createTestApp();
    live = await liveSync(t, {
      pgSetup: `
        CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL);
        INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace');
      `,
      mySetup: [
        'CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL)',
        "INSERT INTO contacts VALUES (3, 'Linus')",
      ],
      tables: [
        {
          left_table: 'people',
          right_table: 'contacts',
          direction: 'two_way',
          fields: [
            { left_field: 'id', right_field: 'id' },
            { left_field: 'name', right_field: 'name' },
          ],
        },
      ],
    });
  });
  afterAll(async () => {
    await live?.close();
    await t?.close();
  });

  const myRows = async (sql: string, params: unknown[] = []) =>
    (await live.my.sql(sql, params)) as Record<string, unknown>[];
  const myTables = async () =>
    (
      await myRows(
        'SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME',
        [live.my.database],
      )
    ).map((row) => row.name);
  const myColumns = async (table: string) =>
    (
      await myRows(
        'SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
        [live.my.database, table],
      )
    ).map((row) => row.name);
  const myTriggers = async () =>
    (
      await myRows('SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?', [
        live.my.database,
      ])
    ).length;
  const pgTriggers = async () =>
    Number(
      (
        await live.pg.sql(
          `SELECT count(*) AS n FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT t.tgisinternal`,
          [live.pg.schema],
        )
      )[0]!['n'],
    );

  const pgColumns = async () =>
    (
      await live.pg.sql(
        `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'people' ORDER BY ordinal_position`,
        [live.pg.schema],
      )
    ).map((row) => row['name']);

  // PostgreSQL's change log is one per database (the `lockstep` schema), shared here with other tests' syncs:
  // its removal is covered by the connector's teardown test, in a database of its own.
  it('removes the triggers, the lockstep_id columns and the change log from MariaDB and PostgreSQL; the rows stay', async () => {
    // What the sync installed while it ran.
    expect(await myTables()).toEqual(['contacts', 'lockstep_capture_readers', 'lockstep_change_log']);
    expect(await myColumns('contacts')).toEqual(['id', 'name', 'lockstep_id']);
    expect(await myTriggers()).toBe(3);
    expect(await pgTriggers()).toBeGreaterThan(0);
    expect(await pgColumns()).toEqual(['id', 'name', 'lockstep_id']);

    const deleted = await t.http().delete(`/v1/sync/syncs/${live.id}`).set(bearer(live.keys.write));
    expect(deleted.status).toBe(200);
    await waitUntil(
      'the worker tore the sync down',
      async () => (await live.db.query(`SELECT id FROM syncs WHERE id = $1`, [live.id])).length === 0,
      60_000,
    );

    expect(await myTables()).toEqual(['contacts']);
    expect(await myColumns('contacts')).toEqual(['id', 'name']);
    expect(await myTriggers()).toBe(0);
    expect(await myRows('SELECT id, name FROM contacts ORDER BY id')).toEqual([
      { id: 1, name: 'Ada' },
      { id: 2, name: 'Grace' },
      { id: 3, name: 'Linus' },
    ]);
    expect(await pgTriggers()).toBe(0);
    expect(await pgColumns()).toEqual(['id', 'name']);
    expect(await live.pg.sql('SELECT id, name FROM people ORDER BY id')).toEqual([
      { id: 1, name: 'Ada' },
      { id: 2, name: 'Grace' },
      { id: 3, name: 'Linus' },
    ]);
  });
});
