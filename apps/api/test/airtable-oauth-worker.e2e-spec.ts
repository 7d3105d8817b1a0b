/**
 * A PostgreSQL <-> Airtable sync whose Airtable side a person signed in (OAuth), carried by the real worker
 * process against the simulator. An hour later Airtable refuses the expired access token: the worker renews it
 * once, saves the renewed tokens as the side's encrypted credentials and goes on syncing; a new worker process
 * started afterwards syncs with the saved tokens without renewing again, and the refresh token the renewal
 * spent is refused. (The sign-in itself is the console's, tested in console/airtable-oauth.e2e-spec.ts; here
 * the side is stored as it leaves it.)
 */
import { DataSource } from 'typeorm';
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { CredentialCipher, sideOwner } from '@lockstep/persistence';
import { type AirtableSync, startAirtableSync } from './support/airtable-sync';
import { waitUntil } from './support/live-sync';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { createTestApp, type TestApp } from './support/test-app';

const TOKEN = 'patOAUTHWORKER.0123456789';
const CLIENT_ID = 'lockstep-worker-oauth-test';
const CLIENT_SECRET = 'worker-oauth-secret-0123456789';

describe('a signed-in Airtable side through the worker: the renewed token is saved and used after a restart', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let simulator: AirtableSimulator;
  let sync: AirtableSync;
  let first: Record<string, string>;

  const names = (): unknown[] => {
    const table = simulator.bases[0]!.tables.find((candidate) => candidate.name === 'Contacts')!;
    const name = table.fields.find((field) => field.name === 'Name')!.id;
    return [...table.records.values()].map((record) => record.fields[name]);
  };
  const stored = async (): Promise<Record<string, string>> => {
    const rows: { credentials: Buffer }[] = await t.app
      .get(DataSource)
      .query(`SELECT credentials FROM sync_sides WHERE sync_id = $1 AND side = 'right'`, [sync.id]);
    return t.app.get(CredentialCipher).decrypt(rows[0]!.credentials, sideOwner(sync.id, 'right'));
  };

  beforeAll(async () => {
    simulator = await AirtableSimulator.start();
    simulator.addToken(TOKEN);
    simulator.addBase('CRM');
    simulator.registerIntegration({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [] });
    const tokens = simulator.signIn(CLIENT_ID);
    first = {
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      token_type: 'bearer',
      expires_at: new Date(Date.now() + tokens.expires_in * 1000).toISOString(),
      scope: tokens.scope,
    };
    const settings = {
      AIRTABLE_API_URL: simulator.url,
      AIRTABLE_OAUTH_URL: simulator.url,
      OAUTH_CLIENTS: JSON.stringify({ airtable: { client_id: CLIENT_ID, client_secret: CLIENT_SECRET } }),
    };
    t = await createTestApp(settings);
    pg = await scratchPg(`
      CREATE TABLE contacts (id serial PRIMARY KEY, name text);
      INSERT INTO contacts (name) VALUES ('Ada'), ('Grace');
    `);
    sync = await startAirtableSync(t, {
      pg,
      token: TOKEN,
      base: 'CRM',
      apiUrl: simulator.url,
      signedIn: first,
      workerEnv: settings,
      tables: [
        {
          left_table: 'contacts',
          right_table: { create: { name: 'Contacts' } },
          direction: 'two_way',
          fields: [{ left_field: 'name', right_field: { create: { name: 'Name' } } }],
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

  it('renews once when the access token expires, saves it, and a restarted worker syncs with it', async () => {
    expect(names().sort()).toEqual(['Ada', 'Grace']);
    expect(simulator.oauth.refreshes).toBe(0);

    simulator.advanceClock(61 * 60_000);
    await pg.sql(`INSERT INTO contacts (name) VALUES ('Linus')`);
    await waitUntil('Linus to reach Airtable', async () => names().includes('Linus'), 30_000);
    expect(simulator.oauth.refreshes).toBe(1);
    const renewed = await stored();
    expect(renewed['access_token']).not.toBe(first['access_token']);
    expect(renewed['refresh_token']).not.toBe(first['refresh_token']);
    expect(renewed['scope']).toBe(first['scope']);

    await sync.restart();
    await pg.sql(`INSERT INTO contacts (name) VALUES ('Barbara')`);
    await waitUntil('Barbara to reach Airtable', async () => names().includes('Barbara'), 30_000);
    expect(simulator.oauth.refreshes).toBe(1);
    expect((await stored())['access_token']).toBe(renewed['access_token']);
    const reused = await fetch(`${simulator.url}/oauth2/v1/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first['refresh_token']! }),
    });
    expect([reused.status, ((await reused.json()) as { error: string }).error]).toEqual([
      400,
      'invalid_grant',
    ]);
    expect(simulator.stats.rateLimited).toBe(0);
  }, 120_000);
});
