/**
 * A NocoDB restart mid-sync, for real: this file starts a NocoDB server process of its own (its own database
 * and port, not the run's shared server, which other files use in parallel), syncs a PostgreSQL table with it
 * through the API and the real worker (webhooks on, polling every 5 s), SIGKILLs the NocoDB process right after
 * an edit made in NocoDB (its webhook may or may not have gone out), edits PostgreSQL while NocoDB is gone, sees
 * the connection issue raised, starts NocoDB again on the same database and port, and checks that every edit
 * made on either side arrived on the other, none lost, and that the issue resolved itself.
 * Two NocoDB boots: about 40 s each on a quiet machine.
 */
import {
  admin,
  createBase,
  describeNocodb,
  type NocodbServer,
  type OwnNocodb,
  ownNocodb,
  startNocodb,
  tableIdByTitle,
  uniqueName,
} from '@lockstep/connector-nocodb/testing';
import { waitUntil } from './support/live-sync';
import { listenOnLoopback, type NocodbSync, startNocodbSync } from './support/nocodb-sync';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

type Row = Record<string, unknown> & { Id: number };

describeNocodb('a PostgreSQL <-> NocoDB sync through a NocoDB restart', () => {
  let nocodb: OwnNocodb;
  let server: NocodbServer;
  let t: TestApp;
  let pg: ScratchPg;
  let sync: NocodbSync;
  let tableId: string;

  const rows = async () =>
    (await admin<{ list: Row[] }>(server, 'GET', `/api/v2/tables/${tableId}/records?limit=1000`)).list;
  const byName = async (name: string) => (await rows()).find((row) => row['Name'] === name);
  const pgNames = async () =>
    (await pg.sql(`SELECT name FROM contacts ORDER BY name`)).map((row) => row['name'] as string);
  const openIssues = async () =>
    (await t.http().get(`/v1/sync/issues?sync=${sync.id}`).set(bearer(sync.key)).expect(200)).body.data as {
      type: string;
      code: string;
    }[];

  beforeAll(async () => {
    // The run's shared server first: two NocoDB first boots at once (different databases) sometimes fail in
    // NocoDB's own seeding (duplicate key in nc_plugins_v2), so this test's own boot never overlaps it.
    await startNocodb();
    nocodb = ownNocodb('restart');
    server = await nocodb.start();
    const baseTitle = uniqueName('restart');
    const baseId = await createBase(server, baseTitle);
    t = await createTestApp();
    const publicUrl = await listenOnLoopback(t);
    pg = await scratchPg(`
      CREATE TABLE contacts (id serial PRIMARY KEY, name text, score numeric(10,2));
      INSERT INTO contacts (name, score) VALUES ('Ada', 1.00), ('Grace', 2.00), ('Linus', 3.00);
    `);
    sync = await startNocodbSync(t, {
      left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
      nocodb: { url: server.url, token: server.token, base: baseTitle },
      publicUrl,
      pollSeconds: 5,
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
    tableId = await tableIdByTitle(server, baseId, 'Contacts');
  }, 400_000);

  afterAll(async () => {
    await sync?.stop();
    await pg?.drop().catch(() => undefined);
    await t?.close();
    await nocodb?.stop();
  });

  it('raises an issue while NocoDB is down, and after its restart catches up with both sides, losing nothing', async () => {
    expect((await rows()).map((row) => row['Name']).sort()).toEqual(['Ada', 'Grace', 'Linus']);
    // An edit in NocoDB, then NocoDB killed at once: its webhook may or may not have reached the API.
    const grace = await byName('Grace');
    await admin(server, 'PATCH', `/api/v2/tables/${tableId}/records`, [{ Id: grace!.Id, Score: 7.5 }]);
    await admin(server, 'POST', `/api/v2/tables/${tableId}/records`, [{ Name: 'Margaret', Score: 4 }]);
    await nocodb.kill();
    const killed = Date.now();
    // Edits in PostgreSQL while NocoDB is gone.
    await pg.sql(`UPDATE contacts SET name = 'Ada Lovelace' WHERE name = 'Ada'`);
    await pg.sql(`INSERT INTO contacts (name, score) VALUES ('Edsger', 5.00)`);
    const issue = await waitUntil(
      'an issue about NocoDB',
      async () => (await openIssues())[0] ?? null,
      120_000,
      500,
    );
    console.log(`issue ${issue.type} ${issue.code} raised ${Date.now() - killed} ms after the kill`);
    expect(issue.type).toBe('connection');

    const restarted = await nocodb.start();
    console.log(
      `NocoDB restarted in ${Date.now() - killed} ms after the kill (boot ${restarted.startedMs} ms)`,
    );
    expect(restarted.url).toBe(server.url);
    // An edit in NocoDB right after the restart, while the sync is still catching up.
    const linus = await byName('Linus');
    await admin(server, 'PATCH', `/api/v2/tables/${tableId}/records`, [{ Id: linus!.Id, Name: 'Linus T.' }]);

    const all = ['Ada Lovelace', 'Edsger', 'Grace', 'Linus T.', 'Margaret'];
    await waitUntil(
      'the PostgreSQL edits in NocoDB',
      async () => JSON.stringify((await rows()).map((row) => row['Name']).sort()) === JSON.stringify(all),
      120_000,
      500,
    );
    await waitUntil(
      'the NocoDB edits in PostgreSQL',
      async () => JSON.stringify(await pgNames()) === JSON.stringify(all),
      120_000,
      500,
    );
    const scores = Object.fromEntries(
      (await pg.sql(`SELECT name, score::text AS score FROM contacts`)).map((row) => [
        row['name'],
        row['score'],
      ]),
    );
    expect(scores).toEqual({
      'Ada Lovelace': '1.00',
      Edsger: '5.00',
      Grace: '7.50',
      'Linus T.': '3.00',
      Margaret: '4.00',
    });
    expect((await byName('Edsger'))?.['Score']).toBe(5);
    await waitUntil('the issue resolved', async () => (await openIssues()).length === 0, 90_000, 500);
    console.log(`caught up and resolved ${Date.now() - killed} ms after the kill`);
  }, 600_000);
});
