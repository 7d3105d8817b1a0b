/**
 * PostgreSQL <-> Airtable end to end: an agent creates the sync over the API (the Airtable side with a token
 * and a base name), maps a PostgreSQL table onto a table the service creates in Airtable, a person starts it
 * (the operator CLI stands in for the console), and the real worker process carries it against the Airtable
 * simulator that `AIRTABLE_API_URL` points at. Edits on both sides converge; a delete is held for review.
 */
import { DataSource } from 'typeorm';
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { type AirtableSync, startAirtableSync } from './support/airtable-sync';
import { waitUntil } from './support/live-sync';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

const TOKEN = 'patSYNCTEST.0123456789';
type SimBase = ReturnType<AirtableSimulator['addBase']>;
type SimTable = SimBase['tables'][number];

describe('a PostgreSQL <-> Airtable sync through the API and the worker', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let simulator: AirtableSimulator;
  let base: SimBase;
  let sync: AirtableSync;

  const airtable = (): SimTable => base.tables.find((table) => table.name === 'Contacts')!;
  const byName = (name: string) =>
    [...airtable().records.values()].find(
      (record) => record.fields[airtable().fields.find((f) => f.name === 'Name')!.id] === name,
    );

  beforeAll(async () => {
    simulator = await AirtableSimulator.start();
    simulator.addToken(TOKEN);
    base = simulator.addBase('CRM');
    t = await createTestApp({ AIRTABLE_API_URL: simulator.url });
    pg = await scratchPg(`
      CREATE TABLE contacts (id serial PRIMARY KEY, name text, score numeric(10,2));
      INSERT INTO contacts (name, score) VALUES ('Ada', 1.50), ('Grace', 2.25), ('Linus', 3.00);
    `);
    sync = await startAirtableSync(t, {
      pg,
      token: TOKEN,
      base: 'CRM',
      apiUrl: simulator.url,
      tables: [
        {
          left_table: 'contacts',
          right_table: { create: { name: 'Contacts' } },
          direction: 'two_way',
          fields: [
            { left_field: 'name', right_field: { create: { name: 'Name' } } },
            { left_field: 'score', right_field: { create: { name: 'Score' } } },
          ],
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

  it('created the Airtable table with typed fields and copied the rows into it', async () => {
    const table = airtable();
    const types = Object.fromEntries(table.fields.map((field) => [field.name, field.type]));
    expect(types).toMatchObject({ Name: 'singleLineText', Score: 'number', 'Lockstep ID': 'singleLineText' });
    expect(table.fields.find((field) => field.name === 'Score')!.options).toMatchObject({ precision: 2 });
    const score = table.fields.find((field) => field.name === 'Score')!.id;
    expect(byName('Grace')?.fields[score]).toBe(2.25);
    expect(table.records.size).toBe(3);
    expect(simulator.stats.rateLimited).toBe(0);
  });

  it('carries edits both ways', async () => {
    await pg.sql(`UPDATE contacts SET score = 9.75 WHERE name = 'Ada'`);
    const score = () => airtable().fields.find((field) => field.name === 'Score')!.id;
    await waitUntil(
      'the PostgreSQL edit in Airtable',
      async () => byName('Ada')?.fields[score()] === 9.75,
      30_000,
    );
    simulator.outside.update(base, 'Contacts', byName('Grace')!.id, { Name: 'Grace Hopper' });
    await waitUntil(
      'the Airtable edit in PostgreSQL',
      async () => (await pg.sql(`SELECT 1 FROM contacts WHERE name = 'Grace Hopper'`)).length === 1,
      30_000,
    );
    simulator.outside.insert(base, 'Contacts', { Name: 'Margaret', Score: 4 });
    await waitUntil(
      'the Airtable insert in PostgreSQL',
      async () =>
        (await pg.sql(`SELECT score FROM contacts WHERE name = 'Margaret'`))[0]?.['score'] === '4.00',
      30_000,
    );
    // The sync's own writes come back through the webhook payloads; the engine records no operation for them:
    // the count of operations stays put once the edits are carried.
    const db = t.app.get(DataSource);
    const count = async () =>
      Number((await db.query(`SELECT count(*) AS n FROM operation_log WHERE sync_id = $1`, [sync.id]))[0].n);
    const settled = await count();
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(await count()).toBe(settled);
    expect(simulator.stats.rateLimited).toBe(0);
  });

  it('holds a delete made in Airtable for review', async () => {
    simulator.outside.delete(base, 'Contacts', byName('Linus')!.id);
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
    expect(await pg.sql(`SELECT 1 FROM contacts WHERE name = 'Linus'`)).toHaveLength(1);
  });

  it('spends a small share of the base budget on change detection while idle', async () => {
    // The change hub probes Airtable every 5 s with one list of webhooks (CHECKPOINT_POLLING); at most one
    // safety poll of the runner may fall in the window too. Polling once a second would make 20 requests.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const before = simulator.stats.requests;
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const spent = simulator.stats.requests - before;
    console.log(`idle sync: ${spent} Airtable requests in 20 s`);
    expect(spent).toBeLessThanOrEqual(10);
  }, 30_000);
});
