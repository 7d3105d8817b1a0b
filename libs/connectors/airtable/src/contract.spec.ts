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
import { AIRTABLE_CONTRACT_OPTIONS } from './test/contract-options';
import { byNames } from '@lockstep/connectors-core/testing';
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
  ...AIRTABLE_CONTRACT_OPTIONS,
});
