/**
 * MariaDB <-> NocoDB end to end with webhooks off (no PUBLIC_URL): the worker polls NocoDB every 2 s, so a
 * change made in NocoDB reaches MariaDB within that interval. (NocoDB going away mid-sync is
 * nocodb-restart.e2e-spec.ts: a real NocoDB process killed and started again.)
 */
import {
  admin,
  createBase,
  deleteBase,
  describeNocodb,
  type NocodbServer,
  startNocodb,
  tableIdByTitle,
  uniqueName,
} from '@lockstep/connector-nocodb/testing';
import { waitUntil } from './support/live-sync';
import { type NocodbSync, startNocodbSync } from './support/nocodb-sync';
import { scratchMysql, type ScratchMysql } from './support/scratch-dbs';
import { createTestApp, type TestApp } from './support/test-app';

type Row = Record<string, unknown> & { Id: number };
const POLL_SECONDS = 2;

describeNocodb('a MariaDB <-> NocoDB sync, polled', () => {
  let t: TestApp;
  let my: ScratchMysql;
  let server: NocodbServer;
  let baseId: string;
  let sync: NocodbSync;
  let tableId: string;

  const rows = async () =>
    (await admin<{ list: Row[] }>(server, 'GET', `/api/v2/tables/${tableId}/records?limit=1000`)).list;
  const byName = async (name: string) => (await rows()).find((row) => row['Name'] === name);
  const names = async () =>
    ((await my.sql(`SELECT name FROM people ORDER BY name`)) as { name: string }[]).map((row) => row.name);

  beforeAll(async () => {
    server = await startNocodb();
    const baseTitle = uniqueName('people');
    baseId = await createBase(server, baseTitle);
    t = await createTestApp();
    my = await scratchMysql([
      'CREATE TABLE people (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100), born date)',
      "INSERT INTO people (name, born) VALUES ('Ada', '1815-12-10'), ('Alan', '1912-06-23')",
    ]);
    sync = await startNocodbSync(t, {
      left: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      nocodb: { url: server.url, token: server.token, base: baseTitle },
      publicUrl: null,
      pollSeconds: POLL_SECONDS,
      tables: [
        {
          left_table: 'people',
          right_table: { create: { name: 'People' } },
          direction: 'two_way',
          fields: [
            { left_field: 'name', right_field: { create: { name: 'Name' } } },
            { left_field: 'born', right_field: { create: { name: 'Born' } } },
          ],
        },
      ],
    });
    tableId = await tableIdByTitle(server, baseId, 'People');
  }, 300_000);

  afterAll(async () => {
    await sync?.stop();
    await my?.drop().catch(() => undefined);
    await t?.close();
    if (baseId) await deleteBase(server, baseId);
  });

  it('copied the rows and installed no webhook (no PUBLIC_URL)', async () => {
    expect((await byName('Ada'))?.['Born']).toBe('1815-12-10');
    const hooks = await admin<{ list: unknown[] }>(server, 'GET', `/api/v2/meta/tables/${tableId}/hooks`);
    expect(hooks.list).toHaveLength(0);
  });

  it('carries a NocoDB edit into MariaDB within the poll interval', async () => {
    const ada = await byName('Ada');
    const started = Date.now();
    await admin(server, 'PATCH', `/api/v2/tables/${tableId}/records`, [
      { Id: ada!.Id, Name: 'Ada Lovelace' },
    ]);
    await waitUntil(
      'the NocoDB edit in MariaDB',
      async () => (await names()).includes('Ada Lovelace'),
      15_000,
      50,
    );
    const latency = Date.now() - started;
    console.log(`NocoDB -> MariaDB by polling every ${POLL_SECONDS} s: ${latency} ms`);
    // The poll interval, then the runner's read and write (a busy machine: a second of slack).
    expect(latency).toBeLessThan(POLL_SECONDS * 1000 + 1500);
  });
});
