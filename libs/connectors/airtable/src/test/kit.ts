/**
 * What the connector's specs share: a simulator of the Airtable Web API (`../testing/simulator.ts`) per spec
 * file, with Airtable's own limits (5 requests/s per base, 50 per token) unless a spec asks for others, a
 * token, and connections to it through `AIRTABLE_API_URL` as the service passes it (`ConnectContext.settings`).
 */
import type { ConnectContext, Connection } from '@lockstep/connectors-core';
import { LocalCoordination } from '@lockstep/connectors-http';
import { airtableConnector } from '../declaration';
import { AirtableSimulator, type SimulatorOptions } from '../testing/simulator';
import type { SimBase } from '../testing/simulator-model';

export const TOKEN = 'patLOCKSTEPTEST.0123456789abcdef';

export interface ConnectorFixture {
  simulator: AirtableSimulator;
  base: SimBase;
  context: ConnectContext;
  connect(base?: string | null, token?: string, extra?: Partial<ConnectContext>): Promise<Connection>;
}

/** Starts one simulator for the spec file (beforeAll) with `TOKEN` and a base "Sales"; closes it afterwards. */
export function useConnector(options: SimulatorOptions = {}): ConnectorFixture {
  const opened: Connection[] = [];
  const fixture: ConnectorFixture = {
    simulator: null as unknown as AirtableSimulator,
    base: null as unknown as SimBase,
    context: null as unknown as ConnectContext,
    connect: async (base = fixture.base.id, token = TOKEN, extra = {}) => {
      const connection = await airtableConnector.connect({ apiKey: token }, base, {
        ...fixture.context,
        ...extra,
      });
      opened.push(connection);
      return connection;
    },
  };
  beforeAll(async () => {
    fixture.simulator = await AirtableSimulator.start(options);
    fixture.simulator.addToken(TOKEN);
    fixture.base = fixture.simulator.addBase('Sales');
    fixture.context = {
      egress: { allowPrivate: true, allowLoopback: true },
      settings: { AIRTABLE_API_URL: fixture.simulator.url },
      shared: new LocalCoordination(),
    };
  });
  afterAll(async () => {
    await Promise.all(opened.map((connection) => connection.close()));
    await fixture.simulator.close();
  });
  return fixture;
}

/** A table with one field of every type the simulator creates (and the computed ones it lists). */
export function addEveryTypeTable(simulator: AirtableSimulator, base: SimBase, name: string) {
  const people = simulator.addTable(base, `${name} people`, [{ name: 'Name', type: 'singleLineText' }]);
  const table = simulator.addTable(base, name, [
    { name: 'Name', type: 'singleLineText' },
    { name: 'Notes', type: 'multilineText' },
    { name: 'Rich', type: 'richText' },
    { name: 'Email', type: 'email' },
    { name: 'Site', type: 'url' },
    { name: 'Phone', type: 'phoneNumber' },
    { name: 'Count', type: 'number', options: { precision: 0 } },
    { name: 'Price', type: 'number', options: { precision: 2 } },
    { name: 'Share', type: 'percent', options: { precision: 1 } },
    { name: 'Cost', type: 'currency', options: { precision: 2, symbol: '$' } },
    { name: 'Stars', type: 'rating', options: { max: 5, icon: 'star', color: 'yellowBright' } },
    { name: 'Spent', type: 'duration', options: { durationFormat: 'h:mm:ss' } },
    { name: 'Done', type: 'checkbox', options: { icon: 'check', color: 'greenBright' } },
    { name: 'Due', type: 'date', options: { dateFormat: { name: 'iso' } } },
    {
      name: 'At',
      type: 'dateTime',
      options: { dateFormat: { name: 'iso' }, timeFormat: { name: '24hour' }, timeZone: 'utc' },
    },
    { name: 'Stage', type: 'singleSelect', options: { choices: [{ name: 'new' }, { name: 'won' }] } },
    { name: 'Tags', type: 'multipleSelects', options: { choices: [{ name: 'a' }, { name: 'b' }] } },
    { name: 'Owner', type: 'singleCollaborator' },
    { name: 'Team', type: 'multipleCollaborators' },
    { name: 'People', type: 'multipleRecordLinks', options: { linkedTableId: people.id } },
    { name: 'Files', type: 'multipleAttachments' },
    { name: 'Code', type: 'barcode' },
  ]);
  // Computed types cannot be created through the API; they exist in bases people made.
  const computed = [
    ['Total', 'formula', { result: { type: 'number', options: { precision: 2 } } }],
    ['Sum', 'rollup', { result: { type: 'number', options: { precision: 0 } } }],
    ['Links', 'count', undefined],
    ['Names', 'multipleLookupValues', undefined],
    ['Created', 'createdTime', undefined],
    ['Modified', 'lastModifiedTime', undefined],
    ['Creator', 'createdBy', undefined],
    ['Editor', 'lastModifiedBy', undefined],
    ['Number', 'autoNumber', undefined],
    ['Open', 'button', undefined],
    ['Summary', 'aiText', undefined],
  ] as const;
  for (const [fieldName, type, options] of computed) {
    table.fields.push({
      id: `fld${fieldName.padEnd(14, 'x')}`,
      name: fieldName,
      type,
      ...(options ? { options } : {}),
    });
  }
  return { table, people };
}
