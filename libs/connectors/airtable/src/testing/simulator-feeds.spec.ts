import type { ConnectorError } from '@lockstep/connectors-core';
import type { AirtableSimulator } from './simulator';
import { refused, SIM_TOKEN as TOKEN, useSimulator } from './simulator-kit';
import type { SimBase, SimPayload } from './simulator-model';

const sim = useSimulator({ perBasePerSecond: 1000, perTokenPerSecond: 1000 });
const client = sim.client;
let simulator: AirtableSimulator;
let base: SimBase;

beforeEach(() => {
  ({ simulator, base } = sim);
});

describe('webhooks', () => {
  it('keeps a payload log by cursor, API and outside changes told apart, until it expires', async () => {
    const table = simulator.addTable(base, 'Deals', [{ name: 'Name', type: 'singleLineText' }]);
    const http = client();
    const hooks = `/v0/bases/${base.id}/webhooks`;
    const spec = { options: { filters: { dataTypes: ['tableData'], recordChangeScope: table.id } } };
    const { data: hook } = await http.request<{ id: string; expirationTime: string }>({
      method: 'POST',
      path: hooks,
      json: { specification: spec },
    });
    const outsideId = simulator.outside.insert(base, table.id, { Name: 'by a person' });
    await http.request({
      method: 'PATCH',
      path: `/v0/${base.id}/${table.id}`,
      json: { records: [{ id: outsideId, fields: { Name: 'by Lockstep' } }] },
    });
    simulator.outside.delete(base, table.id, outsideId);
    type Page = { payloads: SimPayload[]; cursor: number; mightHaveMore: boolean };
    const first = await http.get<Page>(`${hooks}/${hook.id}/payloads`, { query: { cursor: 1, limit: 2 } });
    expect([first.payloads.length, first.cursor, first.mightHaveMore]).toEqual([2, 3, true]);
    expect(first.payloads.map((payload) => payload.actionMetadata.source)).toEqual(['client', 'publicApi']);
    expect(first.payloads[0]!.changedTablesById[table.id]!.createdRecordsById![outsideId]).toBeDefined();
    const rest = await http.get<Page>(`${hooks}/${hook.id}/payloads`, { query: { cursor: first.cursor } });
    expect(rest.payloads[0]!.changedTablesById[table.id]!.destroyedRecordIds).toEqual([outsideId]);
    expect([rest.cursor, rest.mightHaveMore]).toEqual([4, false]);
    // Refreshed, it lives 7 days from now; not refreshed for longer, it is gone.
    const listed = await http.get<{ webhooks: { cursorForNextPayload: number }[] }>(hooks);
    expect(listed.webhooks[0]!.cursorForNextPayload).toBe(4);
    simulator.advanceClock(6 * 24 * 3600_000);
    await http.request({ method: 'POST', path: `${hooks}/${hook.id}/refresh` });
    simulator.advanceClock(6 * 24 * 3600_000);
    expect((await http.get<Page>(`${hooks}/${hook.id}/payloads`, { query: { cursor: 4 } })).payloads).toEqual(
      [],
    );
    simulator.advanceClock(2 * 24 * 3600_000);
    expect((await refused(http.get(`${hooks}/${hook.id}/payloads`))).kind).toBe('not_found');
  });

  it('deletes a webhook', async () => {
    const http = client();
    const hooks = `/v0/bases/${base.id}/webhooks`;
    const { data: hook } = await http.request<{ id: string }>({
      method: 'POST',
      path: hooks,
      json: { specification: { options: { filters: { dataTypes: ['tableData'] } } } },
    });
    expect((await http.request({ method: 'DELETE', path: `${hooks}/${hook.id}` })).status).toBe(204);
    expect(await http.get(hooks)).toEqual({ webhooks: [] });
  });
});

describe('rate limits', () => {
  beforeEach(async () => {
    await sim.restart({ perBasePerSecond: 5, penaltyMs: 800 });
    ({ simulator, base } = sim);
    simulator.addTable(base, 'Deals', [{ name: 'Name', type: 'singleLineText' }]);
  });

  it('answers 429 past 5 requests a second on a base, and to all of it during the penalty', async () => {
    const http = client();
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        http.get(`/v0/${base.id}/Deals`).then(
          () => 200,
          (e: ConnectorError) => e.appCode,
        ),
      ),
    );
    expect(results.filter((result) => result === 200)).toHaveLength(5);
    expect(results.filter((result) => result === 'RATE_LIMIT_REACHED')).toHaveLength(3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await refused(http.get(`/v0/${base.id}/Deals`))).kind).toBe('rate_limited');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await http.get(`/v0/${base.id}/Deals`)).toEqual({ records: [] });
  });

  it('a client within the budget, with the penalty as its rule, never meets the limit', async () => {
    // A little under 5/s: requests evenly spaced at exactly 5/s can still meet in one second on the wire.
    const rule = { key: `airtable:base:${base.id}`, ratePerSecond: 4.5, burst: 1, penaltyMs: 800 };
    const http = client(TOKEN, { rules: [rule] });
    await Promise.all(Array.from({ length: 12 }, () => http.get(`/v0/${base.id}/Deals`)));
    expect(simulator.stats.rateLimited).toBe(0);
    expect(http.stats.rateLimited).toBe(0);
  });
});
