/**
 * PostgreSQL <-> Airtable end to end: an agent creates the sync over the API (the Airtable side with a token
 * and a base name), maps a PostgreSQL table onto a table the service creates in Airtable, a person starts it
 * (the operator CLI stands in for the console), and the real worker process carries it against the Airtable
 * simulator that `AIRTABLE_API_URL` points at. Edits on both sides converge; a delete is held for review.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { cli } from './support/cli';
import { waitUntil } from './support/live-sync';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, TEST_MASTER_KEY, type TestApp } from './support/test-app';

const ROOT = join(__dirname, '..', '..', '..');
const TOKEN = 'patSYNCTEST.0123456789';
type SimBase = ReturnType<AirtableSimulator['addBase']>;
type SimTable = SimBase['tables'][number];

describe('a PostgreSQL <-> Airtable sync through the API and the worker', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let simulator: AirtableSimulator;
  let base: SimBase;
  let worker: ChildProcess | null = null;
  let syncId: string;
  let write: string;

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
    const accountId = (await t.account()).id;
    write = await t.key(accountId, 'readwrite');
    const created = await t
      .http()
      .post('/v1/sync/syncs')
      .set(bearer(write))
      .send({
        name: 'Contacts',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'airtable', auth: { apiKey: TOKEN }, base: 'CRM' },
      })
      .expect(201);
    syncId = created.body.id;
    const put = await t
      .http()
      .put(`/v1/sync/syncs/${syncId}/mappings`)
      .set(bearer(write))
      .send({
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
    if (put.status !== 200) throw new Error(`mappings PUT: ${put.status} ${JSON.stringify(put.body)}`);
    const started = cli('sync', 'start', '--id', syncId);
    if (started.code !== 0) throw new Error(`sync start: ${started.stderr}`);
    worker = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
      env: {
        ...process.env,
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
        ENGINE_ACCOUNT_ID: accountId,
        ENGINE_LEASE_SECONDS: '3',
        AIRTABLE_API_URL: simulator.url,
        LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const db = t.app.get(DataSource);
    await waitUntil(
      'the initial sync to finish',
      async () =>
        (await db.query(`SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`, [syncId]))[0]
          ?.phase === 'done',
      90_000,
    );
  }, 120_000);

  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
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
      Number((await db.query(`SELECT count(*) AS n FROM operations WHERE sync_id = $1`, [syncId]))[0].n);
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
          await t.http().get(`/v1/sync/pending-deletes?sync=${syncId}`).set(bearer(write)).expect(200)
        ).body;
        return body.data.length > 0 ? body.data : null;
      },
      30_000,
    );
    expect(pending).toHaveLength(1);
    expect(await pg.sql(`SELECT 1 FROM contacts WHERE name = 'Linus'`)).toHaveLength(1);
  });
});
