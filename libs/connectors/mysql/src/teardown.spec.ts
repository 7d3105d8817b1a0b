/**
 * Teardown (`unprepareTable`) against the real server: what table setup installed goes once no sync reads the
 * table (triggers, the `lockstep_id` column it added, and the change log and readers table once no table of the
 * database is read), while the rows, the application's columns, an application's own `lockstep_id` and the key
 * of a table Lockstep created stay.
 */
import { DEFAULT_EGRESS_POLICY } from '@lockstep/connectors-core';
import type { MysqlConnection } from './connection';
import { openMysqlConnection } from './declaration';
import { createTestDatabase, TEST_MYSQL_URL, type TestDatabase } from './test/server';

const context = { egress: DEFAULT_EGRESS_POLICY };
const SETUP = { changeCapture: true, serviceIdColumn: true };

describe('MySQL teardown', () => {
  let database: TestDatabase;
  const opened: MysqlConnection[] = [];

  /** A sync's connection: its write origin makes it a reader of its own. */
  const sync = async (origin: string) => {
    const connection = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, {
      ...context,
      writeOrigin: origin,
    });
    opened.push(connection);
    return connection;
  };
  const query = async (sql: string, values: unknown[] = []) =>
    ((await database.admin.query(sql, values)) as unknown as [Record<string, unknown>[]])[0];
  const tables = async () =>
    (
      await query('SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [
        database.name,
      ])
    )
      .map((row) => String(row.name))
      .sort();
  const columns = async (table: string) =>
    (
      await query(
        'SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
        [database.name, table],
      )
    ).map((row) => String(row.name));
  const indexes = async (table: string) =>
    (
      await query(
        'SELECT DISTINCT INDEX_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
        [database.name, table],
      )
    )
      .map((row) => String(row.name))
      .sort();
  const triggers = async (table: string) =>
    (
      await query(
        'SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?',
        [database.name, table],
      )
    ).length;

  beforeEach(async () => {
    database = await createTestDatabase('lockstep_td');
    await database.admin.query('CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(40))');
    await database.admin.query("INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace')");
    await database.admin.query('CREATE TABLE pairs (a INT, b INT, note VARCHAR(10), PRIMARY KEY (a, b))');
    await database.admin.query("INSERT INTO pairs VALUES (1, 1, 'x'), (1, 2, 'y')");
  });

  afterEach(async () => {
    for (const connection of opened.splice(0)) await connection.close();
    await database.drop();
  });

  it('keeps everything while another sync reads the table; the last one leaves only the data', async () => {
    const [a, b] = [await sync('sync_a'), await sync('sync_b')];
    for (const connection of [a, b])
      for (const table of ['people', 'pairs']) await connection.prepareTable(table, SETUP);
    expect(await tables()).toEqual(['lockstep_capture_readers', 'lockstep_change_log', 'pairs', 'people']);
    expect(await columns('pairs')).toEqual(['a', 'b', 'note', 'lockstep_id']);

    // Sync A is deleted: B still reads both tables, so nothing of the setup goes.
    for (const table of ['people', 'pairs']) await a.unprepareTable(table);
    expect(await tables()).toEqual(['lockstep_capture_readers', 'lockstep_change_log', 'pairs', 'people']);
    expect([await triggers('people'), await triggers('pairs')]).toEqual([3, 3]);
    expect(await columns('people')).toEqual(['id', 'name', 'lockstep_id']);

    // B leaves `people`: its triggers and the lockstep_id column added to it go; `pairs` is still read.
    await b.unprepareTable('people');
    expect(await triggers('people')).toBe(0);
    expect(await columns('people')).toEqual(['id', 'name']);
    expect(await indexes('people')).toEqual(['PRIMARY']);
    expect(await tables()).toEqual(['lockstep_capture_readers', 'lockstep_change_log', 'pairs', 'people']);

    // B leaves `pairs`: no table of the database is read any more, so the change log and readers go too.
    await b.unprepareTable('pairs');
    expect(await tables()).toEqual(['pairs', 'people']);
    expect([await triggers('people'), await triggers('pairs')]).toEqual([0, 0]);
    expect(await columns('pairs')).toEqual(['a', 'b', 'note']);
    expect(await indexes('pairs')).toEqual(['PRIMARY']);
    expect(await query('SELECT * FROM people ORDER BY id')).toEqual([
      { id: 1, name: 'Ada' },
      { id: 2, name: 'Grace' },
    ]);
    expect(await query('SELECT * FROM pairs ORDER BY a, b')).toEqual([
      { a: 1, b: 1, note: 'x' },
      { a: 1, b: 2, note: 'y' },
    ]);

    // Idempotent, and the table can be set up again from scratch.
    await b.unprepareTable('pairs');
    await a.prepareTable('pairs', SETUP);
    expect((await a.readPage('pairs', { pageSize: 10 })).records).toHaveLength(2);
  });

  it('removes the column a sync that never ran added to its mapped tables (no change capture)', async () => {
    const draft = await sync('sync_draft');
    await draft.prepareTable('pairs', { changeCapture: false, serviceIdColumn: true });
    expect(await columns('pairs')).toEqual(['a', 'b', 'note', 'lockstep_id']);
    await draft.unprepareTable('pairs');
    expect(await columns('pairs')).toEqual(['a', 'b', 'note']);
    expect(await tables()).toEqual(['pairs', 'people']);
  });

  it('keeps a lockstep_id the application made, and the key of a table Lockstep created', async () => {
    await database.admin.query('CREATE TABLE own (id INT PRIMARY KEY, lockstep_id CHAR(36) NULL)');
    await database.admin.query("INSERT INTO own VALUES (1, NULL), (2, 'mine')");
    const a = await sync('sync_a');
    await a.createTable('made', [{ name: 'title', typeClass: 'text', typeDetails: {} }]);
    for (const table of ['own', 'made']) await a.prepareTable(table, SETUP);
    for (const table of ['own', 'made']) await a.unprepareTable(table);
    expect(await columns('own')).toEqual(['id', 'lockstep_id']);
    expect(await query('SELECT lockstep_id FROM own WHERE id = 2')).toEqual([{ lockstep_id: 'mine' }]);
    expect(await columns('made')).toEqual(['lockstep_id', 'title']);
    expect(await indexes('made')).toEqual(['PRIMARY']);
    expect([await triggers('own'), await triggers('made')]).toEqual([0, 0]);
    expect(await tables()).toEqual(['made', 'own', 'pairs', 'people']);
  });

  it('keeps the change log while a table set up by an earlier version still has its triggers', async () => {
    const a = await sync('sync_a');
    await a.prepareTable('people', SETUP);
    await a.prepareTable('pairs', SETUP);
    // An earlier version's setup: triggers but no registered reader.
    await database.admin.query("DELETE FROM lockstep_capture_readers WHERE table_name = 'pairs'");
    await a.unprepareTable('people');
    expect(await tables()).toEqual(['lockstep_capture_readers', 'lockstep_change_log', 'pairs', 'people']);
  });
});
