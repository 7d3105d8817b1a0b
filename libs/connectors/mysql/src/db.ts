/**
 * The connector's mysql2 pool. Every physical connection is set up once, before its first statement:
 *
 * - `time_zone = '+00:00'`: TIMESTAMP values are read and written in UTC, so conversions are exact;
 * - `sql_mode` strict (STRICT_ALL_TABLES ...): a bad value is an error, never silently truncated or zeroed;
 * - `@lockstep_origin = 'lockstep'` (or `'lockstep:<writeOrigin>'` when the connection was opened with a
 *   `writeOrigin`): the change-capture triggers record it, so a change this connection made is known as its
 *   own (`Change.own`, `ignoreOwnWrites`), and two syncs on one table still see each other's writes.
 *
 * Values come back exact: DATE/DATETIME/TIMESTAMP as strings, BIGINT and DECIMAL as strings, JSON as its
 * text; `decode.ts` turns them into canonical values.
 */
import { createConnection as netConnect } from 'node:net';
import {
  createPool,
  type Pool,
  type PoolConnection,
  type PoolOptions,
  type ResultSetHeader,
} from 'mysql2/promise';
import { type ConnectorError, ExportAbortedError, OWN_WRITE_ORIGIN } from '@lockstep/connectors-core';
import { translateMysqlError, type ServerFlavor } from './errors';
import { parseServerVersion, type ServerInfo } from './native-types';
import type { ParsedConnectionString } from './credentials';
import { quoteString } from './sql';

/** The change log's `origin` column is VARCHAR(64). */
export const ORIGIN_MAX_LENGTH = 64;

export const SESSION_SQL_MODE =
  'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

const sessionSetup = (origin: string) =>
  `SET time_zone = '+00:00', sql_mode = '${SESSION_SQL_MODE}', @lockstep_origin = ${quoteString(origin)}`;

export type Row = Record<string, unknown>;

export interface DbOptions {
  target: ParsedConnectionString;
  /** The addresses the egress check resolved the host to; the pool connects to the first one. */
  addresses: string[];
  database: string | null;
  poolSize: number;
  secrets: string[];
  /** The tag of this connection's writes in the change log (`writeOriginTag`); default `lockstep`. */
  origin?: string;
}

export function poolOptions(options: DbOptions): PoolOptions {
  const { target } = options;
  const address = options.addresses[0] ?? target.host;
  return {
    // The host name stays for TLS (server name and identity check); the socket goes to the checked address.
    host: target.host,
    port: target.port,
    stream: () => {
      const socket = netConnect({ host: address, port: target.port });
      socket.setKeepAlive(true, 30_000);
      return socket;
    },
    user: target.user,
    password: target.password,
    database: options.database ?? undefined,
    ssl: target.ssl ?? undefined,
    connectionLimit: options.poolSize,
    maxIdle: options.poolSize,
    idleTimeout: 60_000,
    connectTimeout: 10_000,
    charset: 'utf8mb4_general_ci',
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    jsonStrings: true,
    multipleStatements: false,
  };
}

export class Db {
  private readonly pool: Pool;
  private readonly prepared = new WeakSet<object>();
  private serverInfo: ServerInfo | null = null;

  constructor(private readonly options: DbOptions) {
    this.pool = createPool(poolOptions(options));
    // A connection that dies while idle in the pool must not crash the process.
    this.pool.on('connection', (connection) => {
      connection.on('error', () => undefined);
    });
  }

  get database(): string | null {
    return this.options.database;
  }

  /** The tag the change-capture triggers record for this connection's writes. */
  get origin(): string {
    return this.options.origin ?? OWN_WRITE_ORIGIN;
  }

  get flavor(): ServerFlavor | undefined {
    return this.serverInfo?.flavor;
  }

  /** Turns any error into the connector's error (ConnectorErrors and programming errors pass unchanged). */
  translate(error: unknown, context?: string): ConnectorError | unknown {
    return translateMysqlError(error, {
      flavor: this.serverInfo?.flavor,
      secrets: this.options.secrets,
      context,
    });
  }

