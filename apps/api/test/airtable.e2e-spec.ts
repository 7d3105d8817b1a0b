/**
 * The Airtable connector through the API, against the Airtable simulator that `AIRTABLE_API_URL` points at
 * (the service passes its settings to connectors): listed by `GET /v1/sync/connectors`, a side created with a
 * personal access token and a base by name (validated live), tables with their views and fields.
 */
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

const TOKEN = 'patAPITEST.0123456789';

describe('an Airtable side through the API', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let simulator: AirtableSimulator;
  let write: string;
  let tableId: string;

  beforeAll(async () => {
    simulator = await AirtableSimulator.start();
    simulator.addToken(TOKEN);
    const base = simulator.addBase('Sales CRM');
    const table = simulator.addTable(base, 'Deals', [
      { name: 'Name', type: 'singleLineText' },
      { name: 'Amount', type: 'currency', options: { precision: 2, symbol: '$' } },
      { name: 'Stage', type: 'singleSelect', options: { choices: [{ name: 'new' }, { name: 'won' }] } },
    ]);
    tableId = table.id;
    t = await createTestApp({ AIRTABLE_API_URL: simulator.url });
    pg = await scratchPg(`
      CREATE TABLE deals (id serial PRIMARY KEY, name text, amount numeric(10,2));
      CREATE TABLE companies (id serial PRIMARY KEY, name text);
      CREATE TABLE people (id serial PRIMARY KEY, name text, company_id int REFERENCES companies (id));
    `);
    write = await t.key((await t.account()).id, 'readwrite');
  });

  afterAll(async () => {
    await pg?.drop();
    await t?.close();
    await simulator?.close();
  });

  const create = (right: Record<string, unknown>) =>
    t
      .http()
      .post('/v1/sync/syncs')
      .set(bearer(write))
      .send({
        name: 'Deals',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'airtable', ...right },
      });

  it('creates a side by token and base name, and discovers tables with views and fields', async () => {
    const created = await create({ auth: { apiKey: TOKEN }, base: 'Sales CRM' }).expect(201);
    const syncId = created.body.id as string;
    const tables = await t
      .http()
      .get(`/v1/sync/syncs/${syncId}/tables`)
      .query({ side: 'right' })
      .set(bearer(write))
      .expect(200);
    const deals = tables.body.data.find((table: { remote_id: string }) => table.remote_id === tableId);
    expect(deals).toMatchObject({
      name: 'Deals',
      read_only: false,
      views: { required: false, options: [{ value: expect.stringMatching(/^viw/), name: 'Grid view' }] },
    });
    const fields = await t
      .http()
      .get(`/v1/sync/syncs/${syncId}/tables/${deals.id}/fields`)
      .query({ side: 'right' })
      .set(bearer(write))
      .expect(200);
    expect(
      fields.body.data.map((field: { name: string; type: string; primary: boolean }) => [
        field.name,
        field.type,
        field.primary,
      ]),
    ).toEqual([
      ['Name', 'singleLineText', true],
      ['Amount', 'currency', false],
      ['Stage', 'singleSelect', false],
    ]);
    expect(fields.body.data[2].type_details).toMatchObject({ options: ['new', 'won'] });
  });

  it('refuses a token Airtable rejects (invalid_auth) and a base it cannot find (base_not_found)', async () => {
    const bad = await create({ auth: { apiKey: 'patWRONG.1' }, base: 'Sales CRM' }).expect(400);
    expect(bad.body.error.code).toBe('invalid_auth');
    expect(JSON.stringify(bad.body)).not.toContain('patWRONG.1');
    const missing = await create({ auth: { apiKey: TOKEN }, base: 'No such base' }).expect(400);
    expect(missing.body.error.code).toBe('base_not_found');
  });

  it('creates a foreign key mapped to a created field as a record link to the mapped target table', async () => {
    const created = await create({ auth: { apiKey: TOKEN }, base: 'Sales CRM' }).expect(201);
    const syncId = created.body.id as string;
    const put = await t
      .http()
      .put(`/v1/sync/syncs/${syncId}/mappings`)
      .set(bearer(write))
      .send({
        tables: [
          {
            left_table: 'companies',
            right_table: { create: { name: 'Companies' } },
            direction: 'two_way',
            fields: [{ left_field: 'name', right_field: { create: { name: 'Name' } } }],
          },
          {
            left_table: 'people',
            right_table: { create: { name: 'People' } },
            direction: 'two_way',
            fields: [
              { left_field: 'name', right_field: { create: { name: 'Name' } } },
              { left_field: 'company_id', right_field: { create: { name: 'Company' } } },
            ],
          },
        ],
      });
    if (put.status !== 200) throw new Error(JSON.stringify(put.body));
    const base = simulator.bases.find((candidate) => candidate.name === 'Sales CRM')!;
    const companies = base.tables.find((table) => table.name === 'Companies')!;
    const people = base.tables.find((table) => table.name === 'People')!;
    expect(people.fields.find((field) => field.name === 'Company')).toMatchObject({
      type: 'multipleRecordLinks',
      options: { linkedTableId: companies.id },
    });
  });
});
