import { DataSource } from 'typeorm';
import { JobProducer, QUEUES, SYNC_JOBS } from '@lockstep/jobs';
import { cli } from './support/cli';
import { bearer, createTestApp, type TestApp } from './support/test-app';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';

/** Spec 2.8, 2.9, 4.4, and the agent flow of spec 4 end to end, against real PostgreSQL and MariaDB. */
describe('mappings, validation and the agent flow', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let write: string;
  let read: string;
  let operate: string;
  let accountId: string;
  const pgSide = () => ({ connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema });
  const mySide = () => ({ connector: 'mysql', auth: { connectionString: my.url }, base: my.database });
  const follow = (url: string) => url.replace('http://lockstep.test', '');

  beforeAll(async () => {
    t = await createTestApp();
    pg = await scratchPg(`
      CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL);
      CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL, email varchar(200), age integer, company_id integer REFERENCES companies(id), payload bytea);
      CREATE TABLE notes (body text);
    `);
    my = await scratchMysql([
      'CREATE TABLE contacts (id int AUTO_INCREMENT PRIMARY KEY, full_name varchar(200) NOT NULL, email varchar(200), age int, born date, code varchar(20) NOT NULL)',
      'CREATE TABLE orgs (id int AUTO_INCREMENT PRIMARY KEY, title varchar(200))',
      'CREATE TABLE people (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100))',
    ]);
    accountId = (await t.account()).id;
    write = await t.key(accountId, 'readwrite');
    read = await t.key(accountId, 'read');
    operate = await t.key(accountId, 'operate');
  });
  afterAll(async () => {
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  async function newSync(): Promise<{ id: string; mappings: string; validate: string }> {
    const sync = (
      await t
        .http()
        .post('/v1/sync/syncs')
        .set(bearer(write))
        .send({ name: 'M', left: pgSide(), right: mySide() })
        .expect(201)
    ).body;
    return { id: sync.id, mappings: follow(sync.mappings_url), validate: follow(sync.validate_url) };
  }

  const basic = (
    fields: object[] = [
      { left_field: 'name', right_field: 'full_name' },
      { left_field: 'email', right_field: 'email' },
    ],
  ) => ({
    tables: [{ left_table: 'people', right_table: 'contacts', direction: 'two_way', fields }],
  });

  it('runs the full agent flow: deferred side, connect, follow links, validate, PUT with a create, start, pause, activate, edit back to draft', async () => {
    // 1. Create with one side deferred to a person.
    const created = await t
      .http()
      .post('/v1/sync/syncs')
      .set(bearer(write))
      .set('Idempotency-Key', `flow-${Date.now()}`)
      .send({ name: 'Flow', left: pgSide(), right: { connector: 'mysql' } })
      .expect(201);
    const sync = created.body;
    expect(sync.right).toBeNull();
    expect(sync.pending_actions.map((a: { type: string }) => a.type)).toEqual([
      'user_authorization',
      'user_confirmation',
    ]);
    expect(
      (await t.http().get(follow(sync.mappings_url)).set(bearer(read)).expect(409)).body.error.code,
    ).toBe('auth_required');
    expect((await t.http().get(follow(sync.tables_url)).set(bearer(read)).expect(409)).body.error.code).toBe(
      'auth_required',
    );

    // 2. The person connects the right side (operator CLI stands in for the console).
    const connected = cli(
      'side',
      'connect',
      '--sync',
      sync.id,
      '--side',
      'right',
      '--auth',
      JSON.stringify({ connectionString: my.url }),
      '--base',
      my.database,
    );
    expect(connected.stderr).toBe('');
    expect(connected.json().right).toMatchObject({ connector: 'mysql', base: { id: my.database } });
    const now = (await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(read)).expect(200)).body;
    expect(now.pending_actions.map((a: { type: string }) => a.type)).toEqual(['user_confirmation']);

    // 3. Follow the links to tables and fields on both sides.
    const leftTables = (await t.http().get(follow(now.left.tables_url)).set(bearer(read)).expect(200)).body;
    const people = leftTables.data.find((table: { name: string }) => table.name === 'people');
    const leftFields = (await t.http().get(follow(people.fields_url)).set(bearer(read)).expect(200)).body;
    expect(leftFields.data.map((f: { name: string }) => f.name)).toEqual(
      expect.arrayContaining(['id', 'name', 'email']),
    );
    const rightTables = (await t.http().get(follow(now.right.tables_url)).set(bearer(read)).expect(200)).body;
    const contacts = rightTables.data.find((table: { name: string }) => table.name === 'contacts');
    await t.http().get(follow(contacts.fields_url)).set(bearer(read)).expect(200);

    // 4. Validate a candidate with a create placeholder (side-effect free), then PUT it.
    const doc = {
      tables: [
        {
          left_table: people.id,
          right_table: contacts.remote_id,
          direction: 'two_way',
          fields: [
            { left_field: 'name', right_field: 'full_name' },
            { left_field: 'email', right_field: 'email' },
            { left_field: 'age', right_field: { create: { name: 'age_years' } } },
            { left_field: 'id', right_field: 'code', direction: 'left_to_right' },
          ],
        },
      ],
    };
    const validation = await t
      .http()
      .post(follow(now.validate_url))
      .set(bearer(read))
      .send({ mappings: doc })
      .expect(200);
    expect(validation.body.issues.filter((i: { severity: string }) => i.severity === 'error')).toEqual([]);
    expect(await my.sql(`SHOW COLUMNS FROM contacts LIKE 'age_years'`)).toEqual([]);
    const get0 = await t.http().get(follow(now.mappings_url)).set(bearer(read)).expect(200);
    const put = await t
      .http()
      .put(follow(now.mappings_url))
      .set(bearer(write))
      .set('If-Match', get0.headers['etag'])
      .set('Idempotency-Key', `put-${Date.now()}`)
      .send(doc);
    expect(put.body.error).toBeUndefined();
    expect(put.headers['etag']).toBe(`"${Number(JSON.parse(get0.headers['etag'])) + 1}"`);
    expect(put.body.tables[0]).toMatchObject({
      left_table: 'people',
      right_table: 'contacts',
      direction: 'two_way',
      left: { record_delete_behavior: 'sync' },
      right: { record_delete_behavior: 'sync' },
    });
    expect(put.body.tables[0].fields[2]).toEqual({ left_field: 'age', right_field: 'age_years' });
    expect((await my.sql(`SHOW COLUMNS FROM contacts LIKE 'age_years'`)) as unknown[]).toHaveLength(1);

    // 5. A person starts it (operator CLI), then the agent pauses and activates.
    const started = cli('sync', 'start', '--id', sync.id, '--match', '0:email=email', '--prefer', 'right');
    expect(started.stderr).toBe('');
    expect(started.json()).toMatchObject({
      id: sync.id,
      status: 'active',
      initial_sync: 'preparing',
      pending_actions: [],
    });
    // Starting queued the job that makes a worker look for syncs to run at once.
    const queued = await t.app
      .get(JobProducer)
      .queue(QUEUES.syncs)
      .getJobs(['waiting', 'active', 'completed', 'delayed']);
    expect(
      queued.filter((job) => job.name === SYNC_JOBS.activate && job.data.syncId === sync.id),
    ).toHaveLength(1);
    const post = (action: string) =>
      t.http().post(`/v1/sync/syncs/${sync.id}/${action}`).set(bearer(operate));
    expect((await post('activate').expect(409)).body.error.code).toBe('initial_sync_preparing');
    expect(
      (await t.http().put(follow(now.mappings_url)).set(bearer(write)).send(doc).expect(409)).body.error.code,
    ).toBe('sync_active');
    expect(
      (
        await t
          .http()
          .get(`${follow(now.left.tables_url)}&refresh=true`)
          .set(bearer(read))
          .expect(409)
      ).body.error.code,
    ).toBe('sync_active');
    // The engine finishes the initial sync (simulated here; the worker does it).
    await t.app
      .get(DataSource)
      .query(`UPDATE syncs SET initial_sync_phase = 'done' WHERE id = $1`, [sync.id]);
    expect((await post('pause').expect(200)).body.status).toBe('paused');
    expect((await post('activate').expect(202)).body).toMatchObject({ status: 'active', activating: true });
    await post('pause').expect(200);

    // 6. Edit back to draft: fetch, modify, put.
    const current = await t.http().get(follow(now.mappings_url)).set(bearer(read)).expect(200);
    current.body.tables[0].fields.pop();
    const edited = await t
      .http()
      .put(follow(now.mappings_url))
      .set(bearer(write))
      .set('If-Match', current.headers['etag'])
      .send(current.body)
      .expect(200);
    expect(edited.body.tables[0].fields).toHaveLength(3);
    const draft = (await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(read)).expect(200)).body;
    expect(draft.status).toBe('draft');
    expect(draft.pending_actions.map((a: { type: string }) => a.type)).toEqual(['user_confirmation']);
    expect((await post('activate').expect(409)).body.error.code).toBe('confirmation_required');
    // A stale If-Match is refused; an identical document changes nothing.
    expect(
      (
        await t
          .http()
          .put(follow(now.mappings_url))
          .set(bearer(write))
          .set('If-Match', current.headers['etag'])
          .send(current.body)
          .expect(412)
      ).body.error.code,
    ).toBe('revision_mismatch');
    const same = await t
      .http()
      .put(follow(now.mappings_url))
      .set(bearer(write))
      .send(edited.body)
      .expect(200);
    expect(same.headers['etag']).toBe(edited.headers['etag']);
  });

  it('reads back with ETag, resolves references by prefixed id, remote id and name, and keeps explicit directions only', async () => {
    const sync = await newSync();
    const empty = await t.http().get(sync.mappings).set(bearer(read)).expect(200);
    expect(empty.body).toEqual({ tables: [] });
    expect(empty.headers['etag']).toBe('"1"');
    // A revision this API never issued is not said to be one the mappings changed since.
    const never = await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .set('If-Match', '"7"')
      .send({ tables: [] })
      .expect(412);
    expect(never.body.error).toMatchObject({
      code: 'revision_mismatch',
      message:
        'If-Match "7" is not the current revision of the mappings; the current revision is 1 (ETag "1"). GET the mappings, reapply your edit to that document and send its ETag.',
      details: { current_revision: 1 },
    });
    const put = await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .send({
        tables: [
          {
            left_table: 'people',
            right_table: 'contacts',
            direction: 'left_to_right',
            right: { record_delete_behavior: 'do_nothing' },
            fields: [
              { left_field: 'name', right_field: 'full_name' },
              { left_field: 'id', right_field: 'code' },
            ],
          },
        ],
      })
      .expect(200);
    expect(put.body.tables[0]).toEqual({
      left_table: 'people',
      right_table: 'contacts',
      direction: 'left_to_right',
      left: { record_delete_behavior: 'sync' },
      right: { record_delete_behavior: 'do_nothing' },
      fields: [
        { left_field: 'name', right_field: 'full_name' },
        { left_field: 'id', right_field: 'code' },
      ],
    });
    const got = await t.http().get(sync.mappings).set(bearer(read)).expect(200);
    expect(got.body).toEqual(put.body);
    expect(got.headers['etag']).toBe('"2"');
  });

  it('adopts what an earlier create made on a retry, and keeps the read-only filter and advanced settings as stored', async () => {
    const sync = await newSync();
    const doc = {
      tables: [
        {
          left_table: 'companies',
          right_table: { create: { name: 'companies_copy' } },
          direction: 'left_to_right',
          fields: [{ left_field: 'name', right_field: { create: { name: 'name' } } }],
        },
      ],
    };
    const first = await t.http().put(sync.mappings).set(bearer(write)).send(doc).expect(200);
    expect(first.body.tables[0]).toMatchObject({
      left_table: 'companies',
      right_table: 'companies_copy',
      fields: [{ left_field: 'name', right_field: 'name' }],
    });
    const retry = await t.http().put(sync.mappings).set(bearer(write)).send(doc).expect(200);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers['etag']).toBe(first.headers['etag']);
    expect(await my.sql(`SHOW TABLES LIKE 'companies_copy'`)).toHaveLength(1);
    // A person set a filter in the app; a PUT neither needs to send it nor can change it.
    const filter = {
      match: 'all',
      conditions: [{ field: 'name', operator: 'is_not_empty' }],
      summary: 'name is not empty',
    };
    const advanced = [
      {
        kind: 'delay_before_syncing',
        side: 'left',
        value: 30,
        description: 'Changes on the left wait 30 seconds before syncing.',
      },
    ];
    await t.app
      .get(DataSource)
      .query(
        `UPDATE syncs SET mappings = jsonb_set(jsonb_set(mappings, '{tables,0,filter}', $2::jsonb), '{tables,0,advanced_settings}', $3::jsonb) WHERE id = $1`,
        [sync.id, JSON.stringify(filter), JSON.stringify(advanced)],
      );
    const withFilter = await t.http().get(sync.mappings).set(bearer(read)).expect(200);
    expect(withFilter.body.tables[0]).toMatchObject({ filter, advanced_settings: advanced });
    const edited = {
      tables: [
        {
          ...withFilter.body.tables[0],
          direction: 'two_way',
          filter: { match: 'any', conditions: [], summary: 'changed' },
        },
      ],
    };
    const saved = await t.http().put(sync.mappings).set(bearer(write)).send(edited).expect(200);
    expect(saved.body.tables[0]).toMatchObject({ direction: 'two_way', filter, advanced_settings: advanced });
  });

  it('reports every applicable 7.3 code from validate, with paths and sides', async () => {
    const sync = await newSync();
    await t.http().get(`/v1/sync/syncs/${sync.id}/tables?side=left`).set(bearer(read)).expect(200);
    const candidate = {
      tables: [
        {
          left_table: 'people',
          right_table: 'contacts',
          direction: 'two_way',
          fields: [
            { left_field: 'name', right_field: 'born' },
            { left_field: 'payload', right_field: 'email' },
            { left_field: 'company_id', right_field: 'age' },
            { left_field: 'nope', right_field: 'email' },
          ],
        },
        { left_table: 'no_such_table', right_table: 'orgs', direction: 'two_way', fields: [] },
        {
          left_table: 'notes',
          right_table: { create: { name: 'people' } },
          direction: 'left_to_right',
          right: { view: 'x' },
          fields: [],
        },
      ],
    };
    const res = await t.http().post(sync.validate).set(bearer(read)).send(candidate).expect(200);
    const codes = res.body.issues.map((i: { code: string }) => i.code);
    expect(codes).toEqual(
      expect.arrayContaining([
        'incompatible_field_types',
        'required_field_unmapped',
        'foreign_key_target_unmapped',
        'unknown_field',
        'unknown_table',
        'create_name_collision',
        'view_not_supported',
      ]),
    );
    for (const issue of res.body.issues) {
      expect([null, 'left', 'right']).toContain(issue.side);
      expect(issue).toEqual({
        severity: expect.stringMatching(/^(error|warning)$/),
        code: expect.any(String),
        path: expect.stringMatching(/^\/tables\/\d/),
        side: issue.side,
        message: expect.any(String),
      });
    }
    expect(res.body.issues.find((i: { code: string }) => i.code === 'unknown_table')).toMatchObject({
      path: '/tables/1/left_table',
      side: 'left',
    });
    expect(res.body.issues.find((i: { code: string }) => i.code === 'create_name_collision')).toMatchObject({
      severity: 'warning',
      side: 'right',
    });
    // The stored document (still empty: nothing was written by validate) validates with an empty body.
    expect(
      (await t.http().post(sync.validate).set(bearer(read)).expect(200)).body.issues.map(
        (i: { code: string }) => i.code,
      ),
    ).toEqual(['nothing_mapped']);
    expect((await t.http().get(sync.mappings).set(bearer(read)).expect(200)).headers['etag']).toBe('"1"');
  });

  it('reports orphaned tables and fields after a refresh, and shows `invalid` directions from schema drift', async () => {
    const sync = await newSync();
    await pg.sql('CREATE TABLE drifting (id serial PRIMARY KEY, label text, extra text)');
    await my.sql(
      'CREATE TABLE drift_target (id int AUTO_INCREMENT PRIMARY KEY, label varchar(50), extra varchar(50))',
    );
    await t
      .http()
      .get(`/v1/sync/syncs/${sync.id}/tables?side=left&refresh=true`)
      .set(bearer(read))
      .expect(200);
    await t
      .http()
      .get(`/v1/sync/syncs/${sync.id}/tables?side=right&refresh=true`)
      .set(bearer(read))
      .expect(200);
    await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .send({
        tables: [
          {
            left_table: 'drifting',
            right_table: 'drift_target',
            direction: 'two_way',
            fields: [
              { left_field: 'label', right_field: 'label' },
              { left_field: 'extra', right_field: 'extra' },
            ],
          },
        ],
      })
      .expect(200);
    await pg.sql('ALTER TABLE drifting DROP COLUMN extra');
    await t
      .http()
      .get(`/v1/sync/syncs/${sync.id}/tables/drifting/fields?side=left&refresh=true`)
      .set(bearer(read))
      .expect(200);
    const got = await t.http().get(sync.mappings).set(bearer(read)).expect(200);
    expect(got.body.tables[0].fields[1]).toEqual({
      left_field: 'extra',
      right_field: 'extra',
      direction: 'invalid',
    });
    const issues = (await t.http().post(sync.validate).set(bearer(read)).expect(200)).body.issues;
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          code: 'orphaned_field',
          path: '/tables/0/fields/1/left_field',
          side: 'left',
        }),
      ]),
    );
    await my.sql('DROP TABLE drift_target');
    await t
      .http()
      .get(`/v1/sync/syncs/${sync.id}/tables?side=right&refresh=true`)
      .set(bearer(read))
      .expect(200);
    const tableIssues = (await t.http().post(sync.validate).set(bearer(read)).expect(200)).body.issues;
    expect(tableIssues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'orphaned_table', path: '/tables/0/right_table' }),
      ]),
    );
    // A PUT of the drifted document is refused before anything is written.
    const refused = await t.http().put(sync.mappings).set(bearer(write)).send(got.body).expect(400);
    expect(refused.body.error.details.issues.length).toBeGreaterThan(0);
  });

  const putCases: [string, () => unknown, string][] = [
    [
      'a malformed document',
      () => ({
        tables: [{ left_table: 'people', right_table: 'contacts', direction: 'sideways', fields: [] }],
      }),
      'invalid_mappings',
    ],
    [
      'a create on both sides of a pair',
      () => ({
        tables: [
          {
            left_table: { create: { name: 'a' } },
            right_table: { create: { name: 'b' } },
            direction: 'two_way',
            fields: [],
          },
        ],
      }),
      'invalid_mappings',
    ],
    [
      'a field direction sent as invalid',
      () => basic([{ left_field: 'name', right_field: 'full_name', direction: 'invalid' }]),
      'invalid_mappings',
    ],
    [
      'an unknown table',
      () => ({ tables: [{ left_table: 'nope', right_table: 'contacts', direction: 'two_way', fields: [] }] }),
      'unknown_table',
    ],
    ['an unknown field', () => basic([{ left_field: 'nope', right_field: 'full_name' }]), 'unknown_field'],
    [
      'a view for a table without views',
      () => ({
        tables: [
          {
            left_table: 'people',
            right_table: 'contacts',
            direction: 'two_way',
            left: { view: 'v' },
            fields: [],
          },
        ],
      }),
      'view_not_supported',
    ],
    [
      'a field create of an unsupported type',
      () =>
        basic([
          { left_field: 'name', right_field: 'full_name' },
          { left_field: 'payload', right_field: { create: { name: 'blob' } } },
        ]),
      'invalid_mappings',
    ],
    [
      'a create the app refuses',
      () =>
        basic([
          { left_field: 'name', right_field: 'full_name' },
          { left_field: 'email', right_field: { create: { name: 'x'.repeat(70) } } },
        ]),
      'create_failed',
    ],
  ];

  it.each(putCases)('refuses %s', async (_name, body, code) => {
    const sync = await newSync();
    const res = await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .send(body() as object);
    expect(res.body.error?.code).toBe(code);
    expect(res.status).toBe(400);
    if (code !== 'create_failed') expect(res.body.error.details.issues.length).toBeGreaterThan(0);
    expect((await t.http().get(sync.mappings).set(bearer(read)).expect(200)).headers['etag']).toBe('"1"');
  });

  it('refuses table_ambiguous when a name matches several tables on a side', async () => {
    // A database schema cannot hold two tables of one name, but apps can (display names); the cache is given
    // a second live table named "Twin" the way such a connector would list it.
    await pg.sql('CREATE TABLE twin_a (id serial PRIMARY KEY); CREATE TABLE twin_b (id serial PRIMARY KEY)');
    const sync = await newSync();
    await t.http().get(`/v1/sync/syncs/${sync.id}/tables?side=left`).set(bearer(read)).expect(200);
    await t.app
      .get(DataSource)
      .query(
        `UPDATE sync_tables SET name = 'Twin' WHERE sync_id = $1 AND side = 'left' AND remote_id IN ('twin_a', 'twin_b')`,
        [sync.id],
      );
    const res = await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .send({ tables: [{ left_table: 'Twin', right_table: 'orgs', direction: 'two_way', fields: [] }] });
    expect(res.body.error.code).toBe('table_ambiguous');
  });

  it("refuses table_setup_failed when a mapped table cannot be prepared, with the database's reason", async () => {
    // A role that may read and write the table but not alter it: a table without a primary key needs a
    // service id column added first.
    const role = `e2e_lim_${Date.now().toString(36)}`;
    await pg.sql(
      `CREATE ROLE ${role} LOGIN; GRANT USAGE ON SCHEMA ${pg.schema} TO ${role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${pg.schema} TO ${role}`,
    );
    try {
      const limitedUrl = pg.url.replace('postgres://postgres@', `postgres://${role}@`);
      const sync = (
        await t
          .http()
          .post('/v1/sync/syncs')
          .set(bearer(write))
          .send({
            name: 'Limited',
            left: { connector: 'postgres', auth: { connectionString: limitedUrl }, base: pg.schema },
            right: mySide(),
          })
          .expect(201)
      ).body;
      const res = await t
        .http()
        .put(follow(sync.mappings_url))
        .set(bearer(write))
        .send({
          tables: [
            {
              left_table: 'notes',
              right_table: 'orgs',
              direction: 'two_way',
              fields: [{ left_field: 'body', right_field: 'title' }],
            },
          ],
        })
        .expect(400);
      expect(res.body.error).toMatchObject({
        code: 'table_setup_failed',
        details: { side: 'left', table: 'notes' },
      });
      expect(res.body.error.message).toContain('notes');
    } finally {
      await pg.sql(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });

  it('applies the state and access rules', async () => {
    const sync = await newSync();
    await t.app
      .get(DataSource)
      .query(`UPDATE syncs SET status = 'active', initial_sync_phase = 'done' WHERE id = $1`, [sync.id]);
    expect(
      (await t.http().put(sync.mappings).set(bearer(write)).send(basic()).expect(409)).body.error.code,
    ).toBe('sync_active');
    await t.app.get(DataSource).query(`UPDATE syncs SET status = 'paused' WHERE id = $1`, [sync.id]);
    await t.http().put(sync.mappings).set(bearer(write)).send(basic()).expect(200);
    expect((await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(read)).expect(200)).body.status).toBe(
      'draft',
    );
    expect(
      (await t.http().put(sync.mappings).set(bearer(operate)).send(basic()).expect(403)).body.error.code,
    ).toBe('insufficient_scope');
    const stranger = await t.key((await t.account()).id, 'readwrite');
    await t.http().get(sync.mappings).set(bearer(stranger)).expect(404);
    await t.http().post(sync.validate).set(bearer(stranger)).expect(404);
    // Idempotency-Key on PUT: replay, and reuse with another body.
    const key = `idem-${Date.now()}`;
    const first = await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .set('Idempotency-Key', key)
      .send(basic([{ left_field: 'name', right_field: 'full_name' }]))
      .expect(200);
    const replay = await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .set('Idempotency-Key', key)
      .send(basic([{ left_field: 'name', right_field: 'full_name' }]))
      .expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['etag']).toBe(first.headers['etag']);
    expect(
      (
        await t
          .http()
          .put(sync.mappings)
          .set(bearer(write))
          .set('Idempotency-Key', key)
          .send(basic())
          .expect(400)
      ).body.error.code,
    ).toBe('idempotency_key_reused');
  });

  it('validation reports an empty mappings document as the error that refuses starting (nothing_mapped)', async () => {
    const sync = await newSync();
    const stored = await t.http().post(sync.validate).set(bearer(read)).expect(200);
    expect(stored.body.issues).toEqual([
      {
        severity: 'error',
        code: 'nothing_mapped',
        path: '/tables',
        side: null,
        message: expect.stringContaining('Nothing is mapped yet'),
      },
    ]);
    const candidate = await t
      .http()
      .post(sync.validate)
      .set(bearer(read))
      .send({ mappings: { tables: [] } })
      .expect(200);
    expect(candidate.body.issues.map((issue: { code: string }) => issue.code)).toEqual(['nothing_mapped']);
    const refused = cli('sync', 'start', '--id', sync.id);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid_mappings: The sync cannot start');
    expect(JSON.parse(refused.stderr.slice(refused.stderr.indexOf('{')))).toEqual({
      issues: stored.body.issues,
    });
  });

  it('refuses to start a sync whose mappings have errors, printing the issues', async () => {
    const sync = await newSync();
    const nothing = cli('sync', 'start', '--id', sync.id);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('invalid_mappings');
    await t
      .http()
      .put(sync.mappings)
      .set(bearer(write))
      .send(basic([{ left_field: 'name', right_field: 'born' }]))
      .expect(200);
    const refused = cli('sync', 'start', '--id', sync.id);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('incompatible_field_types');
    expect(refused.stderr).toContain('required_field_unmapped');
  });
});
