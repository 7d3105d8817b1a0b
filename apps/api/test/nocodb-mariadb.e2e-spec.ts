/**
 * MariaDB <-> NocoDB end to end with webhooks off (no PUBLIC_URL): the worker polls NocoDB every 2 s, so a
 * change made in NocoDB reaches MariaDB within that interval. NocoDB is reached through a loopback proxy that
 * the test takes down mid-sync (NocoDB gone, as in a restart): a connection issue is raised, and once NocoDB is
 * back the sync catches up with the edits made on both sides meanwhile, losing none.
 */
import {
  admin,
  createBase,
  deleteBase,
  describeNocodb,
  type NocodbServer,
  type Proxy,
  startNocodb,
  startProxy,
  uniqueName,
} from '@lockstep/connector-nocodb/testing';
import { waitUntil } from './support/live-sync';
import { type NocodbSync, startNocodbSync } from './support/nocodb-sync';
import { scratchMysql, type ScratchMysql } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

type Row = Record<string, unknown> & { Id: number };
const POLL_SECONDS = 2;

describeNocodb('a MariaDB <-> NocoDB sync, polled, through NocoDB going away', () => {
  let t: TestApp;
  let my: ScratchMysql;
  let server: NocodbServer;
  let proxy: Proxy;
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
    proxy = await startProxy(server.url);
    const baseTitle = uniqueName('people');
    baseId = await createBase(server, baseTitle);
    t = await createTestApp();
    my = await scratchMysql([
      'CREATE TABLE people (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100), born date)',
      "INSERT INTO people (name, born) VALUES ('Ada', '1815-12-10'), ('Alan', '1912-06-23')",
    ]);
    sync = await startNocodbSync(t, {
      left: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      nocodb: { url: proxy.url, token: server.token, base: baseTitle },
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
    const tables = await admin<{ list: { id: string; title: string }[] }>(
      server,
      'GET',
      `/api/v2/meta/bases/${baseId}/tables`,
    );
    tableId = tables.list.find((table) => table.title === 'People')!.id;
  }, 300_000);

  afterAll(async () => {
    await sync?.stop();
    await my?.drop().catch(() => undefined);
    await t?.close();
    await proxy?.close();
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

  it('raises an issue while NocoDB is gone and catches up with both sides afterwards, losing nothing', async () => {
    proxy.down = true;
    await my.sql(`UPDATE people SET name = 'Alan Turing' WHERE name = 'Alan'`);
    await my.sql(`INSERT INTO people (name, born) VALUES ('Grace', '1906-12-09')`);
    const alan = await byName('Alan');
    await admin(server, 'PATCH', `/api/v2/tables/${tableId}/records`, [{ Id: alan!.Id, Born: '1912-06-24' }]);
    await admin(server, 'POST', `/api/v2/tables/${tableId}/records`, [
      { Name: 'Edsger', Born: '1930-05-11' },
    ]);
    const issue = await waitUntil(
      'an issue about NocoDB',
      async () => {
        const body = (await t.http().get(`/v1/sync/issues?sync=${sync.id}`).set(bearer(sync.key)).expect(200))
          .body;
        return body.data.length > 0 ? body.data[0] : null;
      },
      90_000,
      500,
    );
    console.log(`issue while NocoDB was gone: ${issue.type} ${issue.code}`);
    proxy.down = false;
    await waitUntil(
      'the MariaDB edits in NocoDB',
      async () => Boolean((await byName('Grace')) && (await byName('Alan Turing'))),
      90_000,
      500,
    );
    await waitUntil(
      'the NocoDB edits in MariaDB',
      async () => (await names()).includes('Edsger'),
      90_000,
      500,
    );
    const born = (await my.sql(
      `SELECT DATE_FORMAT(born, '%Y-%m-%d') AS born FROM people WHERE name = 'Alan Turing'`,
    )) as {
      born: string;
    }[];
    expect(born[0]?.born).toBe('1912-06-24');
    expect((await names()).sort()).toEqual(['Ada Lovelace', 'Alan Turing', 'Edsger', 'Grace']);
    expect((await rows()).map((row) => row['Name']).sort()).toEqual([
      'Ada Lovelace',
      'Alan Turing',
      'Edsger',
      'Grace',
    ]);
    await waitUntil(
      'the issue resolved',
      async () => {
        const body = (await t.http().get(`/v1/sync/issues?sync=${sync.id}`).set(bearer(sync.key)).expect(200))
          .body;
        return body.data.length === 0;
      },
      60_000,
      500,
    );
  }, 300_000);
});
