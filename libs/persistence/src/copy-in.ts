/**
 * `COPY table (columns) FROM STDIN` (text format) inside a TypeORM transaction: the engine's bulk inserts into
 * its own store (new record links and operations of an initial-sync page). The server inserts the rows in
 * batches, so a page of a thousand rows costs markedly less than the same rows through `jsonb_to_recordset`.
 *
 * It needs the transaction's pg client (TypeORM's PostgreSQL query runner); on anything else `copyIn` returns
 * false and the caller uses its INSERT. Values go in as their text (`null` is NULL); COPY takes no parameters
 * and no expressions, so a server-side time (`now()`) is read first and passed as text.
 */
import { setImmediate } from 'node:timers/promises';
import { Query } from 'pg';

/** What pg's connection offers a query during COPY FROM STDIN (not in pg's type declarations). */
interface CopyInConnection {
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

class CopyFromStdin extends Query {
  constructor(
    text: string,
    private readonly data: Buffer,
  ) {
    super({ text });
  }

  /** Called by pg's client when the server is ready for the rows. */
  handleCopyInResponse(connection: CopyInConnection): void {
    connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }
}

const SPECIAL = /[\\\t\n\r]/;
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value as a field of COPY's text format: `\N` for NULL; backslash, tab, newline and carriage return escaped. */
export function copyText(value: string | number | boolean | null): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return String(value);
  return SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (char) => ESCAPES[char]!) : value;
}

/** Rows of text built between turns of the event loop (other connections' answers are handled meanwhile). */
const YIELD_EVERY = 256;

export type PgClientLike = { query(query: Query): Query };

/** The pg client of a TypeORM transaction's query runner, or null. */
async function pgClient(db: unknown): Promise<PgClientLike | null> {
  const runner = (db as { queryRunner?: { connect?: () => Promise<unknown>; isTransactionActive?: boolean } } | null)?.queryRunner;
  if (!runner || typeof runner.connect !== 'function' || !runner.isTransactionActive) return null;
  const client = await runner.connect();
  return client && typeof (client as PgClientLike).query === 'function' ? (client as PgClientLike) : null;
}

/**
 * Copies `rows` into `table` (quoted by the caller when needed) through the transaction `db`. Returns false
 * (nothing written) when `db` is not a PostgreSQL transaction. `plain` marks the columns whose values never
 * hold a backslash, tab, newline or carriage return (ids the service made, numbers, fixed words): they are
 * not searched for characters to escape.
 */
export async function copyIn(
  db: unknown,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly (string | number | boolean | null)[])[],
  plain: readonly boolean[] = [],
): Promise<boolean> {
  const client = await pgClient(db);
  if (!client) return false;
  if (rows.length === 0) return true;
  // Joined rather than concatenated: a page's text built with `+=` is a tree of tens of thousands of partial
  // strings, which the garbage collector copies and the encoder flattens again.
  const lines: string[] = new Array<string>(rows.length + 1);
  const fields: string[] = [];
  for (let count = 0; count < rows.length; count += 1) {
    if ((count + 1) % YIELD_EVERY === 0) await setImmediate();
    const row = rows[count]!;
    fields.length = row.length;
    for (let index = 0; index < row.length; index += 1) {
      const value = row[index]!;
      fields[index] = plain[index] === true && value !== null ? String(value) : copyText(value);
    }
    lines[count] = fields.join('\t');
  }
  lines[rows.length] = '';
  const text = lines.join('\n');
  await copyBuffer(client, `COPY ${table} (${columns.join(', ')}) FROM STDIN`, Buffer.from(text, 'utf8'));
  return true;
}

/** Runs `statement` (a `COPY ... FROM STDIN`) on a pg client with `data`, text already in COPY's format, as its rows. */
export function copyBuffer(client: PgClientLike, statement: string, data: Buffer): Promise<void> {
  // pg answers a query object (not a promise): the COPY has ended at its 'end' event, or failed at 'error' (a
  // rejected row). Without a listener that error would be thrown out of pg's socket handler.
  const query = client.query(new CopyFromStdin(statement, data));
  return new Promise<void>((resolve, reject) => {
    query.once('error', reject);
    query.once('end', () => resolve());
  });
}