  /** Runs `work` on one prepared connection from the pool; driver errors come out translated. */
  async withConnection<T>(work: (connection: PoolConnection) => Promise<T>, context?: string): Promise<T> {
    let connection: PoolConnection;
    try {
      connection = await this.pool.getConnection();
    } catch (error) {
      throw this.translate(error, context);
    }
    try {
      await this.prepare(connection);
      return await work(connection);
    } catch (error) {
      throw this.translate(error, context);
    } finally {
      connection.release();
    }
  }

  /** Runs `work` inside a transaction (committed when it returns, rolled back when it throws). */
  async transaction<T>(work: (connection: PoolConnection) => Promise<T>, context?: string): Promise<T> {
    return this.withConnection(async (connection) => {
      await connection.query('START TRANSACTION');
      try {
        const result = await work(connection);
        await connection.query('COMMIT');
        return result;
      } catch (error) {
        await connection.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    }, context);
  }

  /** One statement on any pooled connection. */
  async rows(sql: string, values: unknown[] = [], context?: string): Promise<Row[]> {
    return this.withConnection((connection) => rows(connection, sql, values), context);
  }

  async server(): Promise<ServerInfo> {
    // Preparing a connection reads the version.
    if (!this.serverInfo) await this.withConnection(async () => undefined);
    return this.serverInfo as ServerInfo;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }

  private async prepare(connection: PoolConnection): Promise<void> {
    const core = connection.connection as object;
    if (this.prepared.has(core)) return;
    await connection.query(sessionSetup(this.origin));
    if (!this.serverInfo) {
      const [result] = await connection.query('SELECT VERSION() AS version');
      this.serverInfo = parseServerVersion(String((result as Row[])[0]?.version ?? ''));
    }
    this.prepared.add(core);
  }
}

export async function rows(connection: PoolConnection, sql: string, values: unknown[] = []): Promise<Row[]> {
  const [result] = await connection.query(sql, values);
  return result as Row[];
}

export async function exec(
  connection: PoolConnection,
  sql: string,
  values: unknown[] = [],
): Promise<ResultSetHeader> {
  const [result] = await connection.query(sql, values);
  return result as ResultSetHeader;
}

/**
 * Streams one statement's rows (as arrays) to `onRow` on a pooled connection; resolves with the row count.
 * An abort kills the statement (`KILL QUERY` from another pooled connection) and rejects with
 * `ExportAbortedError`; an error thrown by `onRow` rejects once the statement has ended.
 */
export async function streamRows(
  db: Db,
  sql: string,
  onRow: (row: unknown[]) => void,
  signal: AbortSignal | undefined,
  context: string,
): Promise<number> {
  if (signal?.aborted) throw new ExportAbortedError();
  try {
    return await db.withConnection(async (connection) => {
      const onAbort = (): void => {
        db.rows(`KILL QUERY ${Number(connection.threadId)}`).catch(() => undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        return await streamQuery(connection, sql, onRow);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    }, context);
  } catch (error) {
    if (signal?.aborted) throw new ExportAbortedError();
    throw error;
  }
}

type StreamingConnection = {
  query(options: { sql: string; rowsAsArray: boolean }): NodeJS.EventEmitter;
};

function streamQuery(
  connection: PoolConnection,
  sql: string,
  onRow: (row: unknown[]) => void,
): Promise<number> {
  const core = connection.connection as unknown as StreamingConnection;
  return new Promise<number>((resolve, reject) => {
    let count = 0;
    let failure: unknown = null;
    core
      .query({ sql, rowsAsArray: true })
      .on('result', (row: unknown[]) => {
        if (failure !== null) return;
        count += 1;
        try {
          onRow(row);
        } catch (error) {
          failure = error;
        }
      })
      .on('error', reject)
      .on('end', () => (failure === null ? resolve(count) : reject(failure)));
  });
}
