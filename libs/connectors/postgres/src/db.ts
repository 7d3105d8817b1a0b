/**
 * The connection's pg pool and the client plumbing its parts share. Every pooled session runs `SESSION_SQL`
 * (the decoders rely on it) and sets `lockstep.origin` to the connection's origin, which the capture trigger
 * records with each change (change-capture.ts): every statement of the pool is this connection's own, so a
 * single-statement write needs no transaction of its own.
 */
import { ExportAbortedError, type ConnectorError } from '@lockstep/connectors-core';
import { copyBuffer } from '@lockstep/pg-copy';
import { Pool, type ClientConfig, type PoolClient, type QueryArrayConfig, type QueryArrayResult } from 'pg';
import type { Queryable } from './catalog';
import { ORIGIN_SETTING } from './change-capture';
import { SESSION_SQL } from './config';
import type { TextRow } from './copy';

/** A row of a query run without `rowMode: 'array'` (values as PostgreSQL's text, see config.ts). */
export type Row = Record<string, string | null>;

/** What the parts of a connection share (connection.ts makes it once per connection). */
export interface PgContext {
  readonly pool: Pool;
  /** The `lockstep.origin` value of this connection's sessions, which its writes carry. */
  readonly origin: string;
  /** The base (schema); throws when the connection has none. */
  schema(): string;
  /** A driver error as a ConnectorError, with the connection's secrets redacted. */
  translate(error: unknown, context?: string): ConnectorError;
}

/** The pool, or one of its clients inside a transaction. */
export interface ArrayQueryable {
  query<R extends unknown[]>(config: QueryArrayConfig): Promise<QueryArrayResult<R>>;
}

export async function textRows(db: ArrayQueryable, text: string, values: unknown[] = []): Promise<TextRow[]> {
  return (await db.query<TextRow>({ text, values, rowMode: 'array' })).rows;
}

/** The pool as the catalog queries take it. */
export function queryable(pool: Pool): Queryable {
  return pool as unknown as Queryable;
}

export function createPool(clientConfig: ClientConfig, origin: string, poolSize = 5): Pool {
  const pool = new Pool({
    ...clientConfig,
    max: poolSize,
    idleTimeoutMillis: 10_000,
    allowExitOnIdle: true,
    onConnect: async (client) => {
      await client.query(SESSION_SQL);
      // Every statement of this pool is Lockstep's own (this connection's), so the origin the capture
      // trigger records is set once per session rather than in each write transaction: a single-statement
      // write then needs no transaction of its own.
      await client.query('SELECT set_config($1, $2, false)', [ORIGIN_SETTING, origin]);
    },
  });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `action` in one transaction (the session already carries this connection's origin). */
export async function withWriteTransaction<T>(
  pool: Pool,
  action: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await action(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Runs `COPY ... FROM STDIN` on a pooled client with `data` as the rows (a statement of its own). */
export async function copyFrom(pool: Pool, text: string, data: Buffer): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await copyBuffer(client, text, data).catch((error: Error) => {
      broken = error;
      throw error;
    });
  } finally {
    client.release(broken);
  }
}

/** What a live export object needs of its connection (live-export.ts). */
export interface PostgresExportContext {
  pool: Pool;
  schema: () => string;
  translate: (error: unknown, context?: string) => ConnectorError;
  /** Drops the connection's cached description of a table (its columns changed). */
  invalidate: (table: string) => void;
}

/** Runs a live export call, translating driver errors; an abort (`ExportAbortedError`) passes unchanged. */
export async function exportGuard<T>(
  context: PostgresExportContext,
  action: () => Promise<T>,
  message?: string,
): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof ExportAbortedError) throw error;
    throw context.translate(error, message);
  }
}
