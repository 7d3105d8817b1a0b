/**
 * Live export e2e helpers: a browser-sign-in connector that can be a live export source and destination (no
 * shipped connector is oauth), the real database sides, and small HTTP helpers.
 */
import { ConnectorError, defineConnector, type ConnectorDeclaration } from '@lockstep/connectors-core';
import { ConnectorCatalog } from '../../src/connectors/connector-catalog';
import type { TestApp } from './test-app';
import type { ScratchMysql, ScratchPg } from './scratch-dbs';

export const fakeOauthExportConnector: ConnectorDeclaration = defineConnector({
  type: 'fake_oauth_export',
  displayName: 'Fake OAuth Warehouse',
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
  capabilities: {
    createTables: false,
    createFields: false,
    views: false,
    changeDetection: ['full_scan'],
    syncToItself: true,
    liveExport: { source: true, destination: true, locationKind: 'database' },
  },
  connect: async () => {
    throw new ConnectorError('unsupported', 'fake_oauth_export is a test connector that is never connected');
  },
});

export function addLiveExportTestConnectors(t: TestApp): void {
  t.app.get(ConnectorCatalog).add(fakeOauthExportConnector);
}

export const pgSource = (pg: ScratchPg) => ({
  connector: 'postgres',
  auth: { connectionString: pg.url },
  base: pg.schema,
});
/** `location: null` leaves the location out. */
export const mysqlDestination = (my: ScratchMysql, location: string | null = my.database) => ({
  connector: 'mysql',
  auth: { connectionString: my.url },
  ...(location !== null ? { location } : {}),
});
export const pgDestination = (pg: ScratchPg, location: string | null = pg.schema) => ({
  connector: 'postgres',
  auth: { connectionString: pg.url },
  ...(location !== null ? { location } : {}),
});
export const mysqlSource = (my: ScratchMysql) => ({
  connector: 'mysql',
  auth: { connectionString: my.url },
  base: my.database,
});

/** A path from a `*_url` of a response. */
export const follow = (url: string) => url.replace('http://lockstep.test', '');
