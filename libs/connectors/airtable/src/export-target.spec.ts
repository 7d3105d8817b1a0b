/**
 * The live export destination (`export-target.ts`) against the Airtable simulator: provisioning (idempotent,
 * adding missing fields), inspecting, hashes, upserts merged on the source id (a batch sent twice writes each
 * record once), deletes that touch only the export's records, and an aborted batch.
 */
import { ExportAbortedError, type LiveExportTarget } from '@lockstep/connectors-core';
import { useConnector } from './test/kit';

const at = useConnector();

afterEach(() => expect(at.simulator.stats.rateLimited).toBe(0));

const spec = {
  name: 'Export',
  columns: [
    { name: 'title', typeClass: 'text' as const, required: false, primary: false },
    { name: 'amount', typeClass: 'integer' as const, required: false, primary: false },
  ],
};
const row = (id: number, title: string) => ({
  id: String(id),
  hash: `h${id}${title}`,
  values: { title, amount: id },
});

async function target(): Promise<LiveExportTarget> {
  return (await at.connect()).liveExport!;
}

describe('Airtable as a live export destination', () => {
  it('provisions the table once, with the two hidden fields, and adds a missing field later', async () => {
    const exports = await target();
    const first = await exports.provisionExportTable(spec);
    expect(first).toMatchObject({
      created: true,
      table: { idColumn: 'ok', hashColumn: 'ok', writable: true },
    });
    expect(first.table.columns.map((column) => [column.name, column.typeClass])).toEqual([
      ['title', 'text'],
      ['amount', 'integer'],
    ]);
    const again = await exports.provisionExportTable({
      ...spec,
      columns: [...spec.columns, { name: 'note', typeClass: 'text', required: false, primary: false }],
    });
    expect(again).toMatchObject({ created: false, addedColumns: ['note'] });
    expect(await exports.inspectExportTable('No such table')).toBeNull();
  });

  it('upserts by source id, reads the hashes back, and deletes only its own records', async () => {
    const exports = await target();
    const batch = { columns: ['title', 'amount'], upserts: [row(1, 'a'), row(2, 'b')], deletes: [] };
    await exports.writeExportBatch('Export', batch);
    await exports.writeExportBatch('Export', batch);
    await exports.writeExportBatch('Export', { columns: ['title'], upserts: [row(2, 'B')], deletes: [] });
    at.simulator.outside.insert(at.base, 'Export', { title: 'someone else' });
    const hashes = new Map<string, string | null>();
    expect(await exports.scanExportHashes!('Export', (id, hash) => hashes.set(id, hash))).toBe(2);
    expect(Object.fromEntries(hashes)).toEqual({ '1': 'h1a', '2': 'h2B' });
    const result = await exports.writeExportBatch('Export', {
      columns: [],
      upserts: [],
      deletes: ['1', '9'],
    });
    expect(result).toEqual({ upserted: 0, deleted: 1 });
    const table = at.base.tables.find((candidate) => candidate.name === 'Export')!;
    expect(table.records.size).toBe(2);
    const page = await exports.readExportHashes('Export', { limit: 1 });
    expect(page.rows).toHaveLength(1);
  });

  it('stops an aborted batch', async () => {
    const exports = await target();
    const controller = new AbortController();
    controller.abort();
    await expect(
      exports.writeExportBatch(
        'Export',
        { columns: ['title'], upserts: [row(5, 'e')], deletes: [] },
        { signal: controller.signal },
      ),
    ).rejects.toBeInstanceOf(ExportAbortedError);
  });
});
