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
    // Creates return the remote id only (no read-back); the stored row, default included, is read by id.
    expect(results[0]).toEqual({ ok: true, remoteId: '1', record: null });
    const [stored] = await conn.readByIds('typed', ['1']);
    expect(stored).toMatchObject({
      values: { id: 1, must: 'a', doc: { n: [1, 2] }, optional: 3, ...values },
    });
    // Strict mode: a missing required value is refused, not silently written as ''.
    expect(results[1]).toMatchObject({ ok: false, error: { kind: 'invalid_data' } });
  });

  it('marks a column that alone is a unique key as type_details.unique (not the primary key, not a composite)', async () => {
    await database.admin.query(
      'CREATE TABLE members (id INT PRIMARY KEY, email VARCHAR(80) NOT NULL UNIQUE, a INT, b INT, ' +
        'note TEXT, UNIQUE KEY ab (a, b))',
    );
    const fields = await conn.listFields('members');
    expect(field(fields, 'email').typeDetails).toEqual({ max_length: 80, unique: true });
    expect(field(fields, 'id').typeDetails).toBeNull();
    expect(field(fields, 'a').typeDetails).toBeNull();
    expect(field(fields, 'note').typeDetails).toBeNull();
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
    expect(results[0]).toMatchObject({ ok: true, remoteId: '1' });
    expect((await conn.readByIds('checked', ['1']))[0]?.values['doc']).toBe('a bare string is JSON too');
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
    const remoteIds = results.map((result) => (result.ok ? result.remoteId : null));
    const stored = new Map(
      (
        await conn.readByIds(
          'autos',
          remoteIds.filter((id): id is string => id !== null),
        )
      ).map((record) => [record.remoteId, record.values['title']]),
    );
    expect(
      remoteIds.map((remoteId) => (remoteId === null ? null : [remoteId, stored.get(remoteId)])),
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

describe('MySQL table metadata cache and writes', () => {
  let database: TestDatabase;
  let conn: MysqlConnection;
  const outcomes = (results: { ok: boolean }[]) => results.map((result) => (result.ok ? 'ok' : 'failed'));

  beforeAll(async () => {
    database = await createTestDatabase('lockstep_cache');
    conn = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, context);
  });

  afterAll(async () => {
    await conn?.close();
    await database?.drop();
  });

  it('createField, then createRecords and readPage with the new field on the same connection', async () => {
    await database.admin.query('CREATE TABLE grows (id INT PRIMARY KEY, title VARCHAR(20))');
    expect(
      outcomes(
        await conn.createRecords('grows', [{ serviceId: randomUUID(), values: { id: 1, title: 'before' } }]),
      ),
    ).toEqual(['ok']);
    await conn.readPage('grows', { pageSize: 10 }); // the description is cached now
    await conn.createField('grows', { name: 'added', typeClass: 'integer' });
    expect(
      outcomes(
        await conn.createRecords('grows', [
          { serviceId: randomUUID(), values: { id: 2, title: 'after', added: 5 } },
        ]),
      ),
    ).toEqual(['ok']);
    expect((await conn.readPage('grows', { pageSize: 10 })).records.map((record) => record.values)).toEqual([
      { id: 1, title: 'before', added: null },
      { id: 2, title: 'after', added: 5 },
    ]);
    const [updated] = await conn.updateRecords('grows', [{ remoteId: '1', values: { added: 7 } }]);
    expect(updated).toMatchObject({ ok: true, record: { values: { added: 7 } } });
  });

  it('serves reads from the cached description until it is refreshed, and refreshes when a write names an unknown field', async () => {
    await database.admin.query('CREATE TABLE outside_add (id INT PRIMARY KEY, title VARCHAR(20))');
    await conn.createRecords('outside_add', [{ serviceId: randomUUID(), values: { id: 1, title: 'a' } }]);
    await database.admin.query("ALTER TABLE outside_add ADD COLUMN extra VARCHAR(5) DEFAULT 'x'");
    expect((await conn.readPage('outside_add', { pageSize: 10 })).records[0]!.values).toEqual({
      id: 1,
      title: 'a',
    });
    expect(
      outcomes(
        await conn.createRecords('outside_add', [
          { serviceId: randomUUID(), values: { id: 2, title: 'b', extra: 'y' } },
        ]),
      ),
    ).toEqual(['ok']);
    expect(
      (await conn.readPage('outside_add', { pageSize: 10 })).records.map((record) => record.values),
    ).toEqual([
      { id: 1, title: 'a', extra: 'x' },
      { id: 2, title: 'b', extra: 'y' },
    ]);
    const [bad] = await conn.createRecords('outside_add', [
      { serviceId: randomUUID(), values: { id: 3, nope: 1 } },
    ]);
    expect(bad).toMatchObject({ ok: false, error: { kind: 'invalid_data' } });
    expect(await conn.listFields('outside_add')).toHaveLength(3);
  });

  it('retries once with a fresh description when a column was dropped or renamed elsewhere', async () => {
    await database.admin.query(
      'CREATE TABLE outside_drop (id INT PRIMARY KEY, title VARCHAR(20), amount INT)',
    );
    await conn.createRecords('outside_drop', [
      { serviceId: randomUUID(), values: { id: 1, title: 'a', amount: 1 } },
    ]);
    await database.admin.query('ALTER TABLE outside_drop DROP COLUMN amount');
    expect(
      (await conn.readPage('outside_drop', { pageSize: 10 })).records.map((record) => record.values),
    ).toEqual([{ id: 1, title: 'a' }]);
    await database.admin.query('ALTER TABLE outside_drop CHANGE COLUMN title name VARCHAR(20)');
    const results = await conn.createRecords('outside_drop', [
      { serviceId: randomUUID(), values: { id: 2, name: 'b' } },
      { serviceId: randomUUID(), values: { id: 3, name: 'c' } },
    ]);
    expect(outcomes(results)).toEqual(['ok', 'ok']);
    expect((await conn.readByIds('outside_drop', ['1', '2'])).map((record) => record.values)).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ]);
  });

  it('reads the description again when another connection prepared the table (its service id is the key)', async () => {
    await database.admin.query('CREATE TABLE prepared_elsewhere (a INT, b INT, PRIMARY KEY (a, b))');
    await database.admin.query('INSERT INTO prepared_elsewhere VALUES (1, 1)');
    expect(await caught(() => conn.readPage('prepared_elsewhere', { pageSize: 10 }))).toMatchObject({
      kind: 'unsupported',
    });
    const other = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, context);
    try {
      await other.prepareTable('prepared_elsewhere', { changeCapture: false });
    } finally {
      await other.close();
    }
    const [record] = (await conn.readPage('prepared_elsewhere', { pageSize: 10 })).records;
    expect(record).toMatchObject({ values: { a: 1, b: 1 } });
    expect(record!.remoteId).toBe(record!.serviceId);
  });

  it('with a time to live of 0, every call reads the description', async () => {
    const uncached = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, context, {
      holdWindowMs: 600_000,
      retentionDays: 7,
      metadataTtlMs: 0,
    });
    try {
      await database.admin.query('CREATE TABLE ttl (id INT PRIMARY KEY)');
      await database.admin.query('INSERT INTO ttl VALUES (1)');
      expect((await uncached.readPage('ttl', { pageSize: 10 })).records[0]!.values).toEqual({ id: 1 });
      await database.admin.query("ALTER TABLE ttl ADD COLUMN later VARCHAR(5) DEFAULT 'z'");
      expect((await uncached.readPage('ttl', { pageSize: 10 })).records[0]!.values).toEqual({
        id: 1,
        later: 'z',
      });
    } finally {
      await uncached.close();
    }
  });

  it('creates return remote ids without reading the rows back, across several INSERTs, with the bad row reported', async () => {
    await database.admin.query('CREATE TABLE many (id INT PRIMARY KEY, title VARCHAR(10))');
    const rows = Array.from({ length: 2_500 }, (_, index) => ({
      serviceId: randomUUID(),
      values: { id: index + 1, title: index === 1_700 ? 'far too long for ten' : `t${index}` },
    }));
    const results = await conn.createRecords('many', rows);
    expect(results.filter((result) => !result.ok)).toEqual([
      { ok: false, error: expect.objectContaining({ kind: 'invalid_data' }) },
    ]);
    expect(results[1_700]!.ok).toBe(false);
    expect(results[2_499]).toEqual({ ok: true, remoteId: '2500', record: null });
    const [[counted]] = (await database.admin.query('SELECT COUNT(*) AS n FROM many')) as unknown as [
      { n: number }[],
    ];
    expect(Number(counted!.n)).toBe(2_499);
  });

  it('adopts rows by service id without reading them back (created tables are keyed by it)', async () => {
    const table = await conn.createTable('adopting', [{ name: 'title', typeClass: 'text' }]);
    const serviceId = randomUUID();
    const [first] = await conn.createRecords(table.remoteId, [{ serviceId, values: { title: 'x' } }]);
    const again = await conn.createRecords(table.remoteId, [
      { serviceId, values: { title: 'x' } },
      { serviceId: serviceId.toUpperCase(), values: { title: 'x' } },
    ]);
    expect(first).toEqual({ ok: true, remoteId: serviceId, record: null });
    expect(again).toEqual([first, first]);
    expect((await conn.readPage(table.remoteId, { pageSize: 10 })).records).toHaveLength(1);
  });
});
