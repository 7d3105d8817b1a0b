/**
 * Teardown (`unprepareTable`) against the real server, in a database of its own (the `lockstep` schema is one
 * per database): what table setup installed goes once no sync reads the table (triggers, the `lockstep_id`
 * column it added, and the change log, readers table, capture function and `lockstep` schema once no table of
 * the database is read), while the rows, the application's columns, an application's own `lockstep_id` and the
 * key of a table Lockstep created stay.
 */
import type { PostgresConnection } from './connection';
import { postgresConnector } from './declaration';
import { createTestDatabase, type TestDatabase } from './test/pg-test-db';

const egress = { allowPrivate: true, allowLoopback: true };
const SETUP = { changeCapture: true, serviceIdColumn: true };

describe('PostgreSQL teardown', () => {
  let db: TestDatabase;
  const opened: PostgresConnection[] = [];

  /** A sync's connection on schema `td`: its write origin makes it a reader of its own. */
  const sync = async (origin: string) => {
    const connection = (await postgresConnector.connect({ connectionString: db.url() }, 'td', {
      egress,
      writeOrigin: origin,
    })) as PostgresConnection;
    opened.push(connection);
    return connection;
  };
  const query = async (sql: string, values: unknown[] = []) =>
    (await db.admin.query(sql, values)).rows as Record<string, unknown>[];
  const columns = async (table: string) =>
    (
      await query(
        `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = 'td' AND table_name = $1 ORDER BY ordinal_position`,
        [table],
      )
    ).map((row) => row['name']);
  const triggers = async (table: string) =>
    (
      await query(`SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal`, [
        `td.${table}`,
      ])
    ).length;
  const constraints = async (table: string) =>
    (
      await query(
        `SELECT conname AS name FROM pg_constraint WHERE conrelid = $1::regclass ORDER BY conname`,
        [`td.${table}`],
      )
    ).map((row) => row['name']);
  /** What lives in the `lockstep` schema (tables and functions), or null when the schema is gone. */
  const lockstepSchema = async () => {
    if ((await query(`SELECT 1 FROM pg_namespace WHERE nspname = 'lockstep'`)).length === 0) return null;
    const tables = await query(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'lockstep' ORDER BY 1`,
    );
    const functions = await query(
      `SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'lockstep' ORDER BY 1`,
    );
    return [...tables, ...functions].map((row) => row['name']);
  };

  beforeEach(async () => {
    db = await createTestDatabase('ls_pg_td');
    await db.admin.query(`CREATE SCHEMA td;
      CREATE TABLE td.people (id integer PRIMARY KEY, name text);
      INSERT INTO td.people VALUES (1, 'Ada'), (2, 'Grace');
      CREATE TABLE td.pairs (a integer, b integer, note text, PRIMARY KEY (a, b));
      INSERT INTO td.pairs VALUES (1, 1, 'x'), (1, 2, 'y');`);
  });

  afterEach(async () => {
    for (const connection of opened.splice(0)) await connection.close();
    await db.drop();
  });

  it('keeps everything while another sync reads the table; the last one leaves only the data', async () => {
    const [a, b] = [await sync('sync_a'), await sync('sync_b')];
    for (const connection of [a, b])
      for (const table of ['people', 'pairs']) await connection.prepareTable(table, SETUP);
    const installed = ['capture_readers', 'change_log', 'capture_changes'];
    expect(await lockstepSchema()).toEqual(installed);
    expect(await columns('pairs')).toEqual(['a', 'b', 'note', 'lockstep_id']);

    // Sync A is deleted: B still reads both tables, so nothing of the setup goes.
    for (const table of ['people', 'pairs']) await a.unprepareTable(table);
    expect(await lockstepSchema()).toEqual(installed);
    expect([await triggers('people'), await triggers('pairs')]).toEqual([3, 3]);
    expect(await columns('people')).toEqual(['id', 'name', 'lockstep_id']);

    // B leaves `people`: its triggers and the lockstep_id column added to it go (with its unique constraint).
    await b.unprepareTable('people');
    expect(await triggers('people')).toBe(0);
    expect(await columns('people')).toEqual(['id', 'name']);
    expect(await constraints('people')).toEqual(['people_pkey']);
    expect(await lockstepSchema()).toEqual(installed);

    // B leaves `pairs`: no table of the database is read any more, so the `lockstep` schema goes too.
    await b.unprepareTable('pairs');
    expect(await lockstepSchema()).toBeNull();
    expect(await columns('pairs')).toEqual(['a', 'b', 'note']);
    expect(await constraints('pairs')).toEqual(['pairs_pkey']);
    expect(await query('SELECT * FROM td.people ORDER BY id')).toEqual([
      { id: 1, name: 'Ada' },
      { id: 2, name: 'Grace' },
    ]);
    expect(await query('SELECT * FROM td.pairs ORDER BY a, b')).toEqual([
      { a: 1, b: 1, note: 'x' },
      { a: 1, b: 2, note: 'y' },
    ]);

    // Idempotent, and the table can be set up again from scratch.
    await b.unprepareTable('pairs');
    await a.prepareTable('pairs', SETUP);
    expect((await a.readPage('pairs', { pageSize: 10 })).records).toHaveLength(2);
  });

  it('keeps a lockstep_id the application made, the key of a table Lockstep created, and a schema something else uses', async () => {
    await db.admin.query(
      `CREATE TABLE td.own (id integer PRIMARY KEY, lockstep_id uuid); INSERT INTO td.own VALUES (1, NULL)`,
    );
    const a = await sync('sync_a');
    await a.createTable('made', [{ name: 'title', typeClass: 'text', typeDetails: {} }]);
    for (const table of ['own', 'made']) await a.prepareTable(table, SETUP);
    await db.admin.query(`CREATE TABLE lockstep.kept_by_someone (id integer)`);
    for (const table of ['own', 'made']) await a.unprepareTable(table);
    expect(await columns('own')).toEqual(['id', 'lockstep_id']);
    expect(await columns('made')).toEqual(['lockstep_id', 'title']);
    expect([await triggers('own'), await triggers('made')]).toEqual([0, 0]);
    expect(await lockstepSchema()).toEqual(['kept_by_someone']);
  });
});
