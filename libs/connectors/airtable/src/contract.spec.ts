/**
 * The SDK's contract suite against the Airtable simulator (`testing/simulator.ts`) with Airtable's own rate
 * limits. Field names stand for field ids in the suite (`test/by-name.ts`). What the suite checks of a
 * database that Airtable does not have is listed in `notApplicable` with the reason, and covered by this
 * package's own specs (connection.spec.ts, change-capture.spec.ts).
 */
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { runConnectorContractSuite } from '@lockstep/connectors-core/testing';
import { LocalCoordination } from '@lockstep/connectors-http';
import { airtableConnector } from './declaration';
import { byNames } from './test/by-name';
import {
  FIXTURE_COLUMNS,
  createFixtureTable,
  createPlainTable,
  outsideWriter,
} from './test/contract-fixture';
import { TOKEN } from './test/kit';
import { AirtableSimulator } from './testing/simulator';
import type { SimBase } from './testing/simulator-model';

let simulator: AirtableSimulator;
let base: SimBase;
const WRONG_TOKEN = 'patWRONGTOKEN.000000';

const declaration: ConnectorDeclaration = {
  ...airtableConnector,
  connect: async (credentials, baseId, context) =>
    byNames(await airtableConnector.connect(credentials, baseId, context)),
};

runConnectorContractSuite({
  name: 'airtable (simulator)',
  declaration,
  context: {
    egress: { allowPrivate: true, allowLoopback: true },
    // Read when a test connects, after `setup` started the simulator.
    settings: {
      get AIRTABLE_API_URL() {
        return simulator.url;
      },
    },
    shared: new LocalCoordination(),
  },
  setup: async () => {
    simulator = await AirtableSimulator.start();
    simulator.addToken(TOKEN);
    base = simulator.addBase('Lockstep contract');
    return base.id;
  },
  teardown: async () => {
    expect(simulator.stats.rateLimited).toBe(0);
    await simulator.close();
  },
  goodCredentials: () => ({ apiKey: TOKEN }),
  badCredentials: () => ({ apiKey: WRONG_TOKEN }),
  secrets: () => [TOKEN, WRONG_TOKEN],
  outside: outsideWriter(() => [simulator, base]),
  fixture: { create: (name) => createFixtureTable(simulator, base, name), columns: FIXTURE_COLUMNS },
  createPlainTable: async (name, options) => createPlainTable(simulator, base, name, options),
  createdClass: {
    float: 'decimal',
    time: 'text',
    datetime: 'timestamp',
    uuid: 'text',
    json: 'text',
    relation: 'text',
  },
  createUnsupported: ['array'],
  createdCases: {
    // Airtable omits an empty text and an empty list: they read back as null.
    text: { samples: ['hello', 'ünïcødé ✓ "quoted" \\ back'] },
    // Airtable's numbers are doubles: integers up to 2^53 are exact.
    integer: { samples: [0, 42, -7, 9007199254740991] },
    float: { samples: ['1.50000000', '-0.25000000'] },
    datetime: { samples: ['2024-02-29T13:45:30Z', '1999-12-31T23:59:59Z'] },
    json: { samples: ['{"a":1,"b":[true,null,"x"]}'] },
    multi_select: { samples: [['red', 'green'], ['blue']] },
  },
  notApplicable: {
    'batch writes':
      'the plain table refuses a 101-character title and a duplicate id; Airtable text has no length limit ' +
      'and no field is unique (connection.spec.ts covers batches with refused, missing and edited records)',
    'prepareTable with serviceIdColumn adds a service id column to a table with a single-column primary key':
      'Airtable records are keyed by their own record ids, never by a field; records that existed before ' +
      'table setup keep an empty Lockstep ID (they are matched, never created, by Lockstep)',
    'createTable types a boolean field and round-trips its values':
      'an Airtable checkbox has no empty value: the null the suite writes reads back as false ' +
      '(types.spec.ts; createField round-trips true and false)',
    'change capture':
      "the suite expects own writes marked or left out; Airtable's webhook payloads cannot tell this " +
      "connection's writes from another API client's, so the engine's shadows recognise them " +
      '(change-capture.spec.ts covers the webhook feed)',
  },
});
