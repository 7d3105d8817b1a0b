/**
 * The webhook change feed against the simulator: outside changes seen (one per record, its latest state),
 * own writes seen too (`own` false: the engine's shadows recognise them), `limit` kept even inside one
 * payload, the webhook refreshed before it expires, installed again after it expired while nobody read it,
 * and removed at teardown.
 */
import { randomUUID } from 'node:crypto';
import { readAllChanges } from '@lockstep/connectors-core/testing';
import { connectAirtable } from './connect';
import { TOKEN, useConnector } from './test/kit';
import { WEBHOOK_LIFETIME_MS } from './testing/simulator-webhooks';

const at = useConnector();
const DAY = 24 * 3600_000;

afterEach(() => expect(at.simulator.stats.rateLimited).toBe(0));

/** A connection judging webhook expiry by the simulator's clock (which `advanceClock` moves). */
function connect() {
  return connectAirtable({ apiKey: TOKEN }, at.base.id, at.context, { now: () => at.simulator.now() });
}

function table(name: string) {
  return at.simulator.addTable(at.base, name, [
    { name: 'Title', type: 'singleLineText' },
    { name: 'Amount', type: 'number', options: { precision: 0 } },
  ]);
}

describe('change capture by webhook payloads', () => {
  it('sees outside inserts, updates and deletes once per record, and its own writes', async () => {
    const sim = table('Feed');
    const [title] = sim.fields.map((field) => field.id);
    const connection = await connect();
    expect(await connection.prepareTable(sim.id, { changeCapture: true })).toMatchObject({
      changeCapture: true,
    });
    expect(at.base.webhooks.size).toBe(1);
    const since = await connection.currentCheckpoint(sim.id);
    const one = at.simulator.outside.insert(at.base, sim.id, { Title: 'one' });
    const two = at.simulator.outside.insert(at.base, sim.id, { Title: 'two' });
    at.simulator.outside.update(at.base, sim.id, one, { Title: 'uno' });
    at.simulator.outside.delete(at.base, sim.id, two);
    const [own] = await connection.createRecords(sim.id, [
      { serviceId: randomUUID(), values: { [title!]: 'own' } },
    ]);
    const { changes, checkpoint } = await readAllChanges(connection, sim.id, since, {
      ignoreOwnWrites: true,
    });
    expect(changes.map((change) => [change.kind, change.remoteId])).toEqual([
      ['upsert', one],
      ['delete', two],
      ['upsert', own!.ok ? own!.remoteId : ''],
    ]);
    expect(changes[0]).toMatchObject({ own: false, record: { values: { [title!]: 'uno' } } });
    for (const change of changes) expect(change.at).toMatch(/Z$/);
    expect(await connection.readChanges(sim.id, checkpoint, { limit: 10 })).toMatchObject({
      changes: [],
      hasMore: false,
    });
  });

  it('keeps the limit, even inside one payload, and loses nothing', async () => {
    const sim = table('Bulk');
    const connection = await connect();
    await connection.prepareTable(sim.id, { changeCapture: true });
    const since = await connection.currentCheckpoint(sim.id);
    const rows = Array.from({ length: 10 }, (_, n) => ({
      serviceId: randomUUID(),
      values: { Title: `bulk ${n}` },
    }));
    const written = await connection.createRecords(sim.id, rows); // one payload of 10 records
    for (let n = 0; n < 3; n += 1) at.simulator.outside.insert(at.base, sim.id, { Title: `single ${n}` });
    const result = await readAllChanges(connection, sim.id, since, { limit: 3 });
    expect(result.batches).toBeGreaterThanOrEqual(5);
    expect(result.changes).toHaveLength(13);
    expect(new Set(result.changes.map((change) => change.remoteId))).toEqual(
      new Set([...written.map((w) => (w.ok ? w.remoteId : '')), ...[...sim.records.keys()].slice(10)]),
    );
  });

  it('refreshes the webhook before it expires', async () => {
    const sim = table('Refreshed');
    const connection = await connect();
    await connection.prepareTable(sim.id, { changeCapture: true });
    const since = await connection.currentCheckpoint(sim.id);
    const hook = [...at.base.webhooks.values()].find(
      (w) => w.specification.options.filters.recordChangeScope === sim.id,
    )!;
    const firstExpiry = hook.expiresAt;
    at.simulator.advanceClock(5 * DAY);
    await connection.readChanges(sim.id, since, { limit: 10 });
    expect(hook.expiresAt).toBeGreaterThan(firstExpiry + 4 * DAY);
    at.simulator.advanceClock(5 * DAY);
    const id = at.simulator.outside.insert(at.base, sim.id, { Title: 'ten days on' });
    const { changes } = await readAllChanges(connection, sim.id, since);
    expect(changes.map((change) => change.remoteId)).toEqual([id]);
  });

  it('installs the webhook again when it expired while nobody read it; the records are all still readable', async () => {
    const sim = table('Expired');
    const connection = await connect();
    await connection.prepareTable(sim.id, { changeCapture: true });
    const since = await connection.currentCheckpoint(sim.id);
    at.simulator.advanceClock(WEBHOOK_LIFETIME_MS + DAY);
    const missed = at.simulator.outside.insert(at.base, sim.id, { Title: 'while down' });
    const first = await connection.readChanges(sim.id, since, { limit: 10 });
    // The payloads of the lost webhook are gone: no change is reported, and the engine's full scan reads it.
    expect(first.changes).toEqual([]);
    expect(JSON.parse(first.checkpoint).w).not.toBe(JSON.parse(since).w);
    expect((await connection.readByIds(sim.id, [missed])).map((record) => record.remoteId)).toEqual([missed]);
    const after = at.simulator.outside.insert(at.base, sim.id, { Title: 'after' });
    const { changes } = await readAllChanges(connection, sim.id, first.checkpoint);
    expect(changes.map((change) => change.remoteId)).toEqual([after]);
  });

  it('reads changes through a view: a record outside it is reported deleted', async () => {
    const sim = table('Viewed feed');
    const [title] = sim.fields.map((field) => field.id);
    sim.views.push({
      id: 'viwKEEPONLY00000',
      name: 'Kept',
      type: 'grid',
      filter: (record) => String(record.fields[title!]).startsWith('keep'),
    });
    const connection = await connect();
    await connection.prepareTable(sim.id, { changeCapture: true });
    const since = await connection.currentCheckpoint(sim.id);
    const kept = at.simulator.outside.insert(at.base, sim.id, { Title: 'keep me' });
    const other = at.simulator.outside.insert(at.base, sim.id, { Title: 'other' });
    const batch = await connection.readChanges(sim.id, since, { limit: 10, view: 'viwKEEPONLY00000' });
    expect(batch.changes.map((change) => [change.kind, change.remoteId])).toEqual([
      ['upsert', kept],
      ['delete', other],
    ]);
    // Leaving the view reads as a delete; without the view it is an update.
    at.simulator.outside.update(at.base, sim.id, kept, { Title: 'left the view' });
    const left = await connection.readChanges(sim.id, batch.checkpoint, {
      limit: 10,
      view: 'viwKEEPONLY00000',
    });
    expect(left.changes.map((change) => [change.kind, change.remoteId])).toEqual([['delete', kept]]);
    const whole = await connection.readChanges(sim.id, batch.checkpoint, { limit: 10 });
    expect(whole.changes.map((change) => [change.kind, change.remoteId])).toEqual([['upsert', kept]]);
  });

  it('removes the webhook at teardown and keeps the data, idempotently', async () => {
    const sim = table('Torn down');
    const connection = await connect();
    await connection.prepareTable(sim.id, { changeCapture: true });
    const id = at.simulator.outside.insert(at.base, sim.id, { Title: 'kept' });
    const count = at.base.webhooks.size;
    await connection.unprepareTable(sim.id);
    await connection.unprepareTable(sim.id);
    expect(at.base.webhooks.size).toBe(count - 1);
    const since = await connection.currentCheckpoint(sim.id);
    expect(await connection.readChanges(sim.id, since, { limit: 10 })).toMatchObject({ changes: [] });
    expect(await connection.readByIds(sim.id, [id])).toHaveLength(1);
  });
});
