/**
 * The Airtable connector: credentials are one personal access token, or the tokens of a browser sign-in
 * (OAuth 2 with PKCE through the console; `oauth.ts` renews them); a base is an Airtable base (id `app...` or
 * exact name). The API's origin is the service's `AIRTABLE_API_URL` setting (`ConnectContext.settings`). This
 * file is the package's `/declaration` entry: it loads the connection code only on the first connect.
 */
import { type ConnectContext, type Credentials, defineConnector } from '@lockstep/connectors-core';
import {
  AUTHORIZE_PATH,
  DEFAULT_OAUTH_URL,
  OAUTH_URL_SETTING,
  REQUIRED_SCOPES,
  TOKEN_PATH,
} from './oauth-endpoints';

/** The connection side, loaded on the first connect (`require`: see the PostgreSQL connector's declaration). */
function connectionSide(): typeof import('./connect') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./connect');
}

export const airtableConnector = defineConnector({
  type: 'airtable',
  displayName: 'Airtable',
  plan: 'free',
  auth: {
    method: 'api_key',
    fields: [
      {
        id: 'apiKey',
        label: 'Personal access token',
        optional: false,
        placeholder: 'pat...',
        options: null,
        help: {
          label:
            'Create a personal access token (scopes: data.records:read/write, schema.bases:read/write, webhook:manage)',
          url: 'https://airtable.com/create/tokens',
        },
        secret: true,
      },
    ],
    // Signing in with Airtable (OAuth 2 with PKCE) through the console; registered in OAUTH_CLIENTS.
    oauth: {
      authorizationEndpoint: `${DEFAULT_OAUTH_URL}${AUTHORIZE_PATH}`,
      tokenEndpoint: `${DEFAULT_OAUTH_URL}${TOKEN_PATH}`,
      scopes: [...REQUIRED_SCOPES],
      originSetting: OAUTH_URL_SETTING,
    },
  },
  capabilities: {
    createTables: true,
    createFields: true,
    views: true,
    createRelations: true,
    changeDetection: ['change_feed', 'full_scan'],
    syncToItself: true,
    liveExport: { source: true, destination: true, locationKind: 'base' },
  },
  // As `prepareTable` does it (setup.ts).
  tableSetup: {
    serviceIdColumn: 'a single line text field "Lockstep ID" (filled in on the records Lockstep creates)',
    changeCapture:
      'a webhook on each mapped table, whose payloads Lockstep reads (refreshed before it expires)',
  },
  async connect(credentials: Credentials, base: string | null, context: ConnectContext) {
    return connectionSide().connectAirtable(credentials, base, context);
  },
});
