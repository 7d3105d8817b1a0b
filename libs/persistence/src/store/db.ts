import type { EntityManager } from 'typeorm';

/**
 * What a store function runs its statements on: a DataSource, an EntityManager or a transaction's manager (so
 * a caller's transaction, such as the engine's fenced one, covers every statement it passes it to).
 */
export type Db = Pick<EntityManager, 'query'>;

/**
 * The rows of an `UPDATE`/`DELETE ... RETURNING`: TypeORM's PostgreSQL driver answers those commands with
 * `[rows, affected count]` (and every other command with the rows), so reading such a result as rows directly
 * sees one array and one number.
 */
export function returnedRows<T>(result: unknown): T[] {
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  ) {
    return result[0] as T[];
  }
  return result as T[];
}

const STORE_NOW_SQL = `SELECT now()::text AS now`;

/** The store's current time (its transaction's start time inside a transaction) as the server's text. */
export async function storeNow(db: Db): Promise<string> {
  return ((await db.query(STORE_NOW_SQL)) as { now: string }[])[0]!.now;
}

/** A `Db` that can also open a transaction of its own (a DataSource or an EntityManager outside one). */
export type TransactionalDb = Pick<EntityManager, 'query' | 'transaction'>;
