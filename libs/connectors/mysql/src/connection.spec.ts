/**
 * MySQL / MariaDB specifics the shared contract suite does not cover: MariaDB's JSON and native types, views,
 * `required`, table setup of a composite-key table (INVISIBLE service id), UTC timestamps whatever the
 * writer's time zone, AUTO_INCREMENT ids of multi-row inserts, CHECK failures isolated per row, the
 * TRIGGER privilege, and bases.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_EGRESS_POLICY, isConnectorError, type FieldInfo } from '@lockstep/connectors-core';
import type { MysqlConnection } from './connection';
import { openMysqlConnection } from './declaration';
import { createTestDatabase, nativeClient, TEST_MYSQL_URL, testUrl, type TestDatabase } from './test/server';

const context = { egress: DEFAULT_EGRESS_POLICY };

async function caught(action: () => Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await action();
  } catch (error) {
    if (isConnectorError(error)) return { kind: error.kind, message: error.message };
    throw error;
  }
  throw new Error('expected a ConnectorError');
}

function field(fields: FieldInfo[], name: string): FieldInfo {
  const found = fields.find((candidate) => candidate.remoteId === name);
  if (!found) throw new Error(`no field ${name}`);
  return found;
}

describe('MySQL connection', () => {
  let database: TestDatabase;
  let conn: MysqlConnection;
  let mariadb = false;

  beforeAll(async () => {
    database = await createTestDatabase('lockstep_conn');
    const [[version]] = (await database.admin.query('SELECT VERSION() AS v')) as unknown as [{ v: string }[]];
    mariadb = /mariadb/i.test(version!.v);
    conn = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, context);
  });

  afterAll(async () => {
    await conn?.close();
    await database?.drop();
  });

  it('lists the databases as bases, without the system ones', async () => {
    const ids = (await conn.listBases()).map((base) => base.id);
    expect(ids).toContain(database.name);
    for (const system of ['mysql', 'information_schema', 'performance_schema', 'sys'])
      expect(ids).not.toContain(system);
  });

  it('reads a required NOT NULL column without default, and MariaDB JSON / UUID / INET6 columns', async () => {
    const extra = mariadb ? ', u UUID, ip INET6' : '';
    await database.admin.query(
      `CREATE TABLE typed (id INT PRIMARY KEY, must VARCHAR(5) NOT NULL, doc JSON, optional INT NOT NULL DEFAULT 3${extra})`,
    );
    const fields = await conn.listFields('typed');
    expect(field(fields, 'must')).toMatchObject({ required: true, write: true });
    expect(field(fields, 'optional')).toMatchObject({ required: false });
    expect(field(fields, 'doc')).toMatchObject({ type: 'json', typeClass: 'json' });
    if (mariadb) {
      expect(field(fields, 'u')).toMatchObject({ type: 'uuid', typeClass: 'uuid', write: true });
      expect(field(fields, 'ip')).toMatchObject({ type: 'inet6', typeClass: 'text' });
    }
    const values: Record<string, string> = mariadb
      ? { u: '0b9f4a52-6f53-4d0a-9c1e-2f1f0a3b4c5d', ip: '::1' }
      : {};
    const results = await conn.createRecords('typed', [
      { serviceId: randomUUID(), values: { id: 1, must: 'a', doc: { n: [1, 2] }, ...values } },
      { serviceId: randomUUID(), values: { id: 2, doc: {} } },
    ]);
    expect(results[0]).toMatchObject({
      ok: true,
      record: { values: { id: 1, must: 'a', doc: { n: [1, 2] }, optional: 3, ...values } },
    });
    // Strict mode: a missing required value is refused, not silently written as ''.
    expect(results[1]).toMatchObject({ ok: false, error: { kind: 'invalid_data' } });
  });

  it('isolates a row a CHECK constraint refuses (MariaDB error 4025, MySQL 3819) as invalid_data', async () => {
    await database.admin.query(
      'CREATE TABLE checked (id INT PRIMARY KEY, price INT, doc JSON, CONSTRAINT positive CHECK (price > 0))',
    );
    const results = await conn.createRecords('checked', [
      { serviceId: randomUUID(), values: { id: 1, price: 5, doc: 'a bare string is JSON too' } },
      { serviceId: randomUUID(), values: { id: 2, price: -1 } },
      { serviceId: randomUUID(), values: { id: 3, price: 7 } },
    ]);
    expect(results[0]).toMatchObject({ ok: true, record: { values: { doc: 'a bare string is JSON too' } } });
    expect(results[1]).toMatchObject({ ok: false, error: { kind: 'invalid_data', retryable: false } });
    expect(results[2]).toMatchObject({ ok: true, remoteId: '3' });
    expect(
      (await conn.readPage('checked', { pageSize: 10 })).records.map((record) => record.remoteId),
    ).toEqual(['1', '3']);
  });

  it('reads TIMESTAMP columns in UTC whatever the writer time zone', async () => {
    await database.admin.query(
      'CREATE TABLE times (id INT PRIMARY KEY, at TIMESTAMP NULL, wall DATETIME NULL)',
    );
    const outside = await nativeClient(database.name);
    try {
      await outside.query("SET time_zone = '+05:00'");
      await outside.query("INSERT INTO times VALUES (1, '2024-01-01 05:00:00', '2024-01-01 05:00:00')");
    } finally {
      await outside.end();
    }
    const [record] = await conn.readByIds('times', ['1']);
    expect(record!.values).toEqual({ id: 1, at: '2024-01-01T00:00:00Z', wall: '2024-01-01T05:00:00' });
  });

  it('lists views as read-only tables, reads them by their id column, refuses writes', async () => {
    await database.admin.query('CREATE TABLE base_rows (id INT PRIMARY KEY, title VARCHAR(20))');
    await database.admin.query("INSERT INTO base_rows VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    await database.admin.query('CREATE VIEW odd_rows AS SELECT id, title FROM base_rows WHERE id % 2 = 1');
    const table = (await conn.listTables()).find((info) => info.remoteId === 'odd_rows');
    expect(table).toEqual({ remoteId: 'odd_rows', name: 'odd_rows', views: null, readOnly: true });
    expect((await conn.listFields('odd_rows')).map((info) => info.write)).toEqual([false, false]);
    const page = await conn.readPage('odd_rows', { pageSize: 10 });
    expect(page.records.map((record) => record.remoteId)).toEqual(['1', '3']);
    expect(await conn.prepareTable('odd_rows', { changeCapture: true })).toEqual({
      serviceIdField: null,
      changeCapture: false,
    });
    expect(
      (await caught(() => conn.updateRecords('odd_rows', [{ remoteId: '1', values: { title: 'x' } }]))).kind,
    ).toBe('unsupported');
  });

  it('prepares a composite-key table: an INVISIBLE lockstep_id, filled for existing rows, the app unaffected', async () => {
    await database.admin.query('CREATE TABLE pairs (a INT, b INT, note VARCHAR(10), PRIMARY KEY (a, b))');
    await database.admin.query("INSERT INTO pairs VALUES (1, 1, 'x'), (1, 2, 'y')");
    expect((await caught(() => conn.readPage('pairs', { pageSize: 10 }))).kind).toBe('unsupported');

    const prepared = await conn.prepareTable('pairs', { changeCapture: true });
    expect(prepared).toEqual({ serviceIdField: 'lockstep_id', changeCapture: true });
    const records = (await conn.readPage('pairs', { pageSize: 10 })).records;
    expect(records).toHaveLength(2);
    for (const record of records) {
      expect(record.remoteId).toMatch(/^[0-9a-f-]{36}$/);
      expect(record.serviceId).toBe(record.remoteId);
    }
    expect(new Set(records.map((record) => record.remoteId)).size).toBe(2);

    // The application's `SELECT *` and column-less INSERT still work (the column is invisible where supported).
    await database.admin.query("INSERT INTO pairs VALUES (2, 1, 'z')");
    const [rows] = (await database.admin.query('SELECT * FROM pairs WHERE a = 2')) as unknown as [
      Record<string, unknown>[],
    ];
    expect(Object.keys(rows[0]!)).toEqual(['a', 'b', 'note']);
    const [z] = (await conn.readPage('pairs', { pageSize: 10 })).records.filter(
      (record) => record.values['note'] === 'z',
    );
    expect(z?.serviceId).toMatch(/^[0-9a-f-]{36}$/);

    expect(field(await conn.listFields('pairs'), 'lockstep_id')).toMatchObject({
      typeClass: 'uuid',
      read: true,
      write: false,
      typeDetails: { service_id: true },
    });
    expect(await conn.prepareTable('pairs', { changeCapture: true })).toEqual(prepared);
  });

  it('maps AUTO_INCREMENT ids of one multi-row insert to the right rows, in input order', async () => {
    await database.admin.query(
      'CREATE TABLE autos (id BIGINT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(20)) AUTO_INCREMENT = 100',
    );
    const results = await conn.createRecords(
      'autos',
      ['a', 'b', 'c', 'd'].map((title) => ({ serviceId: randomUUID(), values: { title } })),
    );
    expect(
      results.map((result) => (result.ok ? [result.remoteId, result.record?.values['title']] : null)),
    ).toEqual([
      ['100', 'a'],
      ['101', 'b'],
      ['102', 'c'],
      ['103', 'd'],
    ]);
  });

  it('pages by an unsigned BIGINT key past 2^53 exactly', async () => {
    await database.admin.query('CREATE TABLE bigkeys (id BIGINT UNSIGNED PRIMARY KEY, n INT)');
    await database.admin.query(
      'INSERT INTO bigkeys VALUES (9007199254740993, 1), (9007199254740994, 2), (18446744073709551615, 3)',
    );
    const first = await conn.readPage('bigkeys', { pageSize: 2 });
    expect(first.records.map((record) => record.remoteId)).toEqual(['9007199254740993', '9007199254740994']);
    const second = await conn.readPage('bigkeys', { pageSize: 2, after: first.next });
    expect(second).toEqual({
      records: [
        expect.objectContaining({
          remoteId: '18446744073709551615',
          values: { id: '18446744073709551615', n: 3 },
        }),
      ],
      next: null,
    });
    expect(
      (await conn.readByIds('bigkeys', ['9007199254740994', 'nope'])).map((record) => record.values['n']),
    ).toEqual([2]);
  });

  it('creates tables keyed by lockstep_id with the documented native types', async () => {
    await conn.createTable('made', [
      { name: 'at', typeClass: 'timestamp' },
      { name: 'price', typeClass: 'decimal' },
      { name: 'tags', typeClass: 'multi_select', typeDetails: { options: ['a', 'b'] } },
    ]);
    const [[created]] = (await database.admin.query('SHOW CREATE TABLE made')) as unknown as [
      Record<string, string>[],
    ];
    const ddl = created!['Create Table']!;
    expect(ddl).toMatch(
      /`lockstep_id` char\(36\) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL DEFAULT uuid\(\)/i,
    );
    expect(ddl).toMatch(/PRIMARY KEY \(`lockstep_id`\)/);
    expect(ddl).toMatch(/`at` datetime\(6\) DEFAULT NULL COMMENT 'lockstep:timestamp'/);
    expect(ddl).toMatch(/`price` decimal\(38,10\) DEFAULT NULL/);
    expect(ddl).toMatch(/`tags` set\('a','b'\)/);
    // A row inserted by someone else gets a service id from the default.
    await database.admin.query("INSERT INTO made (price) VALUES ('1.5')");
    const [record] = (await conn.readPage('made', { pageSize: 5 })).records;
    expect(record).toMatchObject({ values: { price: '1.5000000000', at: null, tags: null } });
    expect(record!.remoteId).toBe(record!.serviceId);
  });

  it('reports a missing TRIGGER privilege as permission with the server reason, and bad logins as auth', async () => {
    const user = `lockstep_t_${randomBytes(4).toString('hex')}`;
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const host = new URL(TEST_MYSQL_URL).hostname;
    await database.admin.query(`CREATE USER ?@? IDENTIFIED BY ?`, [user, host, password]);
    try {
      await database.admin.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX ON \`${database.name}\`.* TO ?@?`,
        [user, host],
      );
      await database.admin.query('CREATE TABLE guarded (id INT PRIMARY KEY)');
      const limited = await openMysqlConnection(
        { connectionString: testUrl({ user, password }) },
        database.name,
        context,
      );
      try {
        await expect(limited.checkCredentials()).resolves.toBeUndefined();
        const error = await caught(() => limited.prepareTable('guarded', { changeCapture: true }));
        expect(error.kind).toBe('permission');
        expect(error.message).toMatch(/TRIGGER command denied/i);
        expect(error.message).not.toContain(password);
      } finally {
        await limited.close();
      }
      const wrong = await openMysqlConnection(
        { connectionString: testUrl({ user, password: `${password}x` }) },
        database.name,
        context,
      );
      try {
        const error = await caught(() => wrong.checkCredentials());
        expect(error.kind).toBe('auth');
        expect(error.message).toMatch(/Access denied for user/);
        expect(error.message).not.toContain(password);
      } finally {
        await wrong.close();
      }
    } finally {
      await database.admin.query('DROP USER ?@?', [user, host]);
    }
  });
});
