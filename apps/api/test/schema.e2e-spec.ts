import { DataSource } from 'typeorm';
import { RedisClient } from '../src/common/redis/redis.module';
import { SchemaLocks } from '../src/schema/schema-locks';
import { SchemaService } from '../src/schema/schema.service';
import { SyncAccess } from '../src/syncs/sync-access';
import { bearer, createTestApp, type TestApp } from './support/test-app';
import {
  scratchMysql,
  scratchPg,
  type ScratchMysql,
  type ScratchPg,
  uniqueName,
} from './support/scratch-dbs';

interface Table {
  id: string;
  remote_id: string;
  name: string;
  fields_fetched_at: string | null;
  fields_url: string;
}
interface Field {
  id: string;
  remote_id: string;
}

describe('schema discovery (spec 2.7, 4.3)', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let accountId: string;
  let write: string;
  let read: string;

  const pgSide = () => ({ connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema });
  const mySide = () => ({ connector: 'mysql', auth: { connectionString: my.url }, base: my.database });
  const newSync = async (body: Record<string, unknown> = {}, key = write): Promise<string> =>
    (
      await t
        .http()
        .post('/v1/sync/syncs')
        .set(bearer(key))
        .send({ name: 'Schema', left: pgSide(), right: mySide(), ...body })
        .expect(201)
    ).body.id;
  const tables = (syncId: string, query: Record<string, string> = {}, key = read) =>
    t.http().get(`/v1/sync/syncs/${syncId}/tables`).query(query).set(bearer(key));
  const fields = (syncId: string, table: string, query: Record<string, string> = {}, key = read) =>
    t
      .http()
      .get(`/v1/sync/syncs/${syncId}/tables/${encodeURIComponent(table)}/fields`)
      .query(query)
      .set(bearer(key));
  const byRemoteId = <T extends { remote_id: string }>(items: T[], remoteId: string): T => {
    const found = items.find((item) => item.remote_id === remoteId);
    if (!found) throw new Error(`no ${remoteId} in ${items.map((item) => item.remote_id).join(', ')}`);
    return found;
  };
  const remoteIds = (items: { remote_id: string }[]) => items.map((item) => item.remote_id).sort();
  /** Simulates the engine: sets the sync's lifecycle state directly in the service store. */
  const setStatus = (syncId: string, status: 'draft' | 'active' | 'paused') =>
    t.app.get(DataSource).query(`UPDATE syncs SET status = $2 WHERE id = $1`, [syncId, status]);

  beforeAll(async () => {
    t = await createTestApp();
    pg = await scratchPg(`
      CREATE TABLE contacts (id serial PRIMARY KEY, email varchar(40) NOT NULL, nickname text, score numeric(10,2), seen_at timestamptz DEFAULT now());
      CREATE TABLE shared (id integer PRIMARY KEY, label text);
      CREATE VIEW contact_emails AS SELECT id, email FROM contacts;
    `);
    my = await scratchMysql([
      `CREATE TABLE people (id int AUTO_INCREMENT PRIMARY KEY, full_name varchar(100) NOT NULL, tags set('red','blue'), active tinyint(1) NOT NULL DEFAULT 1)`,
      'CREATE TABLE shared (id int PRIMARY KEY, label varchar(20))',
    ]);
    accountId = (await t.account()).id;
    write = await t.key(accountId, 'readwrite');
    read = await t.key(accountId, 'read');
  });

  afterAll(async () => {
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  describe('tables', () => {
    it('lists the tables of each side with the shape of 2.7', async () => {
      const syncId = await newSync();
      const left = (await tables(syncId, { side: 'left' }).expect(200)).body;
      expect(left).toEqual({
        fetched_at: expect.any(String),
        side: 'left',
        data: expect.any(Array),
        has_more: false,
        next_cursor: null,
      });
      expect(new Date(left.fetched_at).toISOString()).toBe(left.fetched_at);
      expect(remoteIds(left.data)).toEqual(['contact_emails', 'contacts', 'shared']);
      const contacts = byRemoteId<Table>(left.data, 'contacts');
      expect(contacts).toEqual({
        id: expect.stringMatching(/^table_[0-9a-z]{20}$/),
        remote_id: 'contacts',
        name: 'contacts',
        fields_fetched_at: null,
        views: null,
        read_only: false,
        fields_url: `http://lockstep.test/v1/sync/syncs/${syncId}/tables/${contacts.id}/fields`,
      });
      expect(byRemoteId(left.data, 'contact_emails')).toMatchObject({ read_only: true });

      const right = (await tables(syncId, { side: 'right' }).expect(200)).body;
      expect(right).toMatchObject({ side: 'right', has_more: false, next_cursor: null });
      expect(remoteIds(right.data)).toEqual(['people', 'shared']);
      expect(byRemoteId(right.data, 'people')).toMatchObject({
        id: expect.stringMatching(/^table_/),
        name: 'people',
        views: null,
        read_only: false,
      });
      expect(byRemoteId<Table>(right.data, 'shared').id).not.toBe(byRemoteId<Table>(left.data, 'shared').id);
    });

    it('serves the cache until refresh=true; ids stay stable; a dropped table leaves the listing and comes back under its id', async () => {
      const syncId = await newSync();
      const late = uniqueName('late');
      const first = (await tables(syncId, { side: 'left' }).expect(200)).body;
      await pg.sql(`CREATE TABLE ${late} (id integer PRIMARY KEY)`);

      const cached = (await tables(syncId, { side: 'left', refresh: 'false' }).expect(200)).body;
      expect(cached).toEqual(first);

      const refreshed = (await tables(syncId, { side: 'left', refresh: 'true' }).expect(200)).body;
      expect(Date.parse(refreshed.fetched_at)).toBeGreaterThan(Date.parse(first.fetched_at));
      expect(remoteIds(refreshed.data)).toEqual(remoteIds([...first.data, { remote_id: late }]));
      for (const table of first.data as Table[])
        expect(byRemoteId<Table>(refreshed.data, table.remote_id).id).toBe(table.id);
      const lateId = byRemoteId<Table>(refreshed.data, late).id;

      await pg.sql(`DROP TABLE ${late}`);
      const afterDrop = (await tables(syncId, { side: 'left', refresh: 'true' }).expect(200)).body;
      expect(remoteIds(afterDrop.data)).toEqual(remoteIds(first.data));
      // The row stays (mappings may reference it), flagged orphaned.
      const [row] = await t.app
        .get(DataSource)
        .query(`SELECT orphaned FROM sync_tables WHERE id = $1`, [lateId]);
      expect(row).toEqual({ orphaned: true });
      expect((await fields(syncId, lateId)).status).toBe(404);

      await pg.sql(`CREATE TABLE ${late} (id integer PRIMARY KEY)`);
      const back = (await tables(syncId, { side: 'left', refresh: 'true' }).expect(200)).body;
      expect(byRemoteId<Table>(back.data, late).id).toBe(lateId);
      await pg.sql(`DROP TABLE ${late}`);
    });

    it.each<[string, Record<string, string>, string]>([
      ['a missing side', {}, 'invalid_side'],
      ['an unknown side', { side: 'middle' }, 'invalid_side'],
      ['an empty side', { side: '' }, 'invalid_side'],
      ['a refresh that is not true or false', { side: 'left', refresh: 'yes' }, 'invalid_request'],
    ])('refuses %s with 400', async (_name, query, code) => {
      const syncId = await newSync();
      const res = await tables(syncId, query).expect(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code });
    });
  });

  describe('fields', () => {
    let syncId: string;
    let left: Table[];
    let right: Table[];
    beforeAll(async () => {
      syncId = await newSync();
      left = (await tables(syncId, { side: 'left' }).expect(200)).body.data;
      right = (await tables(syncId, { side: 'right' }).expect(200)).body.data;
    });

    it('lists PostgreSQL fields by prefixed id with types, flags and type_details', async () => {
      const contacts = byRemoteId(left, 'contacts');
      const res = (await fields(syncId, contacts.id).expect(200)).body;
      expect(res).toEqual({
        fetched_at: expect.any(String),
        table: { id: contacts.id, remote_id: 'contacts', name: 'contacts', side: 'left' },
        data: expect.any(Array),
        has_more: false,
        next_cursor: null,
      });
      expect(res.data.map((f: Field) => f.remote_id)).toEqual([
        'id',
        'email',
        'nickname',
        'score',
        'seen_at',
      ]);
      const [id, email, nickname, score, seenAt] = res.data;
      expect(id).toEqual({
        id: expect.stringMatching(/^field_[0-9a-z]{20}$/),
        remote_id: 'id',
        name: 'id',
        type: 'integer',
        read: true,
        write: false,
        required: false,
        primary: true,
        type_details: { generated: true },
      });
      expect(email).toEqual({
        id: expect.stringMatching(/^field_/),
        remote_id: 'email',
        name: 'email',
        type: 'character varying(40)',
        read: true,
        write: true,
        required: true,
        primary: false,
        type_details: { max_length: 40 },
      });
      expect(nickname).toMatchObject({ type: 'text', required: false, primary: false, type_details: null });
      expect(score).toMatchObject({ type: 'numeric(10,2)', type_details: { precision: 10, scale: 2 } });
      expect(seenAt).toMatchObject({ type: 'timestamp with time zone', write: true, required: false });
      // The table listing now shows when its fields were read.
      const listed = byRemoteId<Table>(
        (await tables(syncId, { side: 'left' }).expect(200)).body.data,
        'contacts',
      );
      expect(listed.fields_fetched_at).toBe(res.fetched_at);
    });

    it('lists MariaDB fields by remote id (found on the one side that has it)', async () => {
      const res = (await fields(syncId, 'people').expect(200)).body;
      expect(res.table).toEqual({
        id: byRemoteId(right, 'people').id,
        remote_id: 'people',
        name: 'people',
        side: 'right',
      });
      const byName = Object.fromEntries(res.data.map((f: Field) => [f.remote_id, f]));
      expect(Object.keys(byName)).toEqual(['id', 'full_name', 'tags', 'active']);
      expect(byName.id).toMatchObject({ primary: true, write: false, required: false });
      expect(byName.full_name).toMatchObject({
        type: 'varchar(100)',
        read: true,
        write: true,
        required: true,
        primary: false,
        type_details: { max_length: 100 },
      });
      expect(byName.tags).toMatchObject({
        type: 'set',
        required: false,
        type_details: { allows_multiple_values: true, options: ['red', 'blue'] },
      });
      expect(byName.active).toMatchObject({ type: 'tinyint(1)', required: false, type_details: null });
    });

    it('resolves a remote id present on both sides only with side, else 400 table_ambiguous', async () => {
      const ambiguous = await fields(syncId, 'shared').expect(400);
      expect(ambiguous.body.error).toMatchObject({
        code: 'table_ambiguous',
        message: expect.stringContaining('prefixed'),
      });
      expect(ambiguous.body.error.details.tables.map((x: { side: string }) => x.side).sort()).toEqual([
        'left',
        'right',
      ]);
      const onRight = (await fields(syncId, 'shared', { side: 'right' }).expect(200)).body;
      expect(onRight.table).toMatchObject({ id: byRemoteId(right, 'shared').id, side: 'right' });
      expect(onRight.data.map((f: Field) => f.remote_id)).toEqual(['id', 'label']);
      const onLeft = (await fields(syncId, 'shared', { side: 'left' }).expect(200)).body;
      expect(onLeft.table).toMatchObject({ id: byRemoteId(left, 'shared').id, side: 'left' });
      // The prefixed id needs no side.
      expect((await fields(syncId, byRemoteId(right, 'shared').id).expect(200)).body.table.side).toBe(
        'right',
      );
    });

    it.each<[string, () => string, Record<string, string>, number, string]>([
      ['an unknown remote id', () => 'no_such_table', {}, 404, 'not_found'],
      ['a remote id on the other side only', () => 'people', { side: 'left' }, 404, 'not_found'],
      ['an unknown prefixed id', () => 'table_00000000000000000000', {}, 404, 'not_found'],
      [
        'a prefixed id with the other side',
        () => byRemoteId(left, 'contacts').id,
        { side: 'right' },
        404,
        'not_found',
      ],
      ['an invalid side', () => 'people', { side: 'up' }, 400, 'invalid_side'],
      ['a refresh that is not true or false', () => 'people', { refresh: '1' }, 400, 'invalid_request'],
    ])('refuses %s', async (_name, table, query, status, code) => {
      const res = await fields(syncId, table(), query).expect(status);
      expect(res.body.error.code).toBe(code);
    });

    it('serves the cache until refresh=true, keeping field ids; a dropped column leaves the listing', async () => {
      const first = (await fields(syncId, 'shared', { side: 'right' }).expect(200)).body;
      await my.sql('ALTER TABLE shared ADD COLUMN note text');
      expect((await fields(syncId, 'shared', { side: 'right' }).expect(200)).body).toEqual(first);
      const refreshed = (await fields(syncId, 'shared', { side: 'right', refresh: 'true' }).expect(200)).body;
      expect(Date.parse(refreshed.fetched_at)).toBeGreaterThan(Date.parse(first.fetched_at));
      expect(refreshed.data.map((f: Field) => f.remote_id)).toEqual(['id', 'label', 'note']);
      for (const field of first.data as Field[])
        expect(byRemoteId<Field>(refreshed.data, field.remote_id).id).toBe(field.id);
      const note = byRemoteId<Field>(refreshed.data, 'note');

      await my.sql('ALTER TABLE shared DROP COLUMN note');
      const dropped = (await fields(syncId, 'shared', { side: 'right', refresh: 'true' }).expect(200)).body;
      expect(dropped.data.map((f: Field) => f.remote_id)).toEqual(['id', 'label']);
      const [row] = await t.app
        .get(DataSource)
        .query(`SELECT orphaned FROM sync_fields WHERE id = $1`, [note.id]);
      expect(row).toEqual({ orphaned: true });
    });

    it("fetches a never-fetched side's table list before resolving a remote id", async () => {
      const fresh = await newSync();
      const res = (await fields(fresh, 'people').expect(200)).body;
      expect(res.table).toMatchObject({ remote_id: 'people', side: 'right' });
      const listed = (await tables(fresh, { side: 'right' }).expect(200)).body.data;
      expect(byRemoteId<Table>(listed, 'people')).toMatchObject({
        id: res.table.id,
        fields_fetched_at: res.fetched_at,
      });
    });
  });

  describe('sync state and access', () => {
    it('answers 409 sync_active to refresh=true on an active sync, and serves the cache', async () => {
      const syncId = await newSync();
      const listed = (await tables(syncId, { side: 'left' }).expect(200)).body;
      const contacts = byRemoteId<Table>(listed.data, 'contacts');
      await setStatus(syncId, 'active');
      const res = await tables(syncId, { side: 'left', refresh: 'true' }).expect(409);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'sync_active' });
      expect((await fields(syncId, contacts.id, { refresh: 'true' }).expect(409)).body.error.code).toBe(
        'sync_active',
      );
      expect((await tables(syncId, { side: 'left' }).expect(200)).body).toEqual(listed);
      await fields(syncId, contacts.id).expect(200);
      await setStatus(syncId, 'paused');
      await tables(syncId, { side: 'left', refresh: 'true' }).expect(200);
      await fields(syncId, contacts.id, { refresh: 'true' }).expect(200);
    });

    it('answers 409 auth_required while a side is not connected', async () => {
      const syncId = await newSync({ right: { connector: 'mysql' } });
      for (const res of [await tables(syncId, { side: 'left' }), await fields(syncId, 'contacts')]) {
        expect(res.status).toBe(409);
        expect(res.body.error).toMatchObject({
          type: 'requires_action',
          code: 'auth_required',
          required_action: {
            type: 'user_authorization',
            side: 'right',
            connector: 'mysql',
            url: `http://lockstep.test/app/syncs/${syncId}/connect/right`,
          },
        });
      }
    });

    it("answers 404 for another account's sync and for a one-sync key of another sync", async () => {
      const syncId = await newSync();
      const table = byRemoteId<Table>(
        (await tables(syncId, { side: 'left' }).expect(200)).body.data,
        'contacts',
      );
      const stranger = await t.key((await t.account()).id, 'read');
      const otherSync = await newSync();
      const oneSyncKey = await t.key(accountId, 'read', otherSync);
      for (const key of [stranger, oneSyncKey]) {
        expect((await tables(syncId, { side: 'left' }, key).expect(404)).body.error.code).toBe('not_found');
        expect((await fields(syncId, table.id, {}, key).expect(404)).body.error.code).toBe('not_found');
        expect((await fields(syncId, 'contacts', {}, key).expect(404)).body.error.code).toBe('not_found');
      }
      await tables(otherSync, { side: 'left' }, oneSyncKey).expect(200);
      expect((await tables('sync_nope', { side: 'left' }).expect(404)).body.error.code).toBe('not_found');
    });

    it('marks the side broken when the app rejects the stored credentials', async () => {
      const role = uniqueName('e2e_role');
      await pg.sql(`CREATE ROLE ${role} LOGIN`);
      await pg.sql(`GRANT USAGE ON SCHEMA ${pg.schema} TO ${role}`);
      try {
        const url = new URL(pg.url);
        url.username = role;
        const syncId = await newSync({
          left: { connector: 'postgres', auth: { connectionString: url.toString() }, base: pg.schema },
        });
        await pg.sql(`ALTER ROLE ${role} NOLOGIN`);
        const res = await tables(syncId, { side: 'left' }).expect(400);
        expect(res.body.error.code).toBe('invalid_auth');
        const sync = (await t.http().get(`/v1/sync/syncs/${syncId}`).set(bearer(read)).expect(200)).body;
        expect(sync.left).toMatchObject({ auth_status: 'error', auth_error: 'invalid_credentials' });
      } finally {
        await pg.sql(`REVOKE USAGE ON SCHEMA ${pg.schema} FROM ${role}`);
        await pg.sql(`DROP ROLE ${role}`);
      }
    });
  });

  describe('concurrent loads', () => {
    /** Holds a load lock as another API instance would while it reads the schema from the app. */
    const hold = (key: string) => t.app.get(RedisClient).client.set(key, 'another-request', 'PX', 60_000);
    const free = (key: string) => t.app.get(RedisClient).client.del(key);

    it('answers 202 {loading: true} with Retry-After while another request loads, then 200', async () => {
      const syncId = await newSync();
      const locks = t.app.get(SchemaLocks);
      const tablesKey = locks.tablesKey(syncId, 'left');
      await hold(tablesKey);
      try {
        const res = await tables(syncId, { side: 'left' }).expect(202);
        expect(res.body).toEqual({ loading: true });
        expect(res.headers['retry-after']).toBe('2');
        // Resolving a bare remote id needs the left list too.
        expect((await fields(syncId, 'contacts').expect(202)).body).toEqual({ loading: true });
        // The right side has its own lock.
        await tables(syncId, { side: 'right' }).expect(200);
      } finally {
        await free(tablesKey);
      }
      const listed = (await tables(syncId, { side: 'left' }).expect(200)).body;
      // Once cached, a held lock does not matter to plain reads, only to a refresh.
      await hold(tablesKey);
      try {
        expect((await tables(syncId, { side: 'left' }).expect(200)).body).toEqual(listed);
        await tables(syncId, { side: 'left', refresh: 'true' }).expect(202);
      } finally {
        await free(tablesKey);
      }

      const contacts = byRemoteId<Table>(listed.data, 'contacts');
      const fieldsKey = locks.fieldsKey(contacts.id);
      await hold(fieldsKey);
      try {
        const res = await fields(syncId, contacts.id).expect(202);
        expect(res.body).toEqual({ loading: true });
        expect(res.headers['retry-after']).toBe('2');
      } finally {
        await free(fieldsKey);
      }
      await fields(syncId, contacts.id).expect(200);
    });

    it('lets one of several simultaneous first requests load and the rest answer 202', async () => {
      const syncId = await newSync();
      const results = await Promise.all([1, 2, 3, 4].map(() => tables(syncId, { side: 'right' })));
      expect(results.map((r) => r.status).filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
      expect(
        results.every((r) => r.status === 200 || (r.status === 202 && r.headers['retry-after'] === '2')),
      ).toBe(true);
      const ids = (await tables(syncId, { side: 'right' }).expect(200)).body.data.map((x: Table) => x.id);
      const [{ n }] = await t.app
        .get(DataSource)
        .query(`SELECT count(*)::int AS n FROM sync_tables WHERE sync_id = $1 AND side = 'right'`, [syncId]);
      expect(n).toBe(ids.length);
    });
  });

  describe('SchemaService for the mappings module', () => {
    it("returns a side's schema with orphaned rows, fetches fields on demand and re-reads a created table", async () => {
      const syncId = await newSync();
      const service = t.app.get(SchemaService);
      const loaded = await t.app
        .get(SyncAccess)
        .load({ accountId, keyId: 'key_test', scope: 'read', syncId: null, plan: 'free' }, syncId);
      const gone = uniqueName('gone');
      await pg.sql(`CREATE TABLE ${gone} (id integer PRIMARY KEY)`);

      const first = await service.loadSideSchema(loaded, 'left');
      const contacts = first.tables.find((x) => x.remoteId === 'contacts')!;
      expect(contacts).toMatchObject({ side: 'left', orphaned: false, fields: null, fieldsFetchedAt: null });
      const contactFields = await service.ensureFields(loaded, contacts);
      expect(contactFields.map((f) => [f.remoteId, f.typeClass])).toEqual([
        ['id', 'integer'],
        ['email', 'text'],
        ['nickname', 'text'],
        ['score', 'decimal'],
        ['seen_at', 'timestamp'],
      ]);
      expect(contacts.fieldsFetchedAt).toBeInstanceOf(Date);
      expect(await service.ensureFields(loaded, contacts)).toEqual(contactFields);

      await pg.sql(`DROP TABLE ${gone}`);
      await tables(syncId, { side: 'left', refresh: 'true' }).expect(200);
      const second = await service.loadSideSchema(loaded, 'left');
      expect(second.tables.find((x) => x.remoteId === gone)).toMatchObject({ orphaned: true });
      expect(second.tables.find((x) => x.remoteId === 'contacts')?.fields?.map((f) => f.id)).toEqual(
        contactFields.map((f) => f.id),
      );

      const created = uniqueName('created');
      await pg.sql(
        `CREATE TABLE ${created} (lockstep_id uuid PRIMARY KEY DEFAULT gen_random_uuid(), title text)`,
      );
      const table = await service.refreshTableAfterCreate(loaded, 'left', created);
      expect(table).toMatchObject({
        id: expect.stringMatching(/^table_/),
        remoteId: created,
        side: 'left',
        orphaned: false,
        fieldsFetchedAt: expect.any(Date),
      });
      expect(table.fields.map((f) => f.remoteId)).toEqual(['lockstep_id', 'title']);
      await pg.sql(`ALTER TABLE ${created} ADD COLUMN body text`);
      const again = await service.refreshTableAfterCreate(loaded, 'left', created);
      expect(again.id).toBe(table.id);
      expect(again.fields.map((f) => f.remoteId)).toEqual(['lockstep_id', 'title', 'body']);
      expect(
        byRemoteId<Table>((await tables(syncId, { side: 'left' }).expect(200)).body.data, created).id,
      ).toBe(table.id);
      await pg.sql(`DROP TABLE ${created}`);
    });
  });
});
