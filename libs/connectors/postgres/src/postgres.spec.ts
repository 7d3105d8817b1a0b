/**
 * PostgreSQL-specific behaviour beyond the shared contract suite: late-committing transactions in the change
 * feed, views, privileges, TLS settings and composite keys.
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_EGRESS_POLICY, type Connection } from '@lockstep/connectors-core';
import { readAllChanges, readAllPages } from '@lockstep/connectors-core/testing';
import { Client } from 'pg';
import { postgresConnector } from './index';
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

  it('with a writeOrigin, marks only that connection\'s writes as own', async () => {
    const syncA = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, { ...context, writeOrigin: 'sync_a' });
    const syncB = await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, { ...context, writeOrigin: 'sync_b' });
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

  it('refuses a checkpoint it did not issue', async () => {
    await expect(conn.readChanges('late', 'not a checkpoint', { limit: 10 })).rejects.toMatchObject({ kind: 'invalid_data' });
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
    const limited = await postgresConnector.connect({ connectionString: db.url({ user: role }) }, SCHEMA, context);
    try {
      const error = await limited.prepareTable('guarded', { changeCapture: true }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({ kind: 'permission', appCode: '42501' });
      expect((error as Error).message).toMatch(/^Could not prepare table "guarded" for sync: must be owner of table guarded/);
    } finally {
      await limited.close();
    }
  });

  it('adds a service id to a table with a composite primary key and pages by it', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.pairs (a integer, b integer, note text, PRIMARY KEY (a, b))`);
    await db.admin.query(`INSERT INTO ${SCHEMA}.pairs VALUES (1, 1, 'x'), (1, 2, 'y')`);
    await expect(conn.readPage('pairs', { pageSize: 10 })).rejects.toMatchObject({ kind: 'unsupported' });
    expect(await conn.prepareTable('pairs', { changeCapture: true })).toEqual({ serviceIdField: 'lockstep_id', changeCapture: true });
    const records = (await readAllPages(conn, 'pairs', 1)).flat();
    expect(records).toHaveLength(2);
    for (const record of records) expect(record.remoteId).toBe(record.serviceId);
    const fields = await conn.listFields('pairs');
    expect(fields.filter((field) => field.primary).map((field) => field.remoteId)).toEqual(['a', 'b']);
    expect(fields.find((field) => field.remoteId === 'lockstep_id')).toMatchObject({ read: true, write: false, typeClass: 'uuid' });
  });

  it('a table with a natural primary key reports the created row remote id', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.natural (code text PRIMARY KEY, serial_no bigserial, label text)`);
    const [result] = await conn.createRecords('natural', [{ serviceId: randomUUID(), values: { code: 'abc', label: 'x' } }]);
    expect(result).toMatchObject({ ok: true, remoteId: 'abc', record: { values: { code: 'abc', serial_no: 1, label: 'x' } } });
    const fields = await conn.listFields('natural');
    expect(fields.find((field) => field.remoteId === 'serial_no')).toMatchObject({ write: false, required: false });
    expect(fields.find((field) => field.remoteId === 'code')).toMatchObject({ write: true, required: true, primary: true });
  });
});

describe('views', () => {
  it('lists a view as a read-only table and reads it', async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.base_rows (id integer PRIMARY KEY, title text)`);
    await db.admin.query(`INSERT INTO ${SCHEMA}.base_rows VALUES (1, 'a'), (2, 'b'), (3, 'c')`);
    await db.admin.query(`CREATE VIEW ${SCHEMA}.base_view AS SELECT id, upper(title) AS title FROM ${SCHEMA}.base_rows`);
    const tables = await conn.listTables();
    expect(tables.find((table) => table.remoteId === 'base_view')).toEqual({ remoteId: 'base_view', name: 'base_view', views: null, readOnly: true });
    const fields = await conn.listFields('base_view');
    expect(fields.every((field) => field.read && !field.write)).toBe(true);
    const records = (await readAllPages(conn, 'base_view', 2)).flat();
    expect(records.map((record) => [record.remoteId, record.values['title']])).toEqual([
      ['1', 'A'],
      ['2', 'B'],
      ['3', 'C'],
    ]);
    expect(await conn.prepareTable('base_view', { changeCapture: true })).toEqual({ serviceIdField: null, changeCapture: false });
    await expect(conn.createRecords('base_view', [{ serviceId: randomUUID(), values: { title: 'x' } }])).rejects.toMatchObject({ kind: 'permission' });
  });
});

describe('connection strings', () => {
  it('honours sslmode (a server without a trusted certificate for 127.0.0.1 is a connection error)', async () => {
    const tls = await postgresConnector.connect({ connectionString: db.url({ host: '127.0.0.1', query: '?sslmode=verify-full' }) }, null, context);
    try {
      await expect(tls.checkCredentials()).rejects.toMatchObject({ kind: 'transient' });
    } finally {
      await tls.close();
    }
    const plain = await postgresConnector.connect({ connectionString: db.url({ query: '?sslmode=disable' }) }, null, context);
    try {
      await expect(plain.checkCredentials()).resolves.toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it('reports a database that does not exist as an auth failure with the reason', async () => {
    const wrong = await postgresConnector.connect({ connectionString: db.url().replace(db.name, `${db.name}_missing`) }, null, context);
    try {
      await expect(wrong.checkCredentials()).rejects.toMatchObject({ kind: 'auth', message: expect.stringContaining('does not exist') });
    } finally {
      await wrong.close();
    }
  });

  it('lists bases without system schemas or the lockstep schema', async () => {
    const bases = (await conn.listBases()).map((base) => base.id);
    expect(bases).toContain(SCHEMA);
    expect(bases).toContain('public');
    expect(bases.filter((base) => base.startsWith('pg_') || base === 'information_schema' || base === 'lockstep')).toEqual([]);
  });
});
