/**
 * Live export with Airtable, end to end as a user drives it: exports created, mapped, saved and triggered over
 * HTTP, the REAL worker process doing the runs against a scratch PostgreSQL schema and the Airtable simulator
 * that `AIRTABLE_API_URL` points at (for the API and the worker). A PostgreSQL table is copied into a table the
 * export creates in an Airtable base; a later run carries an edit and a delete. Then the other way: that
 * Airtable table is copied into PostgreSQL. Run `npm run -s build` first.
 */
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { pgDestination, pgSource } from './support/live-export';
import { liveExportWorld, type LiveExportWorld } from './support/live-export-worker';
import { scratchPg, type ScratchPg } from './support/scratch-dbs';

const TOKEN = 'patEXPORTTEST.0123456789';
type SimBase = ReturnType<AirtableSimulator['addBase']>;

describe('live export with Airtable (API and worker process)', () => {
  let simulator: AirtableSimulator;
  let base: SimBase;
  let w: LiveExportWorld;
  let pg: ScratchPg;

  beforeAll(async () => {
    simulator = await AirtableSimulator.start();
    simulator.addToken(TOKEN);
    base = simulator.addBase('Warehouse');
    w = await liveExportWorld({ AIRTABLE_API_URL: simulator.url });
    pg = await scratchPg(`
      CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), qty int);
      INSERT INTO items SELECT g, 'item ' || g, (g * 1.25)::numeric(10,2), g % 7 FROM generate_series(1, 25) g;
      CREATE TABLE copied (id serial PRIMARY KEY);`);
    await w.setClock('2000-01-01T00:00:00Z');
    await w.startWorker();
  }, 60_000);

  afterAll(async () => {
    await w?.close();
    await pg?.drop();
    await simulator?.close();
  });

  const airtable = { connector: 'airtable', auth: { apiKey: TOKEN } };
  /** The export's records in the Airtable table, by field name, ordered by source id. */
  const exported = () => {
    const table = base.tables.find((candidate) => candidate.name === 'Items')!;
    const name = (id: string) => table.fields.find((field) => field.id === id)!.name;
    return [...table.records.values()]
      .map((record) =>
        Object.fromEntries(Object.entries(record.fields).map(([id, value]) => [name(id), value])),
      )
      .sort((a, b) => Number(a['lockstep_source_id']) - Number(b['lockstep_source_id']));
  };
  const runOnce = async (id: string) => {
    const run = await w.finished((await w.trigger(id)).id, 60_000);
    expect([run.state, run.error]).toEqual(['succeeded', null]);
    return run;
  };

  it('copies a PostgreSQL table into an Airtable base, then an edit and a delete', async () => {
    const { id } = await w.createExport({
      name: 'PG to Airtable',
      source: pgSource(pg),
      destination: { ...airtable, location: 'Warehouse' },
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
    const rows = exported();
    expect(rows).toHaveLength(25);
    expect(rows[1]).toMatchObject({ lockstep_source_id: '2', id: 2, name: 'item 2', price: 2.5, qty: 2 });
    const types = Object.fromEntries(
      base.tables.find((table) => table.name === 'Items')!.fields.map((field) => [field.name, field.type]),
    );
    expect(types).toMatchObject({
      lockstep_source_id: 'singleLineText',
      price: 'number',
      name: 'singleLineText',
    });

    await pg.sql(`UPDATE items SET name = 'renamed' WHERE id = 3; DELETE FROM items WHERE id = 4`);
    const second = await runOnce(id);
    expect([second.rows_written, second.rows_removed]).toEqual([1, 1]);
    const after = exported();
    expect(after).toHaveLength(24);
    expect(after.find((row) => row['lockstep_source_id'] === '3')).toMatchObject({ name: 'renamed' });
    expect(after.some((row) => row['lockstep_source_id'] === '4')).toBe(false);
    expect(simulator.stats.rateLimited).toBe(0);
  }, 120_000);

  it('copies that Airtable table into PostgreSQL', async () => {
    const { id } = await w.createExport({
      name: 'Airtable to PG',
      source: { ...airtable, base: 'Warehouse' },
      destination: pgDestination(pg),
      tables: [
        {
          source_table: 'Items',
          destination_table: 'from_airtable',
          fields: [{ source_field: 'name' }, { source_field: 'qty' }],
        },
      ],
    });
    const run = await runOnce(id);
    expect(run.rows_written).toBe(24);
    const copied = await pg.sql(
      `SELECT name, qty FROM ${pg.schema}.from_airtable WHERE lockstep_source_id LIKE 'rec%' ORDER BY name`,
    );
    expect(copied).toHaveLength(24);
    expect(copied.find((row) => row['name'] === 'renamed')).toBeDefined();
  }, 120_000);
});
