/**
 * The SDK's contract suite against a real NocoDB (tools/test/nocodb: one server per test run, a base of its own
 * for this file). Field names stand for field ids in the suite (`test/by-name.ts`). What the suite checks of a
 * database that NocoDB does not have is listed in `notApplicable` with the reason, and covered by this
 * package's own specs (nocodb.spec.ts, change-capture.spec.ts).
 */
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { runConnectorContractSuite } from '@lockstep/connectors-core/testing';
import { LocalCoordination } from '@lockstep/connectors-http';
import { nocodbConnector } from './declaration';
import { byNames } from '@lockstep/connectors-core/testing';
import {
  createFixtureTable,
  createPlainTable,
  FIXTURE_COLUMNS,
  outsideWriter,
} from './test/contract-fixture';
import { NOCODB_CONTRACT_OPTIONS } from './test/contract-options';
import {
  createBase,
  deleteBase,
  describeNocodb,
  type NocodbServer,
  startNocodb,
  uniqueName,
} from './test/server';

let server: NocodbServer;
let baseId: string;
const WRONG_TOKEN = 'wrong-token-0123456789abcdef';

const declaration: ConnectorDeclaration = {
  ...nocodbConnector,
  connect: async (credentials, base, context) =>
    byNames(await nocodbConnector.connect(credentials, base, context)),
};

describeNocodb('nocodb (real server)', () => {
  // The server may take a minute to start on a slow machine: longer than the suite's own setup may take.
  beforeAll(async () => {
    server = await startNocodb();
  }, 320_000);

  runConnectorContractSuite({
    name: 'nocodb (real server)',
    declaration,
    context: { egress: { allowPrivate: true, allowLoopback: true }, shared: new LocalCoordination() },
    setup: async () => {
      baseId = await createBase(server, uniqueName('contract'));
      return baseId;
    },
    teardown: async () => {
      await deleteBase(server, baseId);
    },
    goodCredentials: () => ({ baseUrl: server.url, apiToken: server.token }),
    badCredentials: () => ({ baseUrl: server.url, apiToken: WRONG_TOKEN }),
    unreachableCredentials: () => ({ baseUrl: 'http://127.0.0.1:9', apiToken: server.token }),
    credentialsForHost: (host) => ({
      baseUrl: server.url.replace('127.0.0.1', host),
      apiToken: server.token,
    }),
    secrets: () => [server.token, WRONG_TOKEN],
    outside: outsideWriter(() => [server, baseId]),
    fixture: { create: (name) => createFixtureTable(server, baseId, name), columns: FIXTURE_COLUMNS },
    createPlainTable: (name, options) => createPlainTable(server, baseId, name, options),
    ...NOCODB_CONTRACT_OPTIONS,
  });
});
