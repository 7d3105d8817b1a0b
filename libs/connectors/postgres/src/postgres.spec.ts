/**
 * PostgreSQL-specific behaviour beyond the shared contract suite: late-committing transactions in the change
 * feed, views, privileges, TLS settings and composite keys.
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_EGRESS_POLICY, type Connection } from '@lockstep/connectors-core';
import { readAllChanges, readAllPages } from '@lockstep/connectors-core/testing';
import { Client, Pool } from 'pg';
import { PostgresConnection, postgresConnector } from './index';
import { CopyInQuery } from '@lockstep/pg-copy';
import { createTestDatabase, randomName, type TestDatabase } from './test/pg-test-db';

const SCHEMA = 'app';
const context = { egress: DEFAULT_EGRESS_POLICY };
let db: TestDatabase;
let conn: Connection;
const roles: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase('ls_pgspec');
  await db.admin.query(`CREATE SCHEMA ${SCHEMA}`);
  conn = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, context);
});

afterAll(async () => {
  await conn?.close();
  await db?.drop();
  if (roles.length > 0) {
    const server = new Client({ connectionString: db.url().replace(/\/[^/?]*(\?.*)?$/, '/postgres') });
    await server.connect();
    for (const role of roles) await server.query(`DROP ROLE IF EXISTS ${role}`);
    await server.end();
  }
});

async function limitedRole(): Promise<string> {
  const role = randomName('ls_limited');
  roles.push(role);
  await db.admin.query(`CREATE ROLE ${role} LOGIN`);
  await db.admin.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${role}`);
  return role;
}

describe('change feed', () => {
  it('does not lose a row whose transaction commits after a later one (out-of-order ids)', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.late (id integer PRIMARY KEY, title text)`);
    await conn.prepareTable('late', { changeCapture: true });
    const since = await conn.currentCheckpoint('late');

    const slow = new Client({ connectionString: db.url() });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      await slow.query(`INSERT INTO ${SCHEMA}.late VALUES (1, 'slow')`); // takes the smaller change-log id
      await db.admin.query(`INSERT INTO ${SCHEMA}.late VALUES (2, 'fast')`); // commits first with a larger id

      const first = await readAllChanges(conn, 'late', since);
      expect(first.changes.map((change) => change.remoteId)).toEqual(['2']);

      await slow.query('COMMIT');
      const second = await readAllChanges(conn, 'late', first.checkpoint);
      expect(second.changes.map((change) => change.remoteId)).toEqual(['1']);
      const third = await readAllChanges(conn, 'late', second.checkpoint);
      expect(third.changes).toEqual([]);
    } finally {
      await slow.end();
    }
  });

  it('ignores a rolled-back transaction and reports a key change as delete plus upsert', async () => {
    const since = await conn.currentCheckpoint('late');
    await db.admin.query('BEGIN');
    await db.admin.query(`INSERT INTO ${SCHEMA}.late VALUES (3, 'never')`);
    await db.admin.query('ROLLBACK');
    await db.admin.query(`UPDATE ${SCHEMA}.late SET id = 20 WHERE id = 2`);
    const { changes } = await readAllChanges(conn, 'late', since);
    expect(changes.map(({ kind, remoteId }) => ({ kind, remoteId }))).toEqual([
      { kind: 'delete', remoteId: '2' },
      { kind: 'upsert', remoteId: '20' },
    ]);
  });

  it("with a writeOrigin, marks only that connection's writes as own", async () => {
    const syncA = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, {
      ...context,
      writeOrigin: 'sync_a',
    });
    const syncB = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, {
      ...context,
      writeOrigin: 'sync_b',
    });
    try {
      const since = await syncA.currentCheckpoint('late');
      await syncA.createRecords('late', [{ serviceId: randomUUID(), values: { id: 40, title: 'by a' } }]);
      await syncB.createRecords('late', [{ serviceId: randomUUID(), values: { id: 41, title: 'by b' } }]);
      const seenByA = await readAllChanges(syncA, 'late', since, { ignoreOwnWrites: true });
      expect(seenByA.changes.map((change) => [change.remoteId, change.own])).toEqual([['41', false]]);
      const everything = await readAllChanges(syncB, 'late', since);
      expect(everything.changes.map((change) => [change.remoteId, change.own])).toEqual([
        ['40', false],
        ['41', true],
      ]);
    } finally {
      await syncA.close();
      await syncB.close();
    }
  });

  it('purges change-log entries older than the retention and keeps the recent ones', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.kept (id integer PRIMARY KEY, title text)`);
    await conn.prepareTable('kept', { changeCapture: true });
    await db.admin.query(`INSERT INTO ${SCHEMA}.kept SELECT g, 'row ' || g FROM generate_series(1, 30) AS g`);
    await db.admin.query(
      `UPDATE lockstep.change_log SET committed_at = now() - interval '8 days' WHERE table_name = 'kept' AND pk::int <= 20`,
    );
    const short = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, context);
    try {
      expect(await (short as PostgresConnection).purgeChangeLog(15)).toBe(15);
      expect(await (short as PostgresConnection).purgeChangeLog()).toBe(5);
      expect(await (short as PostgresConnection).purgeChangeLog()).toBe(0);
    } finally {
      await short.close();
    }
    const left = await db.admin.query(
      `SELECT pk::int AS pk FROM lockstep.change_log WHERE table_name = 'kept' ORDER BY pk::int`,
    );
    expect(left.rows.map((row: { pk: number }) => row.pk)).toEqual(
      Array.from({ length: 10 }, (_, index) => 21 + index),
    );
  });

  it('refuses a checkpoint it did not issue', async () => {
    await expect(conn.readChanges('late', 'not a checkpoint', { limit: 10 })).rejects.toMatchObject({
      kind: 'invalid_data',
    });
  });

  it('captures writes of another role that has no rights on the change log (SECURITY DEFINER trigger)', async () => {
    const role = await limitedRole();
    await db.admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${SCHEMA}.late TO ${role}`);
    const since = await conn.currentCheckpoint('late');
    const other = new Client({ connectionString: db.url({ user: role }) });
    await other.connect();
    try {
      await other.query(`INSERT INTO ${SCHEMA}.late VALUES (30, 'from another app')`);
    } finally {
      await other.end();
    }
    const { changes } = await readAllChanges(conn, 'late', since);
    expect(changes).toEqual([expect.objectContaining({ kind: 'upsert', remoteId: '30', own: false })]);
  });
});

describe('table setup', () => {
  it('reports missing privileges as kind permission with the database reason', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.guarded (title text)`);
    const role = await limitedRole();
    await db.admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${SCHEMA}.guarded TO ${role}`);
    const limited = await postgresConnector.connect(
      { connectionString: db.url({ user: role }) },
      SCHEMA,
      context,
    );
    try {
      const error = await limited.prepareTable('guarded', { changeCapture: true }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({ kind: 'permission', appCode: '42501' });
      expect((error as Error).message).toMatch(
        /^Could not prepare table "guarded" for sync: must be owner of table guarded/,
      );
    } finally {
      await limited.close();
    }
  });

  it('adds a service id to a table with a composite primary key and pages by it', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.pairs (a integer, b integer, note text, PRIMARY KEY (a, b))`,
    );
    await db.admin.query(`INSERT INTO ${SCHEMA}.pairs VALUES (1, 1, 'x'), (1, 2, 'y')`);
    await expect(conn.readPage('pairs', { pageSize: 10 })).rejects.toMatchObject({ kind: 'unsupported' });
    expect(await conn.prepareTable('pairs', { changeCapture: true })).toEqual({
      serviceIdField: 'lockstep_id',
      changeCapture: true,
    });
    const records = (await readAllPages(conn, 'pairs', 1)).flat();
    expect(records).toHaveLength(2);
    for (const record of records) expect(record.remoteId).toBe(record.serviceId);
    const fields = await conn.listFields('pairs');
    expect(fields.filter((field) => field.primary).map((field) => field.remoteId)).toEqual(['a', 'b']);
    expect(fields.find((field) => field.remoteId === 'lockstep_id')).toMatchObject({
      read: true,
      write: false,
      typeClass: 'uuid',
    });
  });

  it('a table with a natural primary key reports the created row remote id', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.natural (code text PRIMARY KEY, serial_no bigserial, label text)`,
    );
    const [result] = await conn.createRecords('natural', [
      { serviceId: randomUUID(), values: { code: 'abc', label: 'x' } },
    ]);
    // Creates return the remote id only (no read-back); the stored row, defaults included, is read by id.
    expect(result).toEqual({ ok: true, remoteId: 'abc', record: null });
    expect(await conn.readByIds('natural', ['abc'])).toEqual([
      { remoteId: 'abc', values: { code: 'abc', serial_no: 1, label: 'x' } },
    ]);
    const fields = await conn.listFields('natural');
    expect(fields.find((field) => field.remoteId === 'serial_no')).toMatchObject({
      write: false,
      required: false,
    });
    expect(fields.find((field) => field.remoteId === 'code')).toMatchObject({
      write: true,
      required: true,
      primary: true,
    });
  });

  it('marks a column that alone is a unique index as type_details.unique (not the key, a composite or a partial one)', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.members (id integer PRIMARY KEY, email text NOT NULL UNIQUE, a int, b int, ` +
        `code text, UNIQUE (a, b))`,
    );
    await db.admin.query(`CREATE UNIQUE INDEX members_code ON ${SCHEMA}.members (code) WHERE code <> ''`);
    const fields = await conn.listFields('members');
    const details = (id: string) => fields.find((field) => field.remoteId === id)?.typeDetails;
    expect(details('email')).toEqual({ unique: true });
    expect(details('id')).toBeNull();
    expect(details('a')).toBeNull();
    expect(details('code')).toBeNull();
  });
});

describe('views', () => {
  it('lists a view as a read-only table and reads it', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.base_rows (id integer PRIMARY KEY, title text)`);
    await db.admin.query(`INSERT INTO ${SCHEMA}.base_rows VALUES (1, 'a'), (2, 'b'), (3, 'c')`);
    await db.admin.query(
      `CREATE VIEW ${SCHEMA}.base_view AS SELECT id, upper(title) AS title FROM ${SCHEMA}.base_rows`,
    );
    const tables = await conn.listTables();
    expect(tables.find((table) => table.remoteId === 'base_view')).toEqual({
      remoteId: 'base_view',
      name: 'base_view',
      views: null,
      readOnly: true,
    });
    const fields = await conn.listFields('base_view');
    expect(fields.every((field) => field.read && !field.write)).toBe(true);
    const records = (await readAllPages(conn, 'base_view', 2)).flat();
    expect(records.map((record) => [record.remoteId, record.values['title']])).toEqual([
      ['1', 'A'],
      ['2', 'B'],
      ['3', 'C'],
    ]);
    expect(await conn.prepareTable('base_view', { changeCapture: true })).toEqual({
      serviceIdField: null,
      changeCapture: false,
    });
    await expect(
      conn.createRecords('base_view', [{ serviceId: randomUUID(), values: { title: 'x' } }]),
    ).rejects.toMatchObject({ kind: 'permission' });
  });
});

describe('connection strings', () => {
  it('honours sslmode (a server without a trusted certificate for 127.0.0.1 is a connection error)', async () => {
    const tls = await postgresConnector.connect(
      { connectionString: db.url({ host: '127.0.0.1', query: '?sslmode=verify-full' }) },
      null,
      context,
    );
    try {
      await expect(tls.checkCredentials()).rejects.toMatchObject({ kind: 'transient' });
    } finally {
      await tls.close();
    }
    const plain = await postgresConnector.connect(
      { connectionString: db.url({ query: '?sslmode=disable' }) },
      null,
      context,
    );
    try {
      await expect(plain.checkCredentials()).resolves.toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it('reports a database that does not exist as an auth failure with the reason', async () => {
    const wrong = await postgresConnector.connect(
      { connectionString: db.url().replace(db.name, `${db.name}_missing`) },
      null,
      context,
    );
    try {
      await expect(wrong.checkCredentials()).rejects.toMatchObject({
        kind: 'auth',
        message: expect.stringContaining('does not exist'),
      });
    } finally {
      await wrong.close();
    }
  });

  it('lists bases without system schemas or the lockstep schema', async () => {
    const bases = (await conn.listBases()).map((base) => base.id);
    expect(bases).toContain(SCHEMA);
    expect(bases).toContain('public');
    expect(
      bases.filter((base) => base.startsWith('pg_') || base === 'information_schema' || base === 'lockstep'),
    ).toEqual([]);
  });
});

describe('table metadata cache', () => {
  const ids = (results: { ok: boolean }[]) => results.map((result) => (result.ok ? 'ok' : 'failed'));

  it('reads the catalog once for repeated calls, and again after listFields', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.cached (id integer PRIMARY KEY, title text)`);
    const catalogReads = jest.spyOn(Pool.prototype, 'query');
    const tableReads = () =>
      catalogReads.mock.calls.filter(([text]) => typeof text === 'string' && text.includes('pg_attrdef'))
        .length;
    try {
      await conn.readPage('cached', { pageSize: 10 });
      await conn.createRecords('cached', [{ serviceId: randomUUID(), values: { id: 1, title: 'a' } }]);
      await conn.readPage('cached', { pageSize: 10 });
      await conn.readByIds('cached', ['1']);
      expect(tableReads()).toBe(1);
      await conn.listFields('cached');
      expect(tableReads()).toBe(2);
    } finally {
      catalogReads.mockRestore();
    }
  });

  it('createField, then createRecords and readPage with the new field on the same connection', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.grows (id integer PRIMARY KEY, title text)`);
    expect(
      ids(
        await conn.createRecords('grows', [{ serviceId: randomUUID(), values: { id: 1, title: 'before' } }]),
      ),
    ).toEqual(['ok']);
    await conn.readPage('grows', { pageSize: 10 }); // the description is cached now
    await conn.createField('grows', { name: 'added', typeClass: 'integer' });
    expect(
      ids(
        await conn.createRecords('grows', [
          { serviceId: randomUUID(), values: { id: 2, title: 'after', added: 5 } },
        ]),
      ),
    ).toEqual(['ok']);
    const page = await conn.readPage('grows', { pageSize: 10 });
    expect(page.records.map((record) => record.values)).toEqual([
      { id: 1, title: 'before', added: null },
      { id: 2, title: 'after', added: 5 },
    ]);
    const [updated] = await conn.updateRecords('grows', [{ remoteId: '1', values: { added: 7 } }]);
    expect(updated).toMatchObject({ ok: true, record: { values: { added: 7 } } });
  });

  it('serves reads from the cached description until it is refreshed, and refreshes when a write names an unknown field', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.outside_add (id integer PRIMARY KEY, title text)`);
    await conn.createRecords('outside_add', [{ serviceId: randomUUID(), values: { id: 1, title: 'a' } }]);
    await db.admin.query(`ALTER TABLE ${SCHEMA}.outside_add ADD COLUMN extra text DEFAULT 'x'`);
    // Cached: the column added elsewhere is not read yet (it is after the time to live, or a refresh).
    expect((await conn.readPage('outside_add', { pageSize: 10 })).records[0]!.values).toEqual({
      id: 1,
      title: 'a',
    });
    // A write naming it reads the catalog again instead of refusing the field.
    expect(
      ids(
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
    // A field that really does not exist is still refused, per row.
    const [bad] = await conn.createRecords('outside_add', [
      { serviceId: randomUUID(), values: { id: 3, nope: 1 } },
    ]);
    expect(bad).toMatchObject({ ok: false, error: { kind: 'invalid_data', appCode: '42703' } });
  });

  it('retries once with a fresh description when a column was dropped or renamed elsewhere', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.outside_drop (id integer PRIMARY KEY, title text, amount integer)`,
    );
    await conn.createRecords('outside_drop', [
      { serviceId: randomUUID(), values: { id: 1, title: 'a', amount: 1 } },
    ]);
    await db.admin.query(`ALTER TABLE ${SCHEMA}.outside_drop DROP COLUMN amount`);
    expect(
      (await conn.readPage('outside_drop', { pageSize: 10 })).records.map((record) => record.values),
    ).toEqual([{ id: 1, title: 'a' }]);
    await db.admin.query(`ALTER TABLE ${SCHEMA}.outside_drop RENAME COLUMN title TO name`);
    const results = await conn.createRecords('outside_drop', [
      { serviceId: randomUUID(), values: { id: 2, name: 'b' } },
      { serviceId: randomUUID(), values: { id: 3, name: 'c' } },
    ]);
    expect(ids(results)).toEqual(['ok', 'ok']);
    expect(await conn.readByIds('outside_drop', ['1', '2'])).toEqual([
      { remoteId: '1', values: { id: 1, name: 'a' } },
      { remoteId: '2', values: { id: 2, name: 'b' } },
    ]);
  });

  it('reads the catalog again when another connection prepared the table (its service id is the key)', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.prepared_elsewhere (a integer, b integer, PRIMARY KEY (a, b))`,
    );
    await db.admin.query(`INSERT INTO ${SCHEMA}.prepared_elsewhere VALUES (1, 1)`);
    await expect(conn.readPage('prepared_elsewhere', { pageSize: 10 })).rejects.toMatchObject({
      kind: 'unsupported',
    });
    const other = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, context);
    try {
      await other.prepareTable('prepared_elsewhere', { changeCapture: false });
    } finally {
      await other.close();
    }
    const [record] = (await conn.readPage('prepared_elsewhere', { pageSize: 10 })).records;
    expect(record).toMatchObject({ values: { a: 1, b: 1 } });
    expect(record!.remoteId).toBe(record!.serviceId);
  });
});

describe('createRecords: insert strategy', () => {
  it('groups rows by the fields they name: absent fields get their default, null stays null, ids map to their rows', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.grouped (id serial PRIMARY KEY, a text DEFAULT 'dflt', b integer)`,
    );
    const rows: Record<string, string | number | null>[] = [
      { a: 'x' },
      { b: 1 },
      { a: null, b: 2 },
      {},
      { b: 3, a: 'y' },
      { a: 'z' },
    ];
    const results = await conn.createRecords(
      'grouped',
      rows.map((values) => ({ serviceId: randomUUID(), values })),
    );
    const remoteIds = results.map((result) => (result.ok ? result.remoteId : null));
    const stored = new Map(
      (
        await conn.readByIds(
          'grouped',
          remoteIds.filter((id): id is string => id !== null),
        )
      ).map((record) => [record.remoteId, record.values]),
    );
    expect(remoteIds.map((remoteId) => stored.get(remoteId!))).toEqual([
      { id: expect.any(Number), a: 'x', b: null },
      { id: expect.any(Number), a: 'dflt', b: 1 },
      { id: expect.any(Number), a: null, b: 2 },
      { id: expect.any(Number), a: 'dflt', b: null },
      { id: expect.any(Number), a: 'y', b: 3 },
      { id: expect.any(Number), a: 'z', b: null },
    ]);
  });

  it('writes more rows than one statement takes, reporting the one bad row', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.many (id integer PRIMARY KEY, title varchar(10))`);
    const rows = Array.from({ length: 12_000 }, (_, index) => ({
      serviceId: randomUUID(),
      values: { id: index + 1, title: index === 7_000 ? 'far too long for ten' : `t${index}` },
    }));
    const results = await conn.createRecords('many', rows);
    expect(results.filter((result) => !result.ok)).toEqual([
      { ok: false, error: expect.objectContaining({ kind: 'invalid_data', appCode: '22001' }) },
    ]);
    expect(results[7_000]!.ok).toBe(false);
    expect(results[11_999]).toEqual({ ok: true, remoteId: '12000', record: null });
    const { rows: counted } = await db.admin.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.many`);
    expect(counted[0].n).toBe(11_999);
  });

  it('reports the key a BEFORE INSERT trigger set (such tables are written with INSERT ... RETURNING, not COPY)', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.shifted (id integer PRIMARY KEY, title text)`);
    await db.admin.query(
      `CREATE FUNCTION ${SCHEMA}.shift_id() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.id := NEW.id + 1000; RETURN NEW; END $$`,
    );
    await db.admin.query(
      `CREATE TRIGGER shift BEFORE INSERT ON ${SCHEMA}.shifted FOR EACH ROW EXECUTE FUNCTION ${SCHEMA}.shift_id()`,
    );
    const results = await conn.createRecords(
      'shifted',
      [1, 2].map((id) => ({ serviceId: randomUUID(), values: { id, title: `t${id}` } })),
    );
    expect(results).toEqual([
      { ok: true, remoteId: '1001', record: null },
      { ok: true, remoteId: '1002', record: null },
    ]);
  });

  it('reports the key as PostgreSQL prints it when it was written in another form', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.keyforms (id bigint PRIMARY KEY, u uuid UNIQUE)`);
    const results = await conn.createRecords('keyforms', [
      { serviceId: randomUUID(), values: { id: '007' } },
      { serviceId: randomUUID(), values: { id: '9223372036854775807' } },
    ]);
    expect(results.map((result) => (result.ok ? result.remoteId : result.error.message))).toEqual([
      '7',
      '9223372036854775807',
    ]);
  });

  it('COPY and INSERT write the same values, and readPage (COPY out) reads what readByIds reads', async () => {
    const columns = `id integer PRIMARY KEY, t text, v varchar(20), c char(4), n numeric(8,3), f double precision, b boolean,
      ts timestamptz, d date, j jsonb, ta text[], ia integer[], iv interval`;
    await db.admin.query(`CREATE TABLE ${SCHEMA}.copied (${columns})`);
    await db.admin.query(`CREATE TABLE ${SCHEMA}.inserted (${columns})`);
    // A BEFORE trigger that changes nothing still makes the table ineligible for COPY.
    await db.admin.query(
      `CREATE FUNCTION ${SCHEMA}.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
    );
    await db.admin.query(
      `CREATE TRIGGER keep BEFORE INSERT ON ${SCHEMA}.inserted FOR EACH ROW EXECUTE FUNCTION ${SCHEMA}.keep()`,
    );
    const tricky = [
      'tab\there',
      'new\nline\r\n',
      'back\\slash',
      '\\N',
      'NULL',
      '',
      '"quoted"',
      'ünïcødé ✓',
      '{braces, commas}',
    ];
    const rows = tricky.map((text, index) => ({
      serviceId: randomUUID(),
      values: {
        id: index + 1,
        t: text,
        v: text.slice(0, 20),
        c: 'ab',
        n: '1.0005',
        f: index === 0 ? 1e300 : 0.1 * index,
        b: index % 2 === 0,
        ts: '2024-02-29T15:45:30.25+02:00',
        d: '2024-02-29',
        j: { text, list: [text, null, 1.5] },
        ta: [text, null, 'NULL', ''],
        ia:
          index === 0
            ? [
                [1, 2],
                [3, 4],
              ]
            : [index, null],
        iv: 'P1DT2H',
      },
    }));
    const copies = jest.spyOn(CopyInQuery.prototype, 'handleCopyInResponse');
    try {
      for (const table of ['copied', 'inserted']) {
        const results = await conn.createRecords(table, rows);
        expect(results.filter((result) => !result.ok)).toEqual([]);
        // Only the key and nulls elsewhere: a row of its own (a call with two field sets is two INSERTs).
        expect(await conn.createRecords(table, [{ serviceId: randomUUID(), values: { id: 100 } }])).toEqual([
          { ok: true, remoteId: '100', record: null },
        ]);
        // Both calls on `copied` were COPYs; none on `inserted` (its trigger makes it ineligible).
        expect(copies).toHaveBeenCalledTimes(2);
      }
    } finally {
      copies.mockRestore();
    }
    const copied = (await conn.readPage('copied', { pageSize: 100 })).records;
    const inserted = (await conn.readPage('inserted', { pageSize: 100 })).records;
    expect(copied).toEqual(inserted);
    expect(
      await conn.readByIds(
        'copied',
        copied.map((record) => record.remoteId),
      ),
    ).toEqual(copied);
    const first = copied[0]!.values;
    expect(first).toMatchObject({
      t: 'tab\there',
      c: 'ab  ',
      n: '1.001',
      f: 1e300,
      ts: '2024-02-29T13:45:30.25Z',
      ia: [
        [1, 2],
        [3, 4],
      ],
      iv: 'P1DT2H',
    });
    expect(copied.map((record) => record.values['t'])).toEqual([...tricky, null]);
    expect(copied.map((record) => record.values['ta'])).toEqual([
      ...tricky.map((text) => [text, null, 'NULL', '']),
      null,
    ]);
    expect(copied.map((record) => record.values['j'])).toEqual([
      ...tricky.map((text) => ({ text, list: [text, null, 1.5] })),
      null,
    ]);
  });

  it('readPage reads integers and booleans straight from the COPY line exactly as readByIds decodes them', async () => {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.numbers (id bigint PRIMARY KEY, s smallint, i integer, b bigint, flag boolean)`,
    );
    await db.admin.query(`INSERT INTO ${SCHEMA}.numbers VALUES
      (-9223372036854775808, -32768, -2147483648, -1, true), (-5, 0, 0, 0, false), (0, NULL, NULL, NULL, NULL),
      (1, 32767, 2147483647, 999999999999999, true), (2, 1, -1, 1000000000000000, false),
      (3, 2, 2, 9007199254740991, true), (4, 3, 3, 9007199254740993, false), (9223372036854775807, 4, 4, -9223372036854775807, true)`);
    const page = (await conn.readPage('numbers', { pageSize: 100 })).records;
    expect(page.map((record) => [record.remoteId, record.values])).toEqual([
      ['-9223372036854775808', { id: '-9223372036854775808', s: -32768, i: -2147483648, b: -1, flag: true }],
      ['-5', { id: -5, s: 0, i: 0, b: 0, flag: false }],
      ['0', { id: 0, s: null, i: null, b: null, flag: null }],
      ['1', { id: 1, s: 32767, i: 2147483647, b: 999999999999999, flag: true }],
      ['2', { id: 2, s: 1, i: -1, b: 1000000000000000, flag: false }],
      ['3', { id: 3, s: 2, i: 2, b: 9007199254740991, flag: true }],
      ['4', { id: 4, s: 3, i: 3, b: '9007199254740993', flag: false }],
      [
        '9223372036854775807',
        { id: '9223372036854775807', s: 4, i: 4, b: '-9223372036854775807', flag: true },
      ],
    ]);
    const byId = new Map(
      (
        await conn.readByIds(
          'numbers',
          page.map((record) => record.remoteId),
        )
      ).map((record) => [record.remoteId, record]),
    );
    for (const record of page) expect(byId.get(record.remoteId)).toEqual(record);
    expect(Object.is(page[2]!.values['id'], 0)).toBe(true);
  });

  it('reads a page after a key that needs quoting, and refuses a checkpoint with a NUL character', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.textkeys (k text PRIMARY KEY)`);
    await db.admin.query(`INSERT INTO ${SCHEMA}.textkeys VALUES ('a''b'), ('a\\b'), ('b'), ('c')`);
    const first = await conn.readPage('textkeys', { pageSize: 2 });
    expect(first.records.map((record) => record.remoteId)).toEqual(["a'b", 'a\\b']);
    expect(
      (await conn.readPage('textkeys', { after: first.next, pageSize: 2 })).records.map(
        (record) => record.remoteId,
      ),
    ).toEqual(['b', 'c']);
    await expect(conn.readPage('textkeys', { after: 'x\u0000', pageSize: 2 })).rejects.toMatchObject({
      kind: 'invalid_data',
    });
  });
});
