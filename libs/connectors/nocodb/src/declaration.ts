/**
 * The NocoDB connector: credentials are a NocoDB server's address and an API token, a base is a NocoDB base
 * (id `p...` or exact title). This file is the package's `/declaration` entry: it loads the connection code only
 * on the first connect.
 */
import { type ConnectContext, type Credentials, defineConnector } from '@lockstep/connectors-core';

/** The connection side, loaded on the first connect (`require`: see the PostgreSQL connector's declaration). */
function connectionSide(): typeof import('./connect') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./connect');
}

export const nocodbConnector = defineConnector({
  type: 'nocodb',
  displayName: 'NocoDB',
  plan: 'free',
  auth: {
    method: 'api_key',
    fields: [
      {
        id: 'baseUrl',
        label: 'NocoDB address',
        optional: false,
        placeholder: 'https://nocodb.example.com',
        options: null,
        help: {
          label: 'The address you open NocoDB at (self-hosted or https://app.nocodb.com)',
          url: 'https://nocodb.com/docs/self-hosting/installation',
        },
        secret: false,
      },
      {
        id: 'apiToken',
        label: 'API token',
        optional: false,
        placeholder: 'xc-token value',
        options: null,
        help: {
          label: 'Create an API token in NocoDB (Account settings > Tokens)',
          url: 'https://nocodb.com/docs/account-settings/api-tokens',
        },
        secret: true,
      },
    ],
  },
  capabilities: {
    createTables: true,
    createFields: true,
    views: true,
    createRelations: false,
    changeDetection: ['incremental', 'full_scan'],
    syncToItself: true,
    liveExport: { source: true, destination: true, locationKind: 'base' },
  },
  // As `prepareTable` does it (setup.ts).
  tableSetup: {
    serviceIdColumn: 'a single line text field "Lockstep ID" (filled in on the records Lockstep creates)',
    changeCapture:
      "a webhook on each mapped table that calls Lockstep's PUBLIC_URL when records change (when PUBLIC_URL is set)",
  },
  async connect(credentials: Credentials, base: string | null, context: ConnectContext) {
    return connectionSide().connectNocodb(credentials, base, context);
  },
});
