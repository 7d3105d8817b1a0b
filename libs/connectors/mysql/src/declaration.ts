/**
 * The MySQL / MariaDB connector declaration: one `connectionString` credential, the base is a database. This
 * file is the package's `/declaration` entry: it loads no driver (`mysql2`) until the first connect, so the
 * connector catalogue can be imported without one.
 */
import {
  assertHostAllowed,
  connectionStringAuth,
  CONNECTION_STRING_FIELD,
  defineConnector,
  type ConnectContext,
  type Credentials,
  writeOriginTag,
} from '@lockstep/connectors-core';
import type { MysqlConnection, ChangeLogSettings } from './connection';
import { parseConnectionString, secretsOf } from './credentials';

/**
 * The driver side, loaded on the first connect. `require`, not `import()`: the build leaves `import()` native
 * (.swcrc `ignoreDynamic`), and a native import cannot load these CommonJS files.
 */
function driverSide(): { connection: typeof import('./connection'); db: typeof import('./db') } {
  /* eslint-disable @typescript-eslint/no-require-imports */
  return { connection: require('./connection'), db: require('./db') };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

export { CONNECTION_STRING_FIELD };

const DEFAULT_POOL_SIZE = 5;

export const mysqlConnector = defineConnector({
  type: 'mysql',
  displayName: 'MySQL / MariaDB',
  plan: 'free',
  auth: connectionStringAuth('mysql://user:password@host:3306/database', {
    label: 'MySQL connection URIs',
    url: 'https://dev.mysql.com/doc/refman/8.0/en/connecting-using-uri-or-key-value-pairs.html',
  }),
  capabilities: {
    createTables: true,
    createFields: true,
    views: false,
    changeDetection: ['change_feed', 'full_scan'],
    syncToItself: true,
    liveExport: { source: true, destination: true, locationKind: 'database' },
  },
  // As `prepareTable` does it (setup.ts, change-capture.ts).
  tableSetup: {
    serviceIdColumn:
      'a `lockstep_id` column (CHAR(36), unique, filled in for existing rows; invisible where the server ' +
      'supports invisible columns, filled by a trigger where it cannot default to UUID())',
    changeCapture:
      '`lockstep_` triggers on each mapped table and the tables `lockstep_change_log` and ' +
      '`lockstep_capture_readers` in the database',
  },
  connect: (credentials: Credentials, base: string | null, context: ConnectContext) =>
    openMysqlConnection(credentials, base, context),
});

/**
 * Opens a connection (what `mysqlConnector.connect` does), with change-log settings other than the defaults
 * when given. The egress policy is checked before any socket is opened, and the pool connects to the
 * address that was checked. The pool connects lazily: `checkCredentials()` is the first round trip.
 */
export async function openMysqlConnection(
  credentials: Credentials,
  base: string | null,
  context: ConnectContext,
  settings?: ChangeLogSettings,
): Promise<MysqlConnection> {
  const target = parseConnectionString(credentials);
  const addresses = await assertHostAllowed(target.host, context.egress);
  const { connection, db: driver } = driverSide();
  const db = new driver.Db({
    target,
    addresses,
    database: base ?? target.database,
    poolSize: context.poolSize ?? DEFAULT_POOL_SIZE,
    secrets: secretsOf(credentials),
    origin: writeOriginTag(context.writeOrigin, driver.ORIGIN_MAX_LENGTH),
  });
  return new connection.MysqlConnection(db, settings ?? connection.DEFAULT_CHANGE_LOG_SETTINGS);
}
