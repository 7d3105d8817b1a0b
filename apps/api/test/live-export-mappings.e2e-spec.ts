import { DataSource } from 'typeorm';
import { bearer, createTestApp, type TestApp } from './support/test-app';
import {
  scratchMysql,
  scratchPg,
  uniqueName,
  type ScratchMysql,
  type ScratchPg,
} from './support/scratch-dbs';
import { follow, mysqlDestination, mysqlSource, pgDestination, pgSource } from './support/live-export';

/** Live export source/destination listings, the mappings document, validation and save, against real PostgreSQL and MariaDB. */
describe('live export mappings and save', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let my2: ScratchMysql;
  let write: string;
  let read: string;
  let db: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ QUEUE_PREFIX: uniqueName('lxapi') });
    db = t.app.get(DataSource);
    pg = await scratchPg(`
      CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL);
      CREATE TABLE customers (id serial PRIMARY KEY, email text, "Full Name" text, company_id integer REFERENCES companies(id), payload bytea, created_at timestamptz DEFAULT now());
    `);
    my = await scratchMysql([
      'CREATE TABLE legacy (id int, email varchar(100))',
      'CREATE TABLE squat (note text)',
    ]);
    my2 = await scratchMysql();
    const accountId = (await t.account({ plan: 'pro' })).id;
    write = await t.key(accountId, 'readwrite');
    read = await t.key(accountId, 'read');
  });
  afterAll(async () => {
    await Promise.all([pg?.drop(), my?.drop(), my2?.drop()]);
    await t?.close();
  });

  const newExport = async (body: object = {}) =>
    (
      await t
        .http()
        .post('/v1/live-export/live-exports')
        .set(bearer(write))
        .send({ name: 'export', source: pgSource(pg), destination: mysqlDestination(my), ...body })
        .expect(201)
    ).body;
  const put = (id: string, version: number | null, doc: unknown) => {
    const req = t.http().put(`/v1/live-export/live-exports/${id}/mappings`).set(bearer(write));
    if (version !== null) req.set('If-Match', `"${version}"`);
    return req.send(doc as object);
  };
  const validate = (id: string, body: unknown) =>
    t
      .http()
      .post(`/v1/live-export/live-exports/${id}/mappings/validate`)
      .set(bearer(read))
      .send(body as object);
  const mysqlColumns = async (database: string, table: string) =>
    (
      (await my.sql(
        `SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
        [database, table],
      )) as { name: string }[]
    ).map((row) => row.name);

  it('lists source tables and exportable fields (never link fields) and destination locations', async () => {
    const lex = await newExport();
    const tables = (await t.http().get(follow(lex.source.tables_url)).set(bearer(read)).expect(200)).body;
    expect(tables.data.map((table: { remote_id: string }) => table.remote_id).sort()).toEqual([
      'companies',
      'customers',
    ]);
    const customers = tables.data.find((table: { name: string }) => table.name === 'customers');
    expect(customers.fields_url).toBe(
      `http://lockstep.test/v1/live-export/live-exports/${lex.id}/source/tables/customers/fields`,
    );
    const fields = (await t.http().get(follow(customers.fields_url)).set(bearer(read)).expect(200)).body;
    expect(fields.table).toBe('customers');
    expect(fields.data.map((field: { remote_id: string }) => field.remote_id)).toEqual([
      'id',
      'email',
      'Full Name',
      'created_at',
    ]);
    expect(fields.data.find((field: { remote_id: string }) => field.remote_id === 'Full Name')).toMatchObject(
      { type_class: 'text', default_destination_field: 'Full_Name' },
    );
    expect(fields.data.find((field: { remote_id: string }) => field.remote_id === 'id')).toMatchObject({
      type_class: 'integer',
      primary: true,
    });
    expect(
      (
        await t
          .http()
          .get(`/v1/live-export/live-exports/${lex.id}/source/tables/nope/fields`)
          .set(bearer(read))
          .expect(404)
      ).body.error.code,
    ).toBe('not_found');

    const locations = (
      await t.http().get(follow(lex.destination.locations_url)).set(bearer(read)).expect(200)
    ).body;
    expect(locations.location_kind).toBe('database');
    expect(locations.data).toEqual(
      expect.arrayContaining([
        { id: my.database, name: my.database },
        { id: my2.database, name: my2.database },
      ]),
    );

    const unconnected = await newExport({ source: { connector: 'postgres' } });
    expect(unconnected.source.tables_url).toBeNull();
    const refused = (
      await t
        .http()
        .get(`/v1/live-export/live-exports/${unconnected.id}/source/tables`)
        .set(bearer(read))
        .expect(409)
    ).body.error;
    expect(refused).toMatchObject({
      code: 'auth_required',
      type: 'requires_action',
      required_action: { type: 'user_authorization', side: 'source' },
    });
  });

  it('GET/PUT the mappings document with ETag and a required If-Match, refusing every rule with its code', async () => {
    const lex = await newExport();
    const got = await t.http().get(follow(lex.mappings_url)).set(bearer(read)).expect(200);
    expect(got.body).toEqual({ tables: [] });
    expect(got.headers['etag']).toBe('"1"');

    const good = {
      tables: [
        {
          source_table: 'customers',
          destination_table: 'crm_customers',
          fields: [
            { source_field: 'id', primary: true },
            { source_field: 'email' },
            { source_field: 'Full Name' },
          ],
        },
      ],
    };
    expect((await put(lex.id, null, good).expect(400)).body.error.code).toBe('invalid_request');
    expect((await put(lex.id, 1, good).set('Idempotency-Key', 'k1').expect(400)).body.error.code).toBe(
      'invalid_request',
    );
    expect((await put(lex.id, 7, good).expect(412)).body.error).toMatchObject({
      code: 'revision_mismatch',
      message:
        'If-Match "7" is not the current version of the mappings; the current version is 1 (ETag "1"). GET the mappings, reapply your edit to that document and send its ETag.',
      details: { current_version: 1 },
    });
    expect(
      (await put(lex.id, 1, { tables: [{ source_table: 'customers', fields: 'all' }] }).expect(400)).body
        .error,
    ).toMatchObject({
      code: 'invalid_mappings',
      details: { issues: [expect.objectContaining({ path: 'tables[0].fields' })] },
    });

    const rules: [string, object, string, string][] = [
      [
        'unknown table',
        { tables: [{ source_table: 'nope', fields: [{ source_field: 'id' }] }] },
        'unknown_source_table',
        'tables[0]',
      ],
      [
        'unknown field',
        { tables: [{ source_table: 'customers', fields: [{ source_field: 'nope' }] }] },
        'unknown_source_field',
        'tables[0].fields[0]',
      ],
      [
        'link field',
        { tables: [{ source_table: 'customers', fields: [{ source_field: 'company_id' }] }] },
        'unknown_source_field',
        'tables[0].fields[0]',
      ],
      [
        'unsupported field',
        { tables: [{ source_table: 'customers', fields: [{ source_field: 'payload' }] }] },
        'unknown_source_field',
        'tables[0].fields[0]',
      ],
      [
        'same table twice',
        {
          tables: [
            { source_table: 'customers', destination_table: 'a', fields: [{ source_field: 'id' }] },
            { source_table: 'customers', destination_table: 'b', fields: [{ source_field: 'id' }] },
          ],
        },
        'duplicate_source_table',
        'tables[1]',
      ],
      [
        'same destination table',
        {
          tables: [
            { source_table: 'customers', destination_table: 'a', fields: [{ source_field: 'id' }] },
            { source_table: 'companies', destination_table: 'a', fields: [{ source_field: 'id' }] },
          ],
        },
        'duplicate_destination_table',
        'tables[1]',
      ],
      [
        'same column twice',
        {
          tables: [
            {
              source_table: 'customers',
              fields: [
                { source_field: 'id', destination_field: 'x' },
                { source_field: 'email', destination_field: 'X' },
              ],
            },
          ],
        },
        'duplicate_field_name',
        'tables[0].fields[1]',
      ],
      [
        'hidden column',
        {
          tables: [
            {
              source_table: 'customers',
              fields: [{ source_field: 'id', destination_field: 'lockstep_row_hash' }],
            },
          ],
        },
        'duplicate_field_name',
        'tables[0].fields[0]',
      ],
      [
        'two primaries',
        {
          tables: [
            {
              source_table: 'customers',
              fields: [
                { source_field: 'id', primary: true },
                { source_field: 'email', primary: true },
              ],
            },
          ],
        },
        'multiple_primary_fields',
        'tables[0]',
      ],
      [
        'no fields',
        { tables: [{ source_table: 'customers', fields: [] }] },
        'empty_table_mapping',
        'tables[0]',
      ],
      [
        'existing destination column',
        {
          tables: [
            { source_table: 'customers', destination_table: 'legacy', fields: [{ source_field: 'email' }] },
          ],
        },
        'existing_field_not_supported',
        'tables[0].fields[0]',
      ],
    ];
    const answers = [];
    for (const [label, doc] of rules) {
      const res = await put(lex.id, 1, doc);
      const checked = (await validate(lex.id, { mappings: doc }).expect(200)).body;
      answers.push([
        label,
        res.status,
        res.body.error?.code,
        res.body.error?.details?.issues?.[0]?.path,
        checked.valid,
        checked.issues[0]?.code,
        checked.issues[0]?.path,
      ]);
    }
    expect(answers).toEqual(
      rules.map(([label, , code, path]) => [label, 400, code, path, false, code, path]),
    );

    // A good document (names resolved to remote ids, defaults filled in) bumps the version; the same again does not.
    const stored = await put(lex.id, 1, {
      tables: [
        {
          source_table: 'customers',
          destination_table: 'crm_customers',
          fields: [
            { source_field: 'id', primary: true },
            { source_field: 'email' },
            { source_field: 'Full Name' },
          ],
        },
      ],
    }).expect(200);
    expect(stored.headers['etag']).toBe('"2"');
    expect(stored.body).toEqual({
      tables: [
        {
          source_table: 'customers',
          destination_table: 'crm_customers',
          fields: [
            { source_field: 'id', destination_field: 'id', primary: true },
            { source_field: 'email', destination_field: 'email', primary: false },
            { source_field: 'Full Name', destination_field: 'Full_Name', primary: false },
          ],
        },
      ],
    });
    expect((await put(lex.id, 2, stored.body).expect(200)).headers['etag']).toBe('"2"');
    expect((await put(lex.id, 1, stored.body).expect(412)).body.error.code).toBe('revision_mismatch');
    const again = await t.http().get(follow(lex.mappings_url)).set(bearer(read)).expect(200);
    expect([again.headers['etag'], again.body]).toEqual(['"2"', stored.body]);
    expect((await t.http().get(follow(lex.url)).set(bearer(read)).expect(200)).body).toMatchObject({
      mappings_version: 2,
      unsaved_changes: true,
      status: 'draft',
    });

    const unconnected = await newExport({ source: { connector: 'postgres' } });
    expect((await put(unconnected.id, 1, good).expect(409)).body.error.code).toBe('auth_required');
  });

  it('validate: the stored or a candidate document, auth_required per unconnected side, internal when validation fails, never a 500', async () => {
    const lex = await newExport();
    expect((await validate(lex.id, {}).expect(200)).body).toEqual({ valid: true, issues: [] });
    await put(lex.id, 1, {
      tables: [{ source_table: 'companies', fields: [{ source_field: 'name' }] }],
    }).expect(200);
    expect((await validate(lex.id, undefined).expect(200)).body).toEqual({ valid: true, issues: [] });
    expect(
      (await validate(lex.id, { tables: [{ source_table: 'companies', fields: [] }] }).expect(200)).body,
    ).toEqual({
      valid: false,
      issues: [{ code: 'empty_table_mapping', message: expect.any(String), path: 'tables[0]' }],
    });
    expect((await validate(lex.id, { mappings: { tables: 3 } }).expect(400)).body.error.code).toBe(
      'invalid_mappings',
    );

    const bare = await newExport({ source: { connector: 'postgres' }, destination: { connector: 'mysql' } });
    expect((await validate(bare.id, { tables: [] }).expect(200)).body).toEqual({
      valid: false,
      issues: [
        { code: 'auth_required', message: expect.stringContaining('source'), path: null },
        { code: 'auth_required', message: expect.stringContaining('destination'), path: null },
      ],
    });

    // Stored credentials that cannot be opened: validation cannot finish.
    await db.query(`UPDATE live_exports SET source_credentials = '\\x01'::bytea WHERE id = $1`, [lex.id]);
    const broken = (await validate(lex.id, {}).expect(200)).body;
    expect(broken).toEqual({
      valid: false,
      issues: [{ code: 'internal', message: expect.stringContaining('retry'), path: null }],
    });
  });

  it('save provisions the destination, records the plan, and later edits follow the applied-table rules', async () => {
    const lex = await newExport();
    expect((await t.http().get(follow(lex.save_url)).set(bearer(read)).expect(404)).body.error.code).toBe(
      'not_found',
    );
    expect((await t.http().post(follow(lex.save_url)).set(bearer(write)).expect(400)).body.error.code).toBe(
      'empty_mappings',
    );

    const doc = {
      tables: [
        {
          source_table: 'customers',
          destination_table: 'crm_customers',
          fields: [
            { source_field: 'id', primary: true },
            { source_field: 'email' },
            { source_field: 'Full Name' },
          ],
        },
      ],
    };
    await put(lex.id, 1, doc).expect(200);
    const saved = (await t.http().post(follow(lex.save_url)).set(bearer(write)).expect(200)).body;
    expect(saved).toMatchObject({
      live_export: lex.id,
      saved_version: 2,
      unsaved_changes: false,
      destination_connector: 'mysql',
      location: my.database,
      tables: [
        {
          source_table: 'customers',
          destination_table: 'crm_customers',
          created: true,
          added_columns: [],
          columns: [
            { source_field: 'id', column: 'id', type_class: 'integer', primary: true },
            { source_field: 'email', column: 'email', type_class: 'text', primary: false },
            { source_field: 'Full Name', column: 'Full_Name', type_class: 'text', primary: false },
          ],
        },
      ],
    });
    expect(await mysqlColumns(my.database, 'crm_customers')).toEqual([
      'lockstep_source_id',
      'lockstep_row_hash',
      'id',
      'email',
      'Full_Name',
    ]);
    const unique = (await my.sql(
      `SELECT COLUMN_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'crm_customers' AND NON_UNIQUE = 0`,
      [my.database],
    )) as { name: string }[];
    expect(unique.map((row) => row.name)).toEqual(['lockstep_source_id']);
    const [row] = await db.query(`SELECT plan FROM live_exports WHERE id = $1`, [lex.id]);
    expect(row.plan).toMatchObject({
      source: { connector: 'postgres', base: pg.schema },
      destination: { connector: 'mysql', location: my.database },
      tables: [{ sourceTable: 'customers', destinationTable: 'crm_customers' }],
    });

    const last = (await t.http().get(follow(lex.save_url)).set(bearer(read)).expect(200)).body;
    expect(last).toEqual({
      ...saved,
      tables: saved.tables.map(
        ({ created: _c, added_columns: _a, ...table }: Record<string, unknown>) => table,
      ),
    });
    expect((await t.http().get(follow(lex.url)).set(bearer(read)).expect(200)).body).toMatchObject({
      status: 'saved',
      saved_version: 2,
      unsaved_changes: false,
    });
    // Saving again changes nothing in the destination.
    expect(
      (await t.http().post(follow(lex.save_url)).set(bearer(write)).expect(200)).body.tables[0],
    ).toMatchObject({ created: false, added_columns: [] });

    // The applied table may gain fields, not lose, rename or re-point them.
    const refused: [object, string][] = [
      [{ tables: [{ ...doc.tables[0], destination_table: 'renamed' }] }, 'applied_table_not_editable'],
      [
        { tables: [{ ...doc.tables[0], fields: doc.tables[0]!.fields.slice(0, 2) }] },
        'applied_table_not_editable',
      ],
      [
        {
          tables: [
            {
              ...doc.tables[0],
              fields: [
                doc.tables[0]!.fields[0],
                { source_field: 'email', destination_field: 'mail' },
                doc.tables[0]!.fields[2],
              ],
            },
          ],
        },
        'applied_table_not_editable',
      ],
      [
        {
          tables: [
            {
              source_table: 'companies',
              destination_table: 'crm_customers',
              fields: [{ source_field: 'name' }],
            },
          ],
        },
        'applied_table_not_editable',
      ],
    ];
    for (const [body, code] of refused)
      expect((await put(lex.id, 2, body).expect(400)).body.error.code).toBe(code);
    const grown = {
      tables: [{ ...doc.tables[0], fields: [...doc.tables[0]!.fields, { source_field: 'created_at' }] }],
    };
    await put(lex.id, 2, grown).expect(200);
    expect((await t.http().get(follow(lex.url)).set(bearer(read)).expect(200)).body).toMatchObject({
      mappings_version: 3,
      saved_version: 2,
      unsaved_changes: true,
    });
    const resaved = (await t.http().post(follow(lex.save_url)).set(bearer(write)).expect(200)).body;
    expect(resaved).toMatchObject({
      saved_version: 3,
      unsaved_changes: false,
      tables: [{ created: false, added_columns: ['created_at'] }],
    });
    expect(await mysqlColumns(my.database, 'crm_customers')).toEqual([
      'lockstep_source_id',
      'lockstep_row_hash',
      'id',
      'email',
      'Full_Name',
      'created_at',
    ]);

    // A location change is an unsaved change; in the new location nothing is applied yet.
    const moved = (
      await t
        .http()
        .patch(follow(lex.url))
        .set(bearer(write))
        .send({ destination: { location: my2.database } })
        .expect(200)
    ).body;
    expect(moved).toMatchObject({
      destination: { location: my2.database },
      mappings_version: 4,
      saved_version: 3,
      unsaved_changes: true,
    });
    await put(lex.id, 4, { tables: [{ ...doc.tables[0], destination_table: 'moved_customers' }] }).expect(
      200,
    );
    expect((await t.http().post(follow(lex.save_url)).set(bearer(write)).expect(200)).body).toMatchObject({
      location: my2.database,
      saved_version: 5,
      tables: [{ destination_table: 'moved_customers', created: true }],
    });

    // DELETE: the export goes, its destination tables stay.
    await t.http().delete(follow(lex.url)).set(bearer(write)).expect(200);
    expect(await mysqlColumns(my.database, 'crm_customers')).toContain('lockstep_source_id');
    expect(await mysqlColumns(my2.database, 'moved_customers')).toContain('lockstep_source_id');
  });

  it("save refuses an unconnected side, a missing location, someone else's table and a table changed outside the service", async () => {
    const noDestination = await newExport({ destination: { connector: 'mysql' } });
    await put(noDestination.id, 1, {
      tables: [{ source_table: 'companies', fields: [{ source_field: 'name' }] }],
    }).expect(200);
    expect(
      (await t.http().post(follow(noDestination.save_url)).set(bearer(write)).expect(409)).body.error,
    ).toMatchObject({ code: 'auth_required', required_action: { side: 'destination' } });

    const noLocation = await newExport({ destination: mysqlDestination(my, null) });
    expect(
      (await t.http().post(follow(noLocation.save_url)).set(bearer(write)).expect(400)).body.error.code,
    ).toBe('invalid_location');

    // A table that exists without the export's hidden columns is someone else's: refused before anything changes.
    const squat = await newExport();
    await put(squat.id, 1, {
      tables: [{ source_table: 'companies', destination_table: 'squat', fields: [{ source_field: 'name' }] }],
    }).expect(200);
    const refused = (await t.http().post(follow(squat.save_url)).set(bearer(write)).expect(409)).body.error;
    expect(refused).toMatchObject({ code: 'live_export_invalid_structure', details: { table: 'squat' } });
    expect(await mysqlColumns(my.database, 'squat')).toEqual(['note']);
    expect(
      (await t.http().get(follow(squat.url)).set(bearer(read)).expect(200)).body.saved_version,
    ).toBeNull();

    // A table the export created, changed outside the service.
    const changed = await newExport();
    await put(changed.id, 1, {
      tables: [
        {
          source_table: 'companies',
          destination_table: 'changed_companies',
          fields: [{ source_field: 'name' }],
        },
      ],
    }).expect(200);
    await t.http().post(follow(changed.save_url)).set(bearer(write)).expect(200);
    await my.sql('ALTER TABLE changed_companies DROP COLUMN lockstep_row_hash');
    expect(
      (await t.http().post(follow(changed.save_url)).set(bearer(write)).expect(409)).body.error.code,
    ).toBe('live_export_invalid_structure');
  });

  it('saves MariaDB -> PostgreSQL too, creating the table in the chosen schema', async () => {
    await my.sql(
      'CREATE TABLE products (id int AUTO_INCREMENT PRIMARY KEY, title varchar(100) NOT NULL, price decimal(10,2))',
    );
    const target = await scratchPg();
    try {
      const lex = (
        await t
          .http()
          .post('/v1/live-export/live-exports')
          .set(bearer(write))
          .send({ name: 'back', source: mysqlSource(my), destination: pgDestination(target) })
          .expect(201)
      ).body;
      expect(lex.destination.location_kind).toBe('schema');
      await put(lex.id, 1, {
        tables: [
          {
            source_table: 'products',
            fields: [
              { source_field: 'id', primary: true },
              { source_field: 'title' },
              { source_field: 'price' },
            ],
          },
        ],
      }).expect(200);
      const saved = (await t.http().post(follow(lex.save_url)).set(bearer(write)).expect(200)).body;
      expect(saved).toMatchObject({
        location: target.schema,
        tables: [{ destination_table: 'products', created: true }],
      });
      const columns = await target.sql(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'products' ORDER BY ordinal_position`,
        [target.schema],
      );
      expect(columns.map((c) => c['column_name'])).toEqual([
        'lockstep_source_id',
        'lockstep_row_hash',
        'id',
        'title',
        'price',
      ]);
    } finally {
      await target.drop();
    }
  });
});
