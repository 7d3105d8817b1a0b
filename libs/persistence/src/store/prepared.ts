import { createHash } from 'node:crypto';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import type { Db } from './db';

/**
 * Named prepared statements for the API's hot reads. PostgreSQL plans an unnamed statement anew on every
 * call; the sync views and the operations page are statements whose planning costs several times their
 * execution, so each pooled connection prepares them once (by a name derived from the text) and then only
 * binds and executes. Only a statement outside a transaction goes this way: a transaction's manager (or any
 * other `Db`) runs it as an ordinary query, so a caller's transaction still covers it.
 *
 * Invariants: the name is a hash of the exact text, so one name never means two statements; the server replans
 * a prepared statement by itself after a schema change. Errors are raised as TypeORM's `QueryFailedError`, as
 * from `query`.
 */
interface PgPool {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

const names = new Map<string, string>();

function statementName(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    name = `ls_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    names.set(sql, name);
  }
  return name;
}

/** The PostgreSQL pool behind `db` when `db` runs statements outside a transaction; null otherwise. */
function poolOf(db: Db): PgPool | null {
  let source: DataSource | null = null;
  if (db instanceof DataSource) source = db;
  else if (db instanceof EntityManager && !db.queryRunner) source = db.connection;
  if (!source || source.options.type !== 'postgres') return null;
  const pool = (source.driver as unknown as { master?: PgPool }).master;
  return pool ?? null;
}

/** The rows of a read, through a named prepared statement where `db` allows it (see above). */
export async function preparedRows<T>(db: Db, sql: string, params: unknown[]): Promise<T[]> {
  const pool = poolOf(db);
  if (!pool) return (await db.query(sql, params)) as T[];
  try {
    return (await pool.query({ name: statementName(sql), text: sql, values: params })).rows as T[];
  } catch (error) {
    throw new QueryFailedError(sql, params, error as Error);
  }
}
