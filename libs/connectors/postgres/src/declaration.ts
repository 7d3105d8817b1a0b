/**
 * The PostgreSQL connector: credentials are one connection string, a base is a schema. This file is the
 * package's `/declaration` entry: it loads no driver (`pg`) until the first connect, so the connector
 * catalogue can be imported without one.
 */
import {
  connectionStringAuth,
  defineConnector,
  type ConnectContext,
  type Credentials,
} from '@lockstep/connectors-core';
import { resolveConfig } from './config';

/**
 * The driver side, loaded on the first connect. `require`, not `import()`: the build leaves `import()` native
 * (.swcrc `ignoreDynamic`), and a native import cannot load these CommonJS files.
 */
function driverSide(): typeof import('./connection') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./connection');
}

export const postgresConnector = defineConnector({
  type: 'postgres',
  displayName: 'PostgreSQL',
  plan: 'free',
  auth: connectionStringAuth('postgres://user:password@host:5432/dbname?sslmode=require', {
    label: 'PostgreSQL connection URIs',
    url: 'https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS',
  }),
  capabilities: {
    createTables: true,
    createFields: true,
    views: false,
    changeDetection: ['change_feed', 'full_scan'],
    syncToItself: true,
    liveExport: { source: true, destination: true, locationKind: 'schema' },
  },
  // As `prepareTable` does it (connection.ts, change-capture.ts).
  tableSetup: {
    serviceIdColumn: 'a `lockstep_id` uuid column (unique, filled in for existing rows)',
    changeCapture: 'triggers on each mapped table and a `lockstep` schema holding the change log',
  },
  async connect(credentials: Credentials, base: string | null, context: ConnectContext) {
    const config = await resolveConfig(credentials, context);
    const { PostgresConnection } = driverSide();
    return new PostgresConnection(config.client, base, config.secrets, {
      poolSize: context.poolSize,
      writeOrigin: context.writeOrigin,
    });
  },
});
