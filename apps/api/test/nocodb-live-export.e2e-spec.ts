/**
 * Live export with NocoDB, end to end as a user drives it: exports created, mapped and triggered over HTTP, the
 * real worker process doing the runs against a scratch PostgreSQL schema and the real NocoDB
 * (tools/test/nocodb). A PostgreSQL table is copied into a table the export creates in a NocoDB base; a later
 * run carries an edit and a delete. Then the other way: that NocoDB table is copied into PostgreSQL.
 */
import {
  admin,
  createBase,
  deleteBase,
  describeNocodb,
  type NocodbServer,
  startNocodb,
  uniqueName,
} from '@lockstep/connector-nocodb/testing';
import { pgDestination, pgSource } from './support/live-export';
import { liveExportWorld, type LiveExportWorld } from './support/live-export-worker';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';

type Row = Record<string, unknown>;

describeNocodb('live export with NocoDB (API and worker process)', () => {
  let server: NocodbServer;
  let baseId: string;
  let baseTitle: string;
  let w: LiveExportWorld;
  let pg: ScratchPg;

  beforeAll(async () => {
    server = await startNocodb();
    baseTitle = uniqueName('warehouse');
    baseId = await createBase(server, baseTitle);
    w = await liveExportWorld({});
    pg = await scratchPg(`
      CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), qty int);
      INSERT INTO items SELECT g, 'item ' || g, (g * 1.25)::numeric(10,2), g % 7 FROM generate_series(1, 25) g;`);
    await w.setClock('2000-01-01T00:00:00Z');
    await w.startWorker();
  }, 320_000);

  afterAll(async () => {
    await w?.close();
    await pg?.drop();
    if (baseId) await deleteBase(server, baseId);
  });

  const nocodb = () => ({ connector: 'nocodb', auth: { baseUrl: server.url, apiToken: server.token } });
  const exported = async () => {
    const tables = await admin<{ list: { id: string; title: string }[] }>(
      server,
      'GET',
      `/api/v2/meta/bases/${baseId}/tables`,
    );
    const table = tables.list.find((candidate) => candidate.title === 'Items')!;
    const rows = (
      await admin<{ list: Row[] }>(server, 'GET', `/api/v2/tables/${table.id}/records?limit=1000`)
    ).list;
    return {
      table,
      rows: rows.sort((a, b) => Number(a['lockstep_source_id']) - Number(b['lockstep_source_id'])),
    };
  };
  const runOnce = async (id: string) => {
    const run = await w.finished((await w.trigger(id)).id, 120_000);
    expect([run.state, run.error]).toEqual(['succeeded', null]);
    return run;
  };

  it('copies a PostgreSQL table into a NocoDB base, then an edit and a delete', async () => {
    const { id } = await w.createExport({
      name: 'PG to NocoDB',
      source: pgSource(pg),
      destination: { ...nocodb(), location: baseTitle },
      tables: [
        {
          source_table: 'items',
          destination_table: 'Items',
          fields: [
            { source_field: 'id', primary: true },
            { source_field: 'name' },
            { source_field: 'price' },
            { source_field: 'qty' },
          ],
        },
      ],
    });
    const first = await runOnce(id);
    expect(first.rows_written).toBe(25);
    const { table, rows } = await exported();
    expect(rows).toHaveLength(25);
    expect(rows[1]).toMatchObject({ lockstep_source_id: '2', id: 2, name: 'item 2', price: 2.5, qty: 2 });
    const meta = await admin<{ columns: { title: string; uidt: string }[] }>(
      server,
      'GET',
      `/api/v2/meta/tables/${table.id}`,
    );
    expect(Object.fromEntries(meta.columns.map((column) => [column.title, column.uidt]))).toMatchObject({
      lockstep_source_id: 'SingleLineText',
      price: 'Decimal',
      name: 'SingleLineText',
      qty: 'Number',
    });

    await pg.sql(`UPDATE items SET name = 'renamed' WHERE id = 3; DELETE FROM items WHERE id = 4`);
    const second = await runOnce(id);
    expect([second.rows_written, second.rows_removed]).toEqual([1, 1]);
    const after = (await exported()).rows;
    expect(after).toHaveLength(24);
    expect(after.find((row) => row['lockstep_source_id'] === '3')).toMatchObject({ name: 'renamed' });
    expect(after.some((row) => row['lockstep_source_id'] === '4')).toBe(false);
  }, 300_000);

  it('copies that NocoDB table into PostgreSQL', async () => {
    const { id } = await w.createExport({
      name: 'NocoDB to PG',
      source: { ...nocodb(), base: baseTitle },
      destination: pgDestination(pg),
      tables: [
        {
          source_table: 'Items',
          destination_table: 'from_nocodb',
          fields: [{ source_field: 'name' }, { source_field: 'qty' }],
        },
      ],
    });
    const run = await runOnce(id);
    expect(run.rows_written).toBe(24);
    const copied = await pg.sql(`SELECT name, qty FROM ${pg.schema}.from_nocodb ORDER BY name`);
    expect(copied).toHaveLength(24);
    expect(copied.find((row) => row['name'] === 'renamed')).toBeDefined();
  }, 300_000);
});
