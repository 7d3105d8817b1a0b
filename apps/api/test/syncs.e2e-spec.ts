import { DataSource } from 'typeorm';
import { ConnectorCatalog } from '../src/connectors/connector-catalog';
import { bearer, createTestApp, type TestApp } from './support/test-app';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';
import { GOOD_FAKE_KEY, TEST_CONNECTORS } from './support/test-connectors';

describe('syncs (spec 2.3-2.5, 3.1, 4.2)', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let pg2: ScratchPg;
  let my: ScratchMysql;
  let write: string;
  let read: string;
  let operate: string;
  let accountId: string;

  const pgSide = (schema = pg.schema, url = pg.url) => ({
    connector: 'postgres',
    auth: { connectionString: url },
    base: schema,
  });
  const mySide = () => ({ connector: 'mysql', auth: { connectionString: my.url }, base: my.database });
  const create = (body: unknown, key = write) =>
    t
      .http()
      .post('/v1/sync/syncs')
      .set(bearer(key))
      .send(body as object);
  const countSyncs = async () =>
    Number(
      (
        await t.app
          .get(DataSource)
          .query(`SELECT count(*) AS n FROM syncs WHERE account_id = $1`, [accountId])
      )[0].n,
    );

  beforeAll(async () => {
    t = await createTestApp();
    const catalog = t.app.get(ConnectorCatalog);
    for (const connector of TEST_CONNECTORS) catalog.add(connector);
    pg = await scratchPg('CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL)');
    pg2 = await scratchPg();
    my = await scratchMysql([
      'CREATE TABLE contacts (id int AUTO_INCREMENT PRIMARY KEY, full_name varchar(100))',
    ]);
    accountId = (await t.account()).id;
    write = await t.key(accountId, 'readwrite');
    read = await t.key(accountId, 'read');
    operate = await t.key(accountId, 'operate');
  });

  afterAll(async () => {
    await Promise.all([pg?.drop(), pg2?.drop(), my?.drop()]);
    await t?.close();
  });

  describe('create', () => {
    it('builds both sides live and returns a draft with every link and a review action', async () => {
      const res = await create({ name: 'People', left: pgSide(), right: mySide() }).expect(201);
      const sync = res.body;
      expect(sync).toMatchObject({
        id: expect.stringMatching(/^sync_[0-9a-z]{20}$/),
        name: 'People',
        status: 'draft',
        activating: false,
        open_issues: 0,
        delete_approval: 'review_required',
        pending_deletes: 0,
        initial_sync: 'not_started',
        left: {
          connector: 'postgres',
          auth_method: 'api_key',
          base: { id: pg.schema, name: pg.schema },
          auth_status: 'ok',
          auth_error: null,
        },
        right: { connector: 'mysql', base: { id: my.database }, auth_status: 'ok', auth_error: null },
      });
      expect(sync.pending_actions).toEqual([
        expect.objectContaining({
          type: 'user_confirmation',
          audience: 'end_user',
          action: 'open_in_browser',
          side: null,
          url: sync.review_url,
          instruction: expect.any(String),
        }),
      ]);
      for (const link of [
        'review_url',
        'tables_url',
        'mappings_url',
        'operations_url',
        'issues_url',
        'pending_deletes_url',
        'status_url',
        'validate_url',
      ]) {
        expect(sync[link]).toMatch(/^http:\/\/lockstep\.test\//);
      }
      expect(sync.tables_url).toBe(`http://lockstep.test/v1/sync/syncs/${sync.id}/tables?side=left`);
      // Fields belong to a table: the link leads to the table listing, each table of which links its fields.
      expect(sync.fields_url).toBe(`http://lockstep.test/v1/sync/syncs/${sync.id}/tables?side=left`);
      expect(sync.issues_url).toBe(`http://lockstep.test/v1/sync/issues?sync=${sync.id}`);
      expect(JSON.stringify(sync)).not.toContain('connectionString');
      const again = await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(read)).expect(200);
      expect(again.body).toEqual({ ...sync });
    });

    it('defers a side sent without auth and base; a built right side moves to the left slot', async () => {
      const res = await create({ name: 'Deferred', left: { connector: 'mysql' }, right: pgSide() }).expect(
        201,
      );
      expect(res.body.left).toMatchObject({ connector: 'postgres' });
      expect(res.body.right).toBeNull();
      expect(res.body.pending_actions).toEqual([
        expect.objectContaining({
          type: 'user_authorization',
          side: 'right',
          connector: 'mysql',
          url: `http://lockstep.test/app/syncs/${res.body.id}/connect/right`,
        }),
        expect.objectContaining({ type: 'user_confirmation' }),
      ]);
    });

    it('takes an oauth side with only a connector and returns it null with a user_authorization action', async () => {
      const res = await create({ name: 'OAuth', left: pgSide(), right: { connector: 'fake_oauth' } }).expect(
        201,
      );
      expect(res.body.right).toBeNull();
      expect(res.body.pending_actions[0]).toMatchObject({
        type: 'user_authorization',
        side: 'right',
        connector: 'fake_oauth',
      });
    });

    it('replays with the same Idempotency-Key', async () => {
      const body = { name: 'Idem', left: pgSide(), right: mySide() };
      const first = await create(body).set('Idempotency-Key', 'sync-create-1').expect(201);
      const second = await create(body).set('Idempotency-Key', 'sync-create-1').expect(201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body.id).toBe(first.body.id);
      const reused = await create({ ...body, name: 'Other' })
        .set('Idempotency-Key', 'sync-create-1')
        .expect(400);
      expect(reused.body.error.code).toBe('idempotency_key_reused');
    });

    const invalidCases: [string, () => unknown, number, string][] = [
      ['no name', () => ({ left: pgSide(), right: mySide() }), 400, 'invalid_request'],
      [
        'a side that is not an object',
        () => ({ name: 'x', left: 'postgres', right: mySide() }),
        400,
        'invalid_request',
      ],
      [
        'auth with an undeclared field',
        () => ({
          name: 'x',
          left: { connector: 'postgres', auth: { password: 'x' }, base: 'public' },
          right: mySide(),
        }),
        400,
        'invalid_request',
      ],
      [
        'auth with a non-string value',
        () => ({
          name: 'x',
          left: { connector: 'postgres', auth: { connectionString: 5 }, base: 'public' },
          right: mySide(),
        }),
        400,
        'invalid_request',
      ],
      [
        'an unknown connector',
        () => ({ name: 'x', left: { connector: 'nope' }, right: mySide() }),
        400,
        'unknown_connector',
      ],
      [
        'a connector above the plan',
        () => ({ name: 'x', left: { connector: 'fake_paid' }, right: mySide() }),
        400,
        'unknown_connector',
      ],
      [
        'base without auth',
        () => ({ name: 'x', left: { connector: 'postgres', base: 'public' }, right: mySide() }),
        400,
        'missing_auth',
      ],
      [
        'auth without base',
        () => ({
          name: 'x',
          left: { connector: 'postgres', auth: { connectionString: pg.url } },
          right: mySide(),
        }),
        400,
        'missing_base',
      ],
      [
        'auth on an oauth side',
        () => ({ name: 'x', left: pgSide(), right: { connector: 'fake_oauth', auth: { token: 'x' } } }),
        400,
        'auth_not_supported',
      ],
      [
        'base on an oauth side',
        () => ({ name: 'x', left: pgSide(), right: { connector: 'fake_oauth', base: 'b' } }),
        400,
        'base_not_supported',
      ],
      [
        'a connector that cannot sync to itself',
        () => ({ name: 'x', left: { connector: 'fake_solo' }, right: { connector: 'fake_solo' } }),
        400,
        'connector_pair_not_allowed',
      ],
      [
        'credentials the app rejects',
        () => ({
          name: 'x',
          left: pgSide(pg.schema, 'postgres://no_such_role_e2e@127.0.0.1:5432/postgres'),
          right: mySide(),
        }),
        400,
        'invalid_auth',
      ],
      [
        'a fake key the app rejects',
        () => ({
          name: 'x',
          left: { connector: 'fake_solo', auth: { apiKey: 'wrong' }, base: 'base_3' },
          right: mySide(),
        }),
        400,
        'invalid_auth',
      ],
      [
        'an unreachable app',
        () => ({
          name: 'x',
          left: pgSide('public', 'postgres://postgres@127.0.0.1:1/postgres'),
          right: mySide(),
        }),
        400,
        'connection_error',
      ],
      [
        'a base that does not exist',
        () => ({ name: 'x', left: pgSide('no_such_schema_e2e'), right: mySide() }),
        400,
        'base_not_found',
      ],
      [
        'a base name matching two bases',
        () => ({
          name: 'x',
          left: { connector: 'fake_solo', auth: { apiKey: GOOD_FAKE_KEY }, base: 'Sales' },
          right: mySide(),
        }),
        400,
        'base_ambiguous',
      ],
      [
        'both sides on the same base with the same credentials',
        () => ({ name: 'x', left: pgSide(), right: pgSide() }),
        400,
        'base_conflict',
      ],
    ];

    it.each(invalidCases)('refuses %s and keeps nothing', async (_name, body, status, code) => {
      const before = await countSyncs();
      const res = await create(body()).expect(status);
      expect(res.body.error).toMatchObject({
        code,
        message: expect.any(String),
        doc_url: expect.stringContaining(code),
      });
      expect(await countSyncs()).toBe(before);
    });

    it('lists reachable bases in details.bases', async () => {
      const notFound = await create({
        name: 'x',
        left: pgSide('no_such_schema_e2e'),
        right: mySide(),
      }).expect(400);
      expect(notFound.body.error.details.bases).toEqual(
        expect.arrayContaining([{ id: pg.schema, name: pg.schema }]),
      );
      const ambiguous = await create({
        name: 'x',
        left: { connector: 'fake_solo', auth: { apiKey: GOOD_FAKE_KEY }, base: 'Sales' },
        right: mySide(),
      }).expect(400);
      expect(ambiguous.body.error.details.bases).toEqual([
        { id: 'base_1', name: 'Sales' },
        { id: 'base_2', name: 'Sales' },
      ]);
    });

    it('resolves a base by its unique display name and by id', async () => {
      const byName = await create({
        name: 'ByName',
        left: { connector: 'fake_solo', auth: { apiKey: GOOD_FAKE_KEY }, base: 'Operations' },
        right: mySide(),
      }).expect(201);
      expect(byName.body.left.base).toEqual({ id: 'base_3', name: 'Operations' });
      const byId = await create({
        name: 'ById',
        left: { connector: 'fake_solo', auth: { apiKey: GOOD_FAKE_KEY }, base: 'base_1' },
        right: mySide(),
      }).expect(201);
      expect(byId.body.left.base).toEqual({ id: 'base_1', name: 'Sales' });
    });

    it('allows the same connector on two different bases', async () => {
      await create({ name: 'PG to PG', left: pgSide(), right: pgSide(pg2.schema) }).expect(201);
    });

    it('needs readwrite, a subscription, and refuses one-sync keys', async () => {
      expect(
        (await create({ name: 'x', left: pgSide(), right: mySide() }, operate).expect(403)).body.error.code,
      ).toBe('insufficient_scope');
      const sync = (await create({ name: 'Restricted', left: pgSide(), right: mySide() }).expect(201)).body;
      const restricted = await t.key(accountId, 'readwrite', sync.id);
      expect(
        (await create({ name: 'x', left: pgSide(), right: mySide() }, restricted).expect(403)).body.error
          .code,
      ).toBe('sync_restricted_key');
      const poor = await t.account({ subscription: 'none' } as never);
      const poorKey = await t.key(poor.id, 'readwrite');
      expect(
        (await create({ name: 'x', left: pgSide(), right: mySide() }, poorKey).expect(403)).body.error.code,
      ).toBe('subscription_required');
    });
  });

  describe('read, list, visibility', () => {
    it('lists newest first with cursor pagination; a one-sync key sees only its sync', async () => {
      const owner = (await t.account()).id;
      const key = await t.key(owner, 'readwrite');
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1)
        ids.push(
          (await create({ name: `L${i}`, left: pgSide(), right: { connector: 'mysql' } }, key).expect(201))
            .body.id,
        );
      const first = await t.http().get('/v1/sync/syncs?limit=2').set(bearer(key)).expect(200);
      expect(first.body.data.map((s: { id: string }) => s.id)).toEqual([ids[2], ids[1]]);
      expect(first.body.has_more).toBe(true);
      const second = await t
        .http()
        .get(`/v1/sync/syncs?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`)
        .set(bearer(key))
        .expect(200);
      expect(second.body).toMatchObject({
        data: [expect.objectContaining({ id: ids[0] })],
        has_more: false,
        next_cursor: null,
      });
      expect(
        (await t.http().get('/v1/sync/syncs?limit=0').set(bearer(key)).expect(400)).body.error.code,
      ).toBe('invalid_limit');
      expect(
        (await t.http().get('/v1/sync/syncs?cursor=abc').set(bearer(key)).expect(400)).body.error.code,
      ).toBe('invalid_cursor');
      const one = await t.key(owner, 'read', ids[1]);
      const limited = await t.http().get('/v1/sync/syncs').set(bearer(one)).expect(200);
      expect(limited.body.data.map((s: { id: string }) => s.id)).toEqual([ids[1]]);
      expect(
        (await t.http().get(`/v1/sync/syncs/${ids[0]}`).set(bearer(one)).expect(404)).body.error.code,
      ).toBe('not_found');
      await t.http().get(`/v1/sync/syncs/${ids[1]}`).set(bearer(one)).expect(200);
    });

    it("answers 404 for another account's sync, a malformed id and a deleted sync", async () => {
      const sync = (await create({ name: 'Mine', left: pgSide(), right: mySide() }).expect(201)).body;
      const stranger = await t.key((await t.account()).id, 'readwrite');
      for (const path of ['', '/status', '/sides/left/bases']) {
        expect(
          (await t.http().get(`/v1/sync/syncs/${sync.id}${path}`).set(bearer(stranger)).expect(404)).body
            .error.code,
        ).toBe('not_found');
      }
      await t.http().patch(`/v1/sync/syncs/${sync.id}`).set(bearer(stranger)).send({ name: 'x' }).expect(404);
      await t.http().delete(`/v1/sync/syncs/${sync.id}`).set(bearer(stranger)).expect(404);
      await t.http().get('/v1/sync/syncs/not-an-id').set(bearer(read)).expect(404);
      expect(
        (await t.http().delete(`/v1/sync/syncs/${sync.id}`).set(bearer(write)).expect(200)).body,
      ).toEqual({ id: sync.id, deleted: true });
      await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(read)).expect(404);
      await t.http().delete(`/v1/sync/syncs/${sync.id}`).set(bearer(write)).expect(404);
    });

    it("lists a side's bases live; 409 requires_action for a side not connected; 400 invalid_side", async () => {
      const sync = (
        await create({ name: 'Bases', left: pgSide(), right: { connector: 'mysql' } }).expect(201)
      ).body;
      const bases = await t
        .http()
        .get(`/v1/sync/syncs/${sync.id}/sides/left/bases`)
        .set(bearer(read))
        .expect(200);
      expect(bases.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(bases.body.data).toEqual(expect.arrayContaining([{ id: pg.schema, name: pg.schema }]));
      const pending = await t
        .http()
        .get(`/v1/sync/syncs/${sync.id}/sides/right/bases`)
        .set(bearer(read))
        .expect(409);
      expect(pending.body.error).toMatchObject({
        type: 'requires_action',
        code: 'requires_action',
        required_action: { type: 'user_authorization', side: 'right', connector: 'mysql' },
      });
      expect(
        (await t.http().get(`/v1/sync/syncs/${sync.id}/sides/middle/bases`).set(bearer(read)).expect(400))
          .body.error.code,
      ).toBe('invalid_side');
    });

    it('returns a status snapshot', async () => {
      const sync = (
        await create({ name: 'Status', left: pgSide(), right: { connector: 'mysql' } }).expect(201)
      ).body;
      const res = await t.http().get(`/v1/sync/syncs/${sync.id}/status`).set(bearer(read)).expect(200);
      expect(res.body).toMatchObject({
        sync_id: sync.id,
        status: 'draft',
        activating: false,
        captured_at: expect.any(String),
        initial_sync: { phase: 'not_started', started_at: null, finished_at: null, progress: null },
        left: { connector: 'postgres', auth_status: 'ok', polling_state: 'paused' },
        right: { connector: null, auth_status: 'pending', polling_state: 'idle' },
        pending_pushes: { push: 0, refetch: 0, verify_delete: 0 },
        open_issues: 0,
        pending_deletes: 0,
      });
    });
  });

  describe('update', () => {
    it('renames, connects a deferred api_key side with connector+auth+base, and rotates credentials', async () => {
      const sync = (
        await create({ name: 'Patch', left: pgSide(), right: { connector: 'mysql' } }).expect(201)
      ).body;
      const renamed = await t
        .http()
        .patch(`/v1/sync/syncs/${sync.id}`)
        .set(bearer(write))
        .send({ name: 'Renamed' })
        .expect(200);
      expect(renamed.body.name).toBe('Renamed');
      expect(
        (
          await t
            .http()
            .patch(`/v1/sync/syncs/${sync.id}`)
            .set(bearer(write))
            .send({ right: { auth: { connectionString: my.url } } })
            .expect(400)
        ).body.error.code,
      ).toBe('missing_base');
      const connected = await t
        .http()
        .patch(`/v1/sync/syncs/${sync.id}`)
        .set(bearer(write))
        .send({ right: mySide() })
        .expect(200);
      expect(connected.body.right).toMatchObject({ connector: 'mysql', auth_status: 'ok' });
      expect(connected.body.pending_actions.map((a: { type: string }) => a.type)).toEqual([
        'user_confirmation',
      ]);
      const rotated = await t
        .http()
        .patch(`/v1/sync/syncs/${sync.id}`)
        .set(bearer(write))
        .send({ left: { auth: { connectionString: pg.url } } })
        .expect(200);
      expect(rotated.body.left.connected_at).toBe(connected.body.left.connected_at);
      const rejected = await t
        .http()
        .patch(`/v1/sync/syncs/${sync.id}`)
        .set(bearer(write))
        .send({ left: { auth: { connectionString: 'postgres://no_such_role_e2e@127.0.0.1:5432/postgres' } } })
        .expect(400);
      expect(rejected.body.error.code).toBe('invalid_auth');
      expect(
        (
          await t
            .http()
            .patch(`/v1/sync/syncs/${sync.id}`)
            .set(bearer(write))
            .send({ left: { auth: { nope: 'x' } } })
            .expect(400)
        ).body.error.code,
      ).toBe('invalid_request');
    });

    it('rebuilds a side of a draft (connector needs auth and base) and refuses it on a non-draft sync', async () => {
      const sync = (await create({ name: 'Rebuild', left: pgSide(), right: mySide() }).expect(201)).body;
      const patch = (body: object) =>
        t.http().patch(`/v1/sync/syncs/${sync.id}`).set(bearer(write)).send(body);
      expect((await patch({ right: { connector: 'postgres' } }).expect(400)).body.error.code).toBe(
        'missing_auth',
      );
      expect(
        (await patch({ right: { connector: 'postgres', auth: { connectionString: pg.url } } }).expect(400))
          .body.error.code,
      ).toBe('missing_base');
      expect(
        (await patch({ right: { connector: 'nope', auth: {}, base: 'x' } }).expect(400)).body.error.code,
      ).toBe('unknown_connector');
      expect((await patch({ right: { base: 'no_such_db_e2e' } }).expect(400)).body.error.code).toBe(
        'base_not_found',
      );
      expect((await patch({ right: pgSide() }).expect(400)).body.error.code).toBe('base_conflict');
      const rebuilt = await patch({ right: pgSide(pg2.schema) }).expect(200);
      expect(rebuilt.body.right).toMatchObject({ connector: 'postgres', base: { id: pg2.schema } });
      await t.app.get(DataSource).query(`UPDATE syncs SET status = 'paused' WHERE id = $1`, [sync.id]);
      expect((await patch({ right: mySide() }).expect(409)).body.error.code).toBe('sync_not_draft');
      expect((await patch({ left: { base: pg2.schema } }).expect(409)).body.error.code).toBe(
        'sync_not_draft',
      );
      await patch({ left: { auth: { connectionString: pg.url } } }).expect(200);
    });

    it('applies the oauth rules: requires_action for an unconnected sign-in side, oauth_connector_not_supported, invalid_auth for a signed-in side', async () => {
      const sync = (
        await create({ name: 'OAuth patch', left: pgSide(), right: { connector: 'fake_oauth' } }).expect(201)
      ).body;
      const patch = (body: object) =>
        t.http().patch(`/v1/sync/syncs/${sync.id}`).set(bearer(write)).send(body);
      const pending = await patch({ right: { auth: { token: 'x' } } }).expect(409);
      expect(pending.body.error).toMatchObject({
        type: 'requires_action',
        code: 'requires_action',
        required_action: { type: 'user_authorization', side: 'right', connector: 'fake_oauth' },
      });
      expect(
        (await patch({ right: { connector: 'fake_oauth', auth: { token: 'x' } } }).expect(400)).body.error
          .code,
      ).toBe('oauth_connector_not_supported');
      expect(
        (await patch({ right: { connector: 'fake_oauth', base: 'x' } }).expect(400)).body.error.code,
      ).toBe('base_not_supported');
      // A person signs the right side in (simulated: the console writes the same row).
      await t.app
        .get(DataSource)
        .query(
          `UPDATE sync_sides SET auth_status = 'ok', base_id = 'b', connected_via = 'console', connected_at = now() WHERE sync_id = $1 AND side = 'right'`,
          [sync.id],
        );
      expect((await patch({ right: { auth: { token: 'x' } } }).expect(400)).body.error.code).toBe(
        'oauth_connector_not_supported',
      );
      await t.app
        .get(DataSource)
        .query(
          `UPDATE sync_sides SET auth_method = 'oauth', connected_via = 'console' WHERE sync_id = $1 AND side = 'left'`,
          [sync.id],
        );
      expect(
        (await patch({ left: { auth: { connectionString: pg.url } } }).expect(400)).body.error.code,
      ).toBe('invalid_auth');
    });
  });

  describe('broken credentials', () => {
    it('marks the side error with an issue when the app rejects stored credentials; rotation fixes both', async () => {
      const role = `e2e_cred_${Date.now().toString(36)}`;
      await pg.sql(`CREATE ROLE ${role} LOGIN; GRANT USAGE ON SCHEMA ${pg.schema} TO ${role}`);
      try {
        const url = pg.url.replace('postgres://postgres@', `postgres://${role}@`);
        const sync = (
          await create({ name: 'Creds', left: pgSide(pg.schema, url), right: mySide() }).expect(201)
        ).body;
        await pg.sql(`ALTER ROLE ${role} NOLOGIN`);
        expect(
          (await t.http().get(`/v1/sync/syncs/${sync.id}/sides/left/bases`).set(bearer(read)).expect(400))
            .body.error.code,
        ).toBe('invalid_auth');
        await t.http().get(`/v1/sync/syncs/${sync.id}/sides/left/bases`).set(bearer(read)).expect(400);
        const broken = (await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(read)).expect(200)).body;
        expect(broken.left).toMatchObject({ auth_status: 'error', auth_error: 'invalid_credentials' });
        expect(broken.open_issues).toBe(1);
        expect(broken.pending_actions[0]).toMatchObject({
          type: 'user_authorization',
          side: 'left',
          connector: 'postgres',
        });
        const [issue] = await t.app
          .get(DataSource)
          .query(
            `SELECT type, code, side, occurrence_count, remediation FROM sync_issues WHERE sync_id = $1 AND resolved_at IS NULL`,
            [sync.id],
          );
        expect(issue).toMatchObject({
          type: 'connection',
          code: 'authentication_error',
          side: 'left',
          occurrence_count: 2,
        });
        expect(issue.remediation).toMatchObject({
          explanation: expect.stringContaining('rejected'),
          suggested_action: expect.any(String),
          links: [expect.objectContaining({ url: expect.stringContaining('/connect/left') })],
        });
        await pg.sql(`ALTER ROLE ${role} LOGIN`);
        const fixed = (
          await t
            .http()
            .patch(`/v1/sync/syncs/${sync.id}`)
            .set(bearer(write))
            .send({ left: { auth: { connectionString: url } } })
            .expect(200)
        ).body;
        expect(fixed.left).toMatchObject({ auth_status: 'ok', auth_error: null });
        expect(fixed.open_issues).toBe(0);
      } finally {
        await pg.sql(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
      }
    });
  });

  describe('the review instruction', () => {
    it('says what Lockstep writes into each app: creates and lockstep_id on saving the mappings (whatever the primary key), change capture on starting', async () => {
      await pg.sql('CREATE TABLE review_people (id serial PRIMARY KEY, name text NOT NULL)');
      await my.sql(
        'CREATE TABLE review_contacts (id int AUTO_INCREMENT PRIMARY KEY, full_name varchar(100))',
      );
      const sync = (await create({ name: 'Reviewed', left: pgSide(), right: mySide() }).expect(201)).body;
      const [action] = sync.pending_actions;
      expect(action.type).toBe('user_confirmation');
      expect(action.instruction).not.toMatch(/nothing is written/i);
      expect(action.instruction).toMatch(
        /^Ask a person to open this link, sign in to Lockstep, review the sync "Reviewed" and start it\./,
      );
      expect(action.instruction).toContain(
        `On the left side (PostgreSQL "${pg.schema}"), saving the mappings creates the tables and fields they mark \`create\` and adds a \`lockstep_id\` uuid column`,
      );
      expect(action.instruction).toContain(
        'starting the sync installs triggers on each mapped table and a `lockstep` schema holding the change log.',
      );
      expect(action.instruction).toContain(`On the right side (MySQL / MariaDB "${my.database}")`);
      expect(action.instruction).toContain('`lockstep_change_log` and `lockstep_capture_readers`');
      const refused = await t
        .http()
        .post(`/v1/sync/syncs/${sync.id}/activate`)
        .set(bearer(operate))
        .expect(409);
      expect(refused.body.error.required_action).toEqual(action);
      // What it says of saving the mappings: both tables, each keyed by an auto-incrementing primary key, get the column.
      const doc = {
        tables: [
          {
            left_table: 'review_people',
            right_table: 'review_contacts',
            direction: 'two_way',
            fields: [{ left_field: 'name', right_field: 'full_name' }],
          },
        ],
      };
      await t.http().put(`/v1/sync/syncs/${sync.id}/mappings`).set(bearer(write)).send(doc).expect(200);
      expect(
        await pg.sql(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'review_people' AND column_name = 'lockstep_id'`,
          [pg.schema],
        ),
      ).toHaveLength(1);
      expect(
        await my.sql(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = 'review_contacts' AND column_name = 'lockstep_id'`,
          [my.database],
        ),
      ).toHaveLength(1);
    });
  });

  describe('pause and activate', () => {
    const phase = (id: string, status: string, initial: string) =>
      t.app
        .get(DataSource)
        .query(`UPDATE syncs SET status = $2, initial_sync_phase = $3 WHERE id = $1`, [id, status, initial]);

    it('follows spec 3.1', async () => {
      const sync = (await create({ name: 'Life', left: pgSide(), right: mySide() }).expect(201)).body;
      const post = (action: string, key = operate) =>
        t.http().post(`/v1/sync/syncs/${sync.id}/${action}`).set(bearer(key));
      expect((await post('pause', read).expect(403)).body.error.code).toBe('insufficient_scope');
      expect((await post('pause').expect(200)).body.status).toBe('draft');
      const draft = await post('activate').expect(409);
      expect(draft.body.error).toMatchObject({
        type: 'requires_action',
        code: 'confirmation_required',
        required_action: { type: 'user_confirmation', url: sync.review_url },
      });
      await phase(sync.id, 'active', 'preparing');
      expect((await post('activate').expect(409)).body.error.code).toBe('initial_sync_preparing');
      await phase(sync.id, 'active', 'running');
      expect((await post('activate').expect(409)).body.error.code).toBe('initial_sync_running');
      expect((await post('pause').expect(409)).body.error.code).toBe('initial_sync_running');
      await phase(sync.id, 'active', 'done');
      expect((await post('pause').expect(200)).body).toMatchObject({ status: 'paused', activating: false });
      expect((await post('pause').expect(200)).body.status).toBe('paused');
      const activated = await post('activate').expect(202);
      expect(activated.body).toMatchObject({ status: 'active', activating: true });
    });

    it('resumes a sync paused while its initial sync was being prepared: 202, active, still preparing', async () => {
      const sync = (await create({ name: 'Paused early', left: pgSide(), right: mySide() }).expect(201)).body;
      const post = (action: string) =>
        t.http().post(`/v1/sync/syncs/${sync.id}/${action}`).set(bearer(operate));
      // `sync start`, then pause at once, before the worker prepared it.
      await phase(sync.id, 'active', 'preparing');
      expect((await post('pause').expect(200)).body).toMatchObject({
        status: 'paused',
        initial_sync: 'preparing',
      });
      const activated = await post('activate').expect(202);
      expect(activated.body).toMatchObject({ status: 'active', activating: true, initial_sync: 'preparing' });
      // Now the preparation is really under way again.
      expect((await post('activate').expect(409)).body.error.code).toBe('initial_sync_preparing');
    });

    it('answers auth_required with a user_authorization action while a side is not connected', async () => {
      const sync = (await create({ name: 'Half', left: pgSide(), right: { connector: 'mysql' } }).expect(201))
        .body;
      const res = await t.http().post(`/v1/sync/syncs/${sync.id}/activate`).set(bearer(operate)).expect(409);
      expect(res.body.error).toMatchObject({
        type: 'requires_action',
        code: 'auth_required',
        required_action: { type: 'user_authorization', side: 'right', connector: 'mysql' },
      });
    });
  });
});
