/**
 * Requests an initial sync does not spend (issue 26's speed goal: every request of the base's 5/s is one
 * write fewer): the schema is not read again by time while writes stream (but is when a write names a field
 * it lacks, or Airtable refuses one for a field), and the checkpoint after creating a webhook lists none.
 */
import type { AirtableApi } from './db';
import { SchemaCache } from './schema';
import { useConnector } from './test/kit';

const at = useConnector();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => expect(at.simulator.stats.rateLimited).toBe(0));

function countingApi(): { api: AirtableApi; reads: () => number } {
  let reads = 0;
  const api = {
    get: async () => {
      reads += 1;
      return { tables: [{ id: 'tblA', name: 'A', primaryFieldId: 'fldA', fields: [], views: [] }] };
    },
  } as unknown as AirtableApi;
  return { api, reads: () => reads };
}

describe('the schema cache while writes stream', () => {
  it('is not read again by time during a stream of writes, and is after it', async () => {
    const { api, reads } = countingApi();
    const schema = new SchemaCache(api, 'appX', 20);
    await schema.all();
    for (let write = 0; write < 3; write += 1)
      await schema.writing(async () => {
        await sleep(30);
        await schema.all();
        return [{ ok: true }];
      });
    expect(reads()).toBe(1);
    await sleep(1100);
    await schema.all();
    expect(reads()).toBe(2);
  });

  it('is read again after a write Airtable refused for a field', async () => {
    const { api, reads } = countingApi();
    const schema = new SchemaCache(api, 'appX');
    await schema.writing(async () => {
      await schema.all();
      return [{ ok: false, error: { appCode: 'UNKNOWN_FIELD_NAME' } }];
    });
    await schema.writing(async () => {
      await schema.all();
      return [{ ok: true }];
    });
    expect(reads()).toBe(2);
  });
});

describe('the connection', () => {
  it('writes a field created since its schema was read (reading it again)', async () => {
    const table = at.simulator.addTable(at.base, 'Savings', [{ name: 'Name', type: 'singleLineText' }]);
    const connection = await at.connect();
    const name = table.fields[0]!.id;
    await connection.createRecords(table.id, [{ serviceId: 's1', values: { [name]: 'one' } }]);
    const other = await at.connect();
    const added = await other.createField(table.id, { name: 'Note', typeClass: 'text' });
    const [result] = await connection.createRecords(table.id, [
      { serviceId: 's2', values: { [name]: 'two', [added.remoteId]: 'note' } },
    ]);
    expect(result).toMatchObject({ ok: true });
    expect(result!.ok && result!.record?.values[added.remoteId]).toBe('note');
  });

  it('takes the checkpoint after creating the webhook without listing webhooks again', async () => {
    const table = at.simulator.addTable(at.base, 'Hooked', [{ name: 'Name', type: 'singleLineText' }]);
    const connection = await at.connect();
    at.simulator.trace = [];
    await connection.prepareTable(table.id, { changeCapture: true, serviceIdColumn: true });
    const checkpoint = await connection.currentCheckpoint(table.id);
    const trace = at.simulator.trace.map(({ method, path }) => `${method} ${path.split('/').at(-1)}`);
    at.simulator.trace = null;
    expect(trace.filter((request) => request === 'GET webhooks')).toHaveLength(1);
    expect(trace.at(-1)).toBe('POST webhooks');
    // The same checkpoint a list of webhooks gives (the next probe lists them).
    await expect(connection.currentCheckpoint(table.id)).resolves.toBe(checkpoint);
  });

  it('takes the checkpoint after finding the webhook in place from the same list of webhooks', async () => {
    const table = at.simulator.addTable(at.base, 'Hooked before', [{ name: 'Name', type: 'singleLineText' }]);
    const options = { changeCapture: true, serviceIdColumn: true };
    await (await at.connect()).prepareTable(table.id, options);
    const connection = await at.connect();
    at.simulator.trace = [];
    await connection.prepareTable(table.id, options);
    await connection.currentCheckpoint(table.id);
    const trace = at.simulator.trace.map(({ method, path }) => `${method} ${path.split('/').at(-1)}`);
    at.simulator.trace = null;
    expect(trace.filter((request) => request.endsWith(' webhooks'))).toEqual(['GET webhooks']);
    expect(at.base.webhooks.size).toBe(2);
  });
});
