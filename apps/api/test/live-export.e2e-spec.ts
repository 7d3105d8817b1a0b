import { DataSource } from 'typeorm';
import { bearer, createTestApp, type TestApp } from './support/test-app';
import {
  scratchMysql,
  scratchPg,
  uniqueName,
  type ScratchMysql,
  type ScratchPg,
} from './support/scratch-dbs';
import { addLiveExportTestConnectors, follow, mysqlDestination, pgSource } from './support/live-export';

/** Live exports (spec 2.15, 4.8): connectors, plan gating, keys, create / list / get / PATCH / DELETE, against real PostgreSQL and MariaDB. */
describe('live exports', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let accountId: string;
  let write: string;
  let read: string;
  let operate: string;
  let db: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ QUEUE_PREFIX: uniqueName('lxapi') });
    addLiveExportTestConnectors(t);
    db = t.app.get(DataSource);
    pg = await scratchPg(`CREATE TABLE customers (id serial PRIMARY KEY, email text);`);
    my = await scratchMysql();
    accountId = (await t.account({ plan: 'business' })).id;
    write = await t.key(accountId, 'readwrite');
    read = await t.key(accountId, 'read');
    operate = await t.key(accountId, 'operate');
  });
  afterAll(async () => {
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  const create = (body: object, key = write) =>
    t.http().post('/v1/live-export/live-exports').set(bearer(key)).send(body);
  const countExports = async (account = accountId) =>
    Number((await db.query(`SELECT count(*) AS n FROM live_exports WHERE account_id = $1`, [account]))[0].n);

  it('lists connectors with roles and location kinds, and what the plan allows', async () => {
    const res = await t.http().get('/v1/live-export/connectors').set(bearer(read)).expect(200);
    const byType = Object.fromEntries(res.body.data.map((c: { type: string }) => [c.type, c]));
    expect(byType['postgres']).toMatchObject({
      roles: ['source', 'destination'],
      location_kind: 'schema',
      available: true,
      auth: { method: 'api_key' },
    });
    expect(byType['mysql']).toMatchObject({
      roles: ['source', 'destination'],
      location_kind: 'database',
      available: true,
    });
    expect(byType['postgres'].auth.fields.map((f: { id: string }) => f.id)).toEqual(['connectionString']);
    expect(res.body).toMatchObject({
      has_more: false,
      next_cursor: null,
      live_export_available: true,
      allowed_cadences: ['manual', 'every_10_minutes', 'every_30_minutes', 'hourly', 'daily'],
    });

    const pro = (await t.account({ plan: 'pro' })).id;
    const proList = (
      await t
        .http()
        .get('/v1/live-export/connectors')
        .set(bearer(await t.key(pro, 'read')))
        .expect(200)
    ).body;
    expect(proList).toMatchObject({
      live_export_available: true,
      allowed_cadences: ['manual', 'hourly', 'daily'],
    });

    const free = (await t.account({ plan: 'free' })).id;
    const freeList = (
      await t
        .http()
        .get('/v1/live-export/connectors')
        .set(bearer(await t.key(free, 'read')))
        .expect(200)
    ).body;
    expect(freeList).toMatchObject({ live_export_available: false, allowed_cadences: [] });
    expect(freeList.data.every((c: { available: boolean }) => c.available === false)).toBe(true);
  });

  it('live_export_unavailable on writes and not_found for ids without a plan or subscription that includes live export', async () => {
    const lex = (
      await create({ name: 'gated', source: pgSource(pg), destination: mysqlDestination(my) }).expect(201)
    ).body;
    for (const [label, account] of [
      ['free plan', { plan: 'free' }],
      ['no subscription', { plan: 'business', subscription: 'none' as const }],
    ] as const) {
      const other = (await t.account(account)).id;
      const key = await t.key(other, 'readwrite');
      const refused = await create(
        { name: 'x', source: pgSource(pg), destination: mysqlDestination(my) },
        key,
      );
      expect([label, refused.status, refused.body.error.code]).toEqual([
        label,
        403,
        'live_export_unavailable',
      ]);
      expect(await countExports(other)).toBe(0);
      expect((await t.http().get('/v1/live-export/live-exports').set(bearer(key)).expect(200)).body).toEqual({
        data: [],
        has_more: false,
        next_cursor: null,
      });
    }
    // The owner downgraded: the export is hidden (404) and writes are refused (403), until the plan returns.
    await t.accounts.update(accountId, { plan: 'free' });
    try {
      expect(
        (await t.http().get(`/v1/live-export/live-exports/${lex.id}`).set(bearer(read)).expect(404)).body
          .error.code,
      ).toBe('not_found');
      expect(
        (
          await t
            .http()
            .patch(`/v1/live-export/live-exports/${lex.id}`)
            .set(bearer(write))
            .send({ name: 'n' })
            .expect(403)
        ).body.error.code,
      ).toBe('live_export_unavailable');
      expect(
        (
          await t
            .http()
            .post(`/v1/live-export/live-exports/${lex.id}/trigger`)
            .set(bearer(operate))
            .expect(403)
        ).body.error.code,
      ).toBe('live_export_unavailable');
      expect(
        (await t.http().get('/v1/live-export/live-exports').set(bearer(read)).expect(200)).body.data,
      ).toEqual([]);
    } finally {
      await t.accounts.update(accountId, { plan: 'business' });
    }
    await t.http().get(`/v1/live-export/live-exports/${lex.id}`).set(bearer(read)).expect(200);
  });

  it('refuses a one-sync key on every live export endpoint with sync_restricted_key', async () => {
    const syncId = await t.bareSync(accountId);
    const limited = await t.key(accountId, 'readwrite', syncId);
    const lex = 'lex_00000000000000000000';
    const run = 'run_00000000000000000000';
    const endpoints: [string, string][] = [
      ['get', '/v1/live-export/connectors'],
      ['post', '/v1/live-export/live-exports'],
      ['get', '/v1/live-export/live-exports'],
      ['get', `/v1/live-export/live-exports/${lex}`],
      ['patch', `/v1/live-export/live-exports/${lex}`],
      ['delete', `/v1/live-export/live-exports/${lex}`],
      ['get', `/v1/live-export/live-exports/${lex}/source/tables`],
      ['get', `/v1/live-export/live-exports/${lex}/source/tables/customers/fields`],
      ['get', `/v1/live-export/live-exports/${lex}/destination/locations`],
      ['get', `/v1/live-export/live-exports/${lex}/mappings`],
      ['put', `/v1/live-export/live-exports/${lex}/mappings`],
      ['post', `/v1/live-export/live-exports/${lex}/mappings/validate`],
      ['post', `/v1/live-export/live-exports/${lex}/save`],
      ['get', `/v1/live-export/live-exports/${lex}/save`],
      ['get', `/v1/live-export/live-exports/${lex}/schedule`],
      ['patch', `/v1/live-export/live-exports/${lex}/schedule`],
      ['post', `/v1/live-export/live-exports/${lex}/trigger`],
      ['get', `/v1/live-export/runs?live_export=${lex}`],
      ['get', `/v1/live-export/runs/${run}`],
      ['post', `/v1/live-export/runs/${run}/cancel`],
    ];
    const answers = [];
    for (const [method, path] of endpoints) {
      const res = await (t.http() as unknown as Record<string, (p: string) => import('supertest').Test>)[
        method
      ]!(path)
        .set(bearer(limited))
        .send({});
      answers.push([method, path, res.status, res.body.error?.code]);
    }
    expect(answers).toEqual(endpoints.map(([method, path]) => [method, path, 403, 'sync_restricted_key']));
  });

  it('applies scopes: read for GETs and validate, operate for trigger and cancel, readwrite for the rest', async () => {
    const lex = (
      await create({ name: 'scopes', source: pgSource(pg), destination: mysqlDestination(my) }).expect(201)
    ).body;
    const code = (res: { body: { error?: { code: string } } }) => res.body.error?.code;
    expect(
      code(await create({ name: 'x', source: pgSource(pg), destination: mysqlDestination(my) }, read)),
    ).toBe('insufficient_scope');
    expect(
      code(await create({ name: 'x', source: pgSource(pg), destination: mysqlDestination(my) }, operate)),
    ).toBe('insufficient_scope');
    expect(
      code(
        await t
          .http()
          .patch(`/v1/live-export/live-exports/${lex.id}`)
          .set(bearer(operate))
          .send({ name: 'n' }),
      ),
    ).toBe('insufficient_scope');
    expect(code(await t.http().delete(`/v1/live-export/live-exports/${lex.id}`).set(bearer(operate)))).toBe(
      'insufficient_scope',
    );
    expect(
      code(
        await t
          .http()
          .put(`/v1/live-export/live-exports/${lex.id}/mappings`)
          .set(bearer(operate))
          .set('If-Match', '"1"')
          .send({ tables: [] }),
      ),
    ).toBe('insufficient_scope');
    expect(
      code(await t.http().post(`/v1/live-export/live-exports/${lex.id}/save`).set(bearer(operate))),
    ).toBe('insufficient_scope');
    expect(
      code(
        await t
          .http()
          .patch(`/v1/live-export/live-exports/${lex.id}/schedule`)
          .set(bearer(operate))
          .send({ enabled: true }),
      ),
    ).toBe('insufficient_scope');
    expect(
      code(await t.http().post(`/v1/live-export/live-exports/${lex.id}/trigger`).set(bearer(read))),
    ).toBe('insufficient_scope');
    expect(
      code(await t.http().post('/v1/live-export/runs/run_00000000000000000000/cancel').set(bearer(read))),
    ).toBe('insufficient_scope');
    // What each smaller key may do.
    await t
      .http()
      .post(`/v1/live-export/live-exports/${lex.id}/mappings/validate`)
      .set(bearer(read))
      .send({})
      .expect(200);
    expect(
      code(await t.http().post(`/v1/live-export/live-exports/${lex.id}/trigger`).set(bearer(operate))),
    ).toBe('not_provisioned');
    expect(
      code(await t.http().post('/v1/live-export/runs/run_00000000000000000000/cancel').set(bearer(operate))),
    ).toBe('not_found');
  });

  it('creates a draft with both sides checked live, never echoing credentials, with Idempotency-Key replay', async () => {
    const key = `lex-${Date.now()}`;
    const body = { name: 'CRM to warehouse', source: pgSource(pg), destination: mysqlDestination(my) };
    const first = await create(body).set('Idempotency-Key', key).expect(201);
    const lex = first.body;
    expect(lex).toMatchObject({
      name: 'CRM to warehouse',
      status: 'draft',
      source: { connector: 'postgres', auth_method: 'api_key', connected: true, base: pg.schema },
      destination: {
        connector: 'mysql',
        auth_method: 'api_key',
        connected: true,
        location: my.database,
        location_kind: 'database',
      },
      pending_actions: [],
      mappings_version: 1,
      saved_version: null,
      saved_at: null,
      unsaved_changes: true,
    });
    expect(lex.id).toMatch(/^lex_[0-9a-z]{20}$/);
    expect(JSON.stringify(lex)).not.toContain('connectionString');
    expect(lex.mappings_url).toBe(`http://lockstep.test/v1/live-export/live-exports/${lex.id}/mappings`);
    expect(lex.runs_url).toBe(`http://lockstep.test/v1/live-export/runs?live_export=${lex.id}`);
    const [row] = await db.query(
      `SELECT source_credentials, destination_credentials FROM live_exports WHERE id = $1`,
      [lex.id],
    );
    expect(Buffer.from(row.source_credentials).toString('latin1')).not.toContain('127.0.0.1');
    expect(Buffer.from(row.destination_credentials).toString('latin1')).not.toContain('127.0.0.1');

    const replay = await create(body).set('Idempotency-Key', key).expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(lex.id);
    expect(
      (
        await create({ ...body, name: 'other' })
          .set('Idempotency-Key', key)
          .expect(400)
      ).body.error.code,
    ).toBe('idempotency_key_reused');

    const got = (await t.http().get(follow(lex.url)).set(bearer(read)).expect(200)).body;
    expect(got).toEqual(lex);
  });

  it('refuses bad create requests with precise codes and stores nothing', async () => {
    const before = await countExports();
    const cases: [string, object, number, string][] = [
      [
        'unknown connector',
        { source: { connector: 'nope' }, destination: mysqlDestination(my) },
        400,
        'connector_not_supported',
      ],
      [
        'connector without the role',
        { source: pgSource(pg), destination: { connector: 'fake_paid' } },
        400,
        'connector_not_supported',
      ],
      [
        'auth for an oauth connector',
        { source: pgSource(pg), destination: { connector: 'fake_oauth_export', auth: { token: 'x' } } },
        400,
        'oauth_auth_not_allowed',
      ],
      [
        'rejected credentials',
        {
          source: {
            ...pgSource(pg),
            auth: { connectionString: 'postgres://no_such_role_lx@127.0.0.1:5432/postgres' },
          },
          destination: mysqlDestination(my),
        },
        400,
        'connection_failed',
      ],
      [
        'unreachable app',
        {
          source: pgSource(pg),
          destination: { ...mysqlDestination(my), auth: { connectionString: 'mysql://root@127.0.0.1:1' } },
        },
        400,
        'connection_failed',
      ],
      [
        'location on the source',
        { source: { ...pgSource(pg), location: 'x' }, destination: mysqlDestination(my) },
        400,
        'invalid_location',
      ],
      [
        'location the destination does not offer',
        { source: pgSource(pg), destination: mysqlDestination(my, 'no_such_db_lx') },
        400,
        'invalid_location',
      ],
      [
        'location without destination auth',
        { source: pgSource(pg), destination: { connector: 'mysql', location: my.database } },
        400,
        'invalid_location',
      ],
      [
        'source base without auth',
        { source: { connector: 'postgres', base: pg.schema }, destination: mysqlDestination(my) },
        400,
        'missing_auth',
      ],
      [
        'source auth without base',
        {
          source: { connector: 'postgres', auth: { connectionString: pg.url } },
          destination: mysqlDestination(my),
        },
        400,
        'missing_base',
      ],
      [
        'unknown source base',
        { source: { ...pgSource(pg), base: 'no_such_schema_lx' }, destination: mysqlDestination(my) },
        400,
        'base_not_found',
      ],
      [
        'missing credential field',
        { source: { connector: 'postgres', auth: {}, base: pg.schema }, destination: mysqlDestination(my) },
        400,
        'invalid_request',
      ],
      [
        'no name',
        { source: pgSource(pg), destination: mysqlDestination(my), name: '' },
        400,
        'invalid_request',
      ],
      [
        'unknown property',
        { source: pgSource(pg), destination: { ...mysqlDestination(my), base: 'x' } },
        400,
        'invalid_request',
      ],
    ];
    const answers = [];
    for (const [label, body, ,] of cases) {
      const res = await create({ name: 'bad', ...body });
      answers.push([label, res.status, res.body.error?.code]);
      if (res.body.error?.code === 'connection_failed')
        expect(JSON.stringify(res.body)).not.toContain('connectionString');
    }
    expect(answers).toEqual(cases.map(([label, , status, code]) => [label, status, code]));
    expect(await countExports()).toBe(before);
  });

  it('an oauth side starts unconnected with a pending action; PATCH completes a withheld api_key side and sets the location', async () => {
    const oauth = (
      await create({
        name: 'oauth',
        source: pgSource(pg),
        destination: { connector: 'fake_oauth_export' },
      }).expect(201)
    ).body;
    expect(oauth.destination).toMatchObject({
      connector: 'fake_oauth_export',
      auth_method: 'oauth',
      connected: false,
      location: null,
      locations_url: null,
    });
    expect(oauth.pending_actions).toEqual([
      expect.objectContaining({
        type: 'user_authorization',
        side: 'destination',
        connector: 'fake_oauth_export',
        url: `http://lockstep.test/app/live-exports/${oauth.id}/connect/destination`,
      }),
    ]);
    expect(
      (
        await t
          .http()
          .patch(`/v1/live-export/live-exports/${oauth.id}`)
          .set(bearer(write))
          .send({ destination: { auth: { token: 't' } } })
          .expect(400)
      ).body.error.code,
    ).toBe('oauth_auth_not_allowed');
    expect(
      (
        await t
          .http()
          .get(`/v1/live-export/live-exports/${oauth.id}/destination/locations`)
          .set(bearer(read))
          .expect(409)
      ).body.error,
    ).toMatchObject({
      code: 'auth_required',
      type: 'requires_action',
      required_action: { side: 'destination' },
    });

    // Withheld api_key sides: created unconnected, completed by PATCH.
    const lex = (
      await create({
        name: 'later',
        source: { connector: 'postgres' },
        destination: { connector: 'mysql' },
      }).expect(201)
    ).body;
    expect(lex.pending_actions.map((a: { side: string }) => a.side)).toEqual(['source', 'destination']);
    const patch = (body: object) =>
      t.http().patch(`/v1/live-export/live-exports/${lex.id}`).set(bearer(write)).send(body);
    expect((await patch({ destination: { location: my.database } }).expect(400)).body.error.code).toBe(
      'invalid_location',
    );
    expect(
      (await patch({ source: { auth: { connectionString: pg.url } } }).expect(400)).body.error.code,
    ).toBe('missing_base');
    expect((await patch({ source: { location: 'x' } }).expect(400)).body.error.code).toBe('invalid_location');
    expect(
      (
        await patch({
          source: {
            auth: { connectionString: 'postgres://no_such_role_lx@127.0.0.1:5432/postgres' },
            base: pg.schema,
          },
        }).expect(400)
      ).body.error.code,
    ).toBe('connection_failed');

    const renamed = (
      await patch({
        name: 'renamed',
        source: { auth: { connectionString: pg.url }, base: pg.schema },
        destination: { auth: { connectionString: my.url } },
      }).expect(200)
    ).body;
    expect(renamed).toMatchObject({
      name: 'renamed',
      source: { connected: true, base: pg.schema },
      destination: { connected: true, location: null },
    });
    expect(renamed.pending_actions).toEqual([]);
    expect(renamed.destination.locations_url).toBe(
      `http://lockstep.test/v1/live-export/live-exports/${lex.id}/destination/locations`,
    );

    expect(
      (await patch({ source: { auth: { connectionString: pg.url }, base: pg.schema } }).expect(409)).body
        .error.code,
    ).toBe('side_already_connected');
    expect(
      (await patch({ destination: { auth: { connectionString: my.url } } }).expect(409)).body.error.code,
    ).toBe('side_already_connected');
    expect(
      (await patch({ destination: { location: 'no_such_db_lx' } }).expect(400)).body.error,
    ).toMatchObject({
      code: 'invalid_location',
      details: { locations: expect.arrayContaining([{ id: my.database, name: my.database }]) },
    });
    const located = (await patch({ destination: { location: my.database } }).expect(200)).body;
    expect(located.destination.location).toBe(my.database);
    expect(located.mappings_version).toBe(1); // not saved yet: a location change is not an unsaved change of a save
  });

  it("lists newest first with keyset pagination (limit 1-25, default 10) and hides other accounts' exports", async () => {
    const owner = (await t.account({ plan: 'pro' })).id;
    const key = await t.key(owner, 'readwrite');
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1)
      ids.push(
        (
          await create(
            { name: `e${i}`, source: { connector: 'postgres' }, destination: { connector: 'mysql' } },
            key,
          ).expect(201)
        ).body.id,
      );
    const list = (query: string) => t.http().get(`/v1/live-export/live-exports${query}`).set(bearer(key));
    const all = (await list('').expect(200)).body;
    expect(all.data.map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
    expect(all).toMatchObject({ has_more: false, next_cursor: null });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null; has_more: boolean } = (
        await list(`?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`).expect(200)
      ).body;
      expect(page.data).toHaveLength(1);
      seen.push(page.data[0]!.id);
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    for (const bad of ['0', '26', 'x'])
      expect((await list(`?limit=${bad}`).expect(400)).body.error.code).toBe('invalid_limit');
    expect((await list('?cursor=forged').expect(400)).body.error.code).toBe('invalid_cursor');
    // Default page size 10.
    for (let i = 0; i < 9; i += 1)
      await create(
        { name: `f${i}`, source: { connector: 'postgres' }, destination: { connector: 'mysql' } },
        key,
      ).expect(201);
    const firstPage = (await list('').expect(200)).body;
    expect(firstPage.data).toHaveLength(10);
    expect(firstPage.has_more).toBe(true);
    // Another account sees none of them, and gets 404 for their ids.
    expect(
      (await t.http().get(`/v1/live-export/live-exports/${ids[0]}`).set(bearer(read)).expect(404)).body.error
        .code,
    ).toBe('not_found');
    expect(
      (
        await t.http().get('/v1/live-export/live-exports?limit=25').set(bearer(read)).expect(200)
      ).body.data.map((e: { id: string }) => e.id),
    ).not.toContain(ids[0]);
    expect(
      (await t.http().get('/v1/live-export/live-exports/not-an-id').set(bearer(read)).expect(404)).body.error
        .code,
    ).toBe('not_found');
  });

  it('DELETE removes the export and answers 404 afterwards', async () => {
    const lex = (
      await create({ name: 'bye', source: pgSource(pg), destination: mysqlDestination(my) }).expect(201)
    ).body;
    const res = (
      await t.http().delete(`/v1/live-export/live-exports/${lex.id}`).set(bearer(write)).expect(200)
    ).body;
    expect(res).toMatchObject({ id: lex.id, deleted: true, canceled_run: null });
    await t.http().get(`/v1/live-export/live-exports/${lex.id}`).set(bearer(read)).expect(404);
    await t.http().delete(`/v1/live-export/live-exports/${lex.id}`).set(bearer(write)).expect(404);
    expect(
      Number((await db.query(`SELECT count(*) AS n FROM live_exports WHERE id = $1`, [lex.id]))[0].n),
    ).toBe(0);
  });
});
