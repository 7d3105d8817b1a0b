/**
 * The opt-in live run against the real Airtable Web API (design note "Testing without the internet", item 3):
 * with `LOCKSTEP_LIVE_AIRTABLE_TOKEN` and `LOCKSTEP_LIVE_AIRTABLE_BASE` (a scratch base, by id or name) set, the
 * SDK's contract suite runs against that base as it runs against the simulator (contract.spec.ts), then a
 * create / read / update / delete round trip in a table of its own. Without them it is skipped and says why;
 * with only one of them it fails. Airtable's Web API cannot delete a table: a run renames the `ls_...` tables a
 * previous run left to `zz_lockstep_old_...` and prints them, for a person to delete.
 *
 *   LOCKSTEP_LIVE_AIRTABLE_TOKEN=pat... LOCKSTEP_LIVE_AIRTABLE_BASE=app... \
 *     npx jest libs/connectors/airtable/src/live.spec.ts --runInBand
 */
import { randomUUID } from 'node:crypto';
import type { ConnectContext, Connection, ConnectorDeclaration } from '@lockstep/connectors-core';
import { runConnectorContractSuite } from '@lockstep/connectors-core/testing';
import { LocalCoordination } from '@lockstep/connectors-http';
import { airtableConnector } from './declaration';
import { byNames } from '@lockstep/connectors-core/testing';
import { AIRTABLE_CONTRACT_OPTIONS } from './test/contract-options';
import { CREATED, FIXTURE_COLUMNS } from './test/contract-fixture';
import { LIVE_BASE_VAR, LIVE_TOKEN_VAR, LiveAirtable, liveAirtableConfig } from './test/live';

describe('the live run configuration', () => {
  it('skips without the variables, runs with both, refuses one alone', () => {
    expect(liveAirtableConfig({})).toMatchObject({ run: false });
    expect(liveAirtableConfig({ [LIVE_TOKEN_VAR]: 'pat1', [LIVE_BASE_VAR]: 'appX' })).toEqual({
      run: true,
      token: 'pat1',
      base: 'appX',
      apiUrl: 'https://api.airtable.com',
    });
    expect(() => liveAirtableConfig({ [LIVE_TOKEN_VAR]: 'pat1' })).toThrow(LIVE_BASE_VAR);
    expect(() => liveAirtableConfig({ [LIVE_BASE_VAR]: 'appX' })).toThrow(LIVE_TOKEN_VAR);
  });
});

const config = liveAirtableConfig(process.env);
if (!config.run) {
  console.log(`Skipped: ${config.reason}`);
  describe.skip(`airtable (live): ${config.reason}`, () => {
    it('runs the contract suite and a round trip against the real API', () => undefined);
  });
} else {
  const loopback = /^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(`${config.apiUrl}/`);
  const context: ConnectContext = {
    egress: { allowPrivate: loopback, allowLoopback: loopback },
    settings: { AIRTABLE_API_URL: config.apiUrl },
    shared: new LocalCoordination(),
  };
  const live = new LiveAirtable(config, context);
  const declaration: ConnectorDeclaration = {
    ...airtableConnector,
    connect: async (credentials, base, ctx) =>
      byNames(await airtableConnector.connect(credentials, base, ctx)),
  };
  let baseId = '';
  const wrongToken = 'patWRONGTOKEN.000000';
  const created = new Set(CREATED.map((field) => field.name));

  runConnectorContractSuite({
    name: 'airtable (live)',
    declaration,
    context,
    setup: async () => {
      baseId = await live.baseId();
      const renamed = await live.renameLeftovers(baseId);
      if (renamed.length > 0) console.log(`Renamed tables of an earlier run: ${renamed.join(', ')}`);
      return baseId;
    },
    teardown: async () => {
      const left = (await live.tables(baseId)).filter((table) => table.name.startsWith('ls_'));
      console.log(`The live run left these tables (delete them in Airtable): ${left.map((t) => t.name)}`);
    },
    goodCredentials: () => ({ apiKey: config.token }),
    badCredentials: () => ({ apiKey: wrongToken }),
    secrets: () => [config.token, wrongToken],
    outside: live.outside(() => baseId),
    // Computed fields cannot be created through the Web API: the live fixture has the writable types.
    fixture: {
      create: (name) => live.createTable(baseId, name, CREATED),
      columns: FIXTURE_COLUMNS.filter((column) => created.has(column.name)),
    },
    createPlainTable: (name, options) =>
      live.createTable(baseId, name, [
        ...(options.primaryKey ? [{ name: 'id', type: 'number', options: { precision: 0 } }] : []),
        { name: 'title', type: 'singleLineText' },
        { name: 'amount', type: 'number', options: { precision: 0 } },
      ]),
    changeTimeoutMs: 30_000,
    ...AIRTABLE_CONTRACT_OPTIONS,
  });

  describe('airtable (live): a round trip in a table of its own', () => {
    let connection: Connection;
    let table = '';
    const id = (name: string) => async () =>
      (await connection.listFields(table)).find((field) => field.name === name)!.remoteId;

    beforeAll(async () => {
      connection = await airtableConnector.connect({ apiKey: config.token }, config.base, context);
      await connection.checkCredentials();
    });

    afterAll(async () => {
      if (table) await connection.unprepareTable(table).catch(() => undefined);
      await connection?.close();
    });

    it('creates, reads, updates and deletes records', async () => {
      const info = await connection.createTable(`ls_live_crud_${Date.now()}`, [
        { name: 'title', typeClass: 'text' },
        { name: 'amount', typeClass: 'integer' },
      ]);
      table = info.remoteId;
      await connection.prepareTable(table, { changeCapture: true, serviceIdColumn: true });
      const [title, amount] = [await id('title')(), await id('amount')()];
      const results = await connection.createRecords(table, [
        { serviceId: randomUUID(), values: { [title]: 'one', [amount]: 1 } },
        { serviceId: randomUUID(), values: { [title]: 'two', [amount]: 2 } },
      ]);
      const ids = results.map((result) => (result.ok ? result.remoteId : `failed: ${result.error.message}`));
      expect(ids.every((remoteId) => remoteId.startsWith('rec'))).toBe(true);
      const read = await connection.readByIds(table, ids);
      expect(read.map((record) => record.values[title]).sort()).toEqual(['one', 'two']);
      const updated = await connection.updateRecords(table, [
        { remoteId: ids[0]!, values: { [amount]: 10 }, expected: { [amount]: 1 } },
      ]);
      expect(updated[0]).toMatchObject({ ok: true });
      expect((await connection.readByIds(table, [ids[0]!]))[0]!.values[amount]).toBe(10);
      expect((await connection.deleteRecords(table, ids)).every((result) => result.ok)).toBe(true);
      expect(await connection.readByIds(table, ids)).toEqual([]);
    }, 120_000);
  });
}
