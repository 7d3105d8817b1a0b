/**
 * PostgreSQL <-> NocoDB end to end, against the real NocoDB (tools/test/nocodb): an agent creates the sync
 * over the API, maps a PostgreSQL table onto a table the service creates in NocoDB, a person starts it, and the
 * real worker carries it. NocoDB's webhook calls the API's notification endpoint (PUBLIC_URL, loopback here),
 * so a change made in NocoDB reaches PostgreSQL within 2 s (p95 of 20 edits); polling is set to 60 s so only
 * the webhook can make it that fast. A delete made in NocoDB is held for review.
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
import { listenOnLoopback, type NocodbSync, startNocodbSync } from './support/nocodb-sync';
import { waitUntil } from './support/live-sync';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

type Row = Record<string, unknown> & { Id: number };
/** NocoDB edits timed through the webhook; the benchmark (tools/bench/connectors/nocodb/engine.sh) asks 40. */
const LATENCY_EDITS = Number(process.env['NOCODB_LATENCY_EDITS'] ?? 20);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describeNocodb('a PostgreSQL <-> NocoDB sync through the API and the worker', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let server: NocodbServer;
  let baseId: string;
  let sync: NocodbSync;
  let tableId: string;

  const rows = async () =>
    (await admin<{ list: Row[] }>(server, 'GET', `/api/v2/tables/${tableId}/records?limit=1000`)).list;
  const byName = async (name: string) => (await rows()).find((row) => row['Name'] === name);

  beforeAll(async () => {
    server = await startNocodb();
    const baseTitle = uniqueName('crm');
    baseId = await createBase(server, baseTitle);
    t = await createTestApp();
    const publicUrl = await listenOnLoopback(t);
    pg = await scratchPg(`
      CREATE TABLE contacts (id serial PRIMARY KEY, name text, score numeric(10,2));
      INSERT INTO contacts (name, score) VALUES ('Ada', 1.50), ('Grace', 2.25), ('Linus', 3.00);
    `);
    sync = await startNocodbSync(t, {
      left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
      nocodb: { url: server.url, token: server.token, base: baseTitle },
      publicUrl,
      pollSeconds: 60,
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
  }, 300_000);

  afterAll(async () => {
    await sync?.stop();
    await pg?.drop().catch(() => undefined);
    await t?.close();
    if (baseId) await deleteBase(server, baseId);
  });

  /**
   * NocoDB edits made one after another (LATENCY_EDITS), each timed from NocoDB's answer to the edit until
   * PostgreSQL has it: NocoDB's webhook, the API's notification endpoint, the worker's read and write.
   */
  async function nocodbEditLatencies(id: number): Promise<number[]> {
    const latencies: number[] = [];
    for (let edit = 1; edit <= LATENCY_EDITS; edit += 1) {
      const name = `Grace Hopper ${edit}`;
      await admin(server, 'PATCH', `/api/v2/tables/${tableId}/records`, [{ Id: id, Name: name }]);
      const started = Date.now();
      await waitUntil(
        `NocoDB edit ${edit} in PostgreSQL`,
        async () => (await pg.sql(`SELECT 1 FROM contacts WHERE name = $1`, [name])).length === 1,
        10_000,
        10,
      );
      latencies.push(Date.now() - started);
    }
    return latencies;
  }

  it('created the NocoDB table with typed fields and its webhook, and copied the rows into it', async () => {
    const table = await admin<{ columns: { title: string; uidt: string; meta: unknown }[] }>(
      server,
      'GET',
      `/api/v2/meta/tables/${tableId}`,
    );
    const types = Object.fromEntries(table.columns.map((column) => [column.title, column.uidt]));
    expect(types).toMatchObject({
      Name: 'SingleLineText',
      Score: 'Decimal',
      'Lockstep ID': 'SingleLineText',
    });
    expect((await byName('Grace'))?.['Score']).toBe(2.25);
    expect(await rows()).toHaveLength(3);
    const hooks = await admin<{ list: unknown[] }>(server, 'GET', `/api/v2/meta/tables/${tableId}/hooks`);
    expect(hooks.list).toHaveLength(1);
  });

  it('carries a PostgreSQL edit into NocoDB, and NocoDB edits into PostgreSQL through the webhook, p95 < 2 s', async () => {
    await pg.sql(`UPDATE contacts SET score = 9.75 WHERE name = 'Ada'`);
    await waitUntil(
      'the PostgreSQL edit in NocoDB',
      async () => (await byName('Ada'))?.['Score'] === 9.75,
      30_000,
    );
    const latencies = await nocodbEditLatencies((await byName('Grace'))!.Id);
    const [p50, p95] = [percentile(latencies, 50), percentile(latencies, 95)];
    console.log(
      `NocoDB -> PostgreSQL through the webhook and the worker, ${latencies.length} edits: p50 ${p50} ms, ` +
        `p95 ${p95} ms, max ${Math.max(...latencies)} ms (all: ${latencies.join(', ')})`,
    );
    expect(p95).toBeLessThan(2000);
  }, 120_000);

  it('carries a record made in NocoDB into PostgreSQL', async () => {
    await admin(server, 'POST', `/api/v2/tables/${tableId}/records`, [{ Name: 'Margaret', Score: 4 }]);
    await waitUntil(
      'the NocoDB insert in PostgreSQL',
      async () =>
        (await pg.sql(`SELECT score FROM contacts WHERE name = 'Margaret'`))[0]?.['score'] === '4.00',
      10_000,
    );
  });

  it('holds a delete made in NocoDB for review', async () => {
    const linus = await byName('Linus');
    await admin(server, 'DELETE', `/api/v2/tables/${tableId}/records`, [{ Id: linus!.Id }]);
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
});
