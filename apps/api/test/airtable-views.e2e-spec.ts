/**
 * A mapped Airtable view (spec 2.7, 2.8) through the API and the real worker: only the view's records are
 * synced; a record that enters the view arrives, and one that leaves it is a delete held for review.
 */
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { type AirtableSync, startAirtableSync } from './support/airtable-sync';
import { waitUntil } from './support/live-sync';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

const TOKEN = 'patVIEWTEST.0123456789';

describe('a PostgreSQL <-> Airtable sync through an Airtable view', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let simulator: AirtableSimulator;
  let sync: AirtableSync;
  let base: ReturnType<AirtableSimulator['addBase']>;
  const ids: Record<string, string> = {};
  const names = async () =>
    (await pg.sql(`SELECT name FROM leads ORDER BY name`)).map((row) => row['name'] as string);

  beforeAll(async () => {
    simulator = await AirtableSimulator.start();
    simulator.addToken(TOKEN);
    base = simulator.addBase('Sales');
    const leads = simulator.addTable(base, 'Leads', [
      { name: 'Name', type: 'singleLineText' },
      { name: 'Stage', type: 'singleSelect', options: { choices: [{ name: 'new' }, { name: 'qualified' }] } },
    ]);
    const stage = leads.fields[1]!.id;
    leads.views.push({
      id: 'viwQUALIFIED00000',
      name: 'Qualified',
      type: 'grid',
      filter: (record) => record.fields[stage] === 'qualified',
    });
    for (const [name, value] of [
      ['Ada', 'qualified'],
      ['Bob', 'new'],
      ['Cy', 'qualified'],
    ])
      ids[name!] = simulator.outside.insert(base, 'Leads', { Name: name, Stage: value });
    t = await createTestApp({ AIRTABLE_API_URL: simulator.url });
    pg = await scratchPg('CREATE TABLE leads (id serial PRIMARY KEY, name text);');
    sync = await startAirtableSync(t, {
      pg,
      token: TOKEN,
      base: 'Sales',
      apiUrl: simulator.url,
      tables: [
        {
          left_table: 'leads',
          right_table: 'Leads',
          right: { view: 'viwQUALIFIED00000' },
          direction: 'two_way',
          fields: [{ left_field: 'name', right_field: 'Name' }],
        },
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await sync?.stop();
    await pg?.drop().catch(() => undefined);
    await t?.close();
    await simulator?.close();
  });

  it('copies only the records of the view', async () => {
    expect(await names()).toEqual(['Ada', 'Cy']);
  });

  it('brings a record that enters the view; one that leaves it is a delete held for review', async () => {
    simulator.outside.update(base, 'Leads', ids['Bob']!, { Stage: 'qualified' });
    await waitUntil('Bob in PostgreSQL', async () => (await names()).includes('Bob'), 30_000);
    simulator.outside.update(base, 'Leads', ids['Ada']!, { Stage: 'new' });
    const pending = await waitUntil(
      'the held delete',
      async () => {
        const body = (
          await t.http().get(`/v1/sync/pending-deletes?sync=${sync.id}`).set(bearer(sync.key)).expect(200)
        ).body;
        return body.data.length > 0 ? body.data : null;
      },
      30_000,
    );
    expect(pending).toHaveLength(1);
    expect(await names()).toEqual(['Ada', 'Bob', 'Cy']);
  });
});
