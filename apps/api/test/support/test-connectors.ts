/**
 * Connectors the e2e tests add to the API's catalog (`ConnectorCatalog.add`), for rules no shipped connector
 * exercises: a browser-sign-in (oauth) connector, one above the free plan, and one that cannot sync to
 * itself and lists two bases with the same name. They talk to no app: credentials are checked against a
 * fixed value. Only the discovery methods work; everything else is `unsupported`.
 */
import {
  type Connection,
  ConnectorError,
  type ConnectorDeclaration,
  defineConnector,
} from '@lockstep/connectors-core';

export const GOOD_FAKE_KEY = 'fake-key-good';

const BASES = [
  { id: 'base_1', name: 'Sales' },
  { id: 'base_2', name: 'Sales' },
  { id: 'base_3', name: 'Operations' },
];

function fakeConnection(type: string, credentials: Record<string, string>): Connection {
  const unsupported = async (): Promise<never> => {
    throw new ConnectorError('unsupported', `${type} is a test connector`);
  };
  const check = async () => {
    if (credentials['apiKey'] !== GOOD_FAKE_KEY) throw new ConnectorError('auth', 'API key not recognised');
  };
  return {
    type,
    checkCredentials: check,
    listBases: async () => {
      await check();
      return BASES;
    },
    listTables: async () => [],
    listFields: async () => [],
    readPage: unsupported,
    readByIds: unsupported,
    readByServiceIds: unsupported,
    currentCheckpoint: unsupported,
    readChanges: unsupported,
    createRecords: unsupported,
    updateRecords: unsupported,
    deleteRecords: unsupported,
    createTable: unsupported,
    createField: unsupported,
    prepareTable: unsupported,
    unprepareTable: unsupported,
    close: async () => undefined,
  };
}

const capabilities = (syncToItself: boolean) => ({
  createTables: false,
  createFields: false,
  views: false,
  changeDetection: ['full_scan' as const],
  syncToItself,
  liveExport: { source: false, destination: false, locationKind: null },
});

const apiKeyAuth = {
  method: 'api_key' as const,
  fields: [
    {
      id: 'apiKey',
      label: 'API key',
      optional: false,
      placeholder: 'key',
      options: null,
      help: { label: 'Where to find it', url: 'https://example.com/help' },
      secret: true,
    },
  ],
};

export const fakeOauthConnector: ConnectorDeclaration = defineConnector({
  type: 'fake_oauth',
  displayName: 'Fake OAuth App',
  auth: {
    method: 'oauth',
    fields: null,
    oauth: {
      authorizationEndpoint: 'https://example.com/authorize',
      tokenEndpoint: 'https://example.com/token',
      scopes: ['data'],
    },
  },
  plan: 'free',
  capabilities: capabilities(true),
  connect: async (credentials) => fakeConnection('fake_oauth', credentials),
});

export const fakePaidConnector: ConnectorDeclaration = defineConnector({
  type: 'fake_paid',
  displayName: 'Fake Business App',
  auth: apiKeyAuth,
  plan: 'business',
  capabilities: capabilities(true),
  connect: async (credentials) => fakeConnection('fake_paid', credentials),
});

export const fakeSoloConnector: ConnectorDeclaration = defineConnector({
  type: 'fake_solo',
  displayName: 'Fake Solo App',
  auth: apiKeyAuth,
  plan: 'free',
  capabilities: capabilities(false),
  connect: async (credentials) => fakeConnection('fake_solo', credentials),
});

export const TEST_CONNECTORS = [fakeOauthConnector, fakePaidConnector, fakeSoloConnector];
