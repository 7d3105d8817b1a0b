/**
 * `COPY table (columns) FROM STDIN` (text format). The server inserts the rows in batches (one WAL record per
 * batch of rows rather than per row), so a page of a thousand rows costs markedly less than the same rows as
 * INSERTs. Every value goes through its column's input function, as an INSERT's parameters do; COPY takes no
 * parameters and no expressions.
 *
 * `copyBuffer` runs one COPY with rows already in COPY's text; `copyIn` builds the rows' text and runs it in
 * a TypeORM transaction (the service store's bulk inserts).
 */
import { setImmediate } from 'node:timers/promises';
import { Query } from 'pg';
import { copyText } from './text-format';

/** What pg's connection offers a query during COPY FROM STDIN (not in pg's type declarations). */
interface CopyInConnection {
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/** A pg query running a `COPY ... FROM STDIN` statement that sends `data` (complete lines) as the rows. */
export class CopyInQuery extends Query {
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

export type PgClientLike = { query(query: Query): Query };

/**
 * Runs `statement` (a `COPY ... FROM STDIN`) on a pg client with `data`, text already in COPY's format, as
 * its rows.
 */
export function copyBuffer(client: PgClientLike, statement: string, data: Buffer): Promise<void> {
  // pg answers a query object (not a promise): the COPY has ended at its 'end' event, or failed at 'error' (a
  // rejected row). Without a listener that error would be thrown out of pg's socket handler.
  const query = client.query(new CopyInQuery(statement, data));
  return new Promise<void>((resolve, reject) => {
    query.once('error', reject);
    query.once('end', () => resolve());
  });
}

/** Rows of text built between turns of the event loop (other connections' answers are handled meanwhile). */
const YIELD_EVERY = 256;

/** The pg client of a TypeORM transaction's query runner, or null. */
async function pgClient(db: unknown): Promise<PgClientLike | null> {
  const runner = (
    db as { queryRunner?: { connect?: () => Promise<unknown>; isTransactionActive?: boolean } } | null
  )?.queryRunner;
  if (!runner || typeof runner.connect !== 'function' || !runner.isTransactionActive) return null;
  const client = await runner.connect();
  return client && typeof (client as PgClientLike).query === 'function' ? (client as PgClientLike) : null;
}

/**
 * Copies `rows` into `table` (quoted by the caller when needed) through the transaction `db` (a TypeORM
 * `EntityManager` of a PostgreSQL transaction). Returns false (nothing written) when `db` is not one; the
 * caller then uses its INSERT. Values go in as their text (`null` is NULL), so a server-side time (`now()`)
 * is read first and passed as text. `plain` marks the columns whose values never hold a backslash, tab,
 * newline or carriage return (ids the service made, numbers, fixed words): they are not searched for
 * characters to escape.
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
  // Each line goes into the bytes as soon as it is made: no string of the whole page (a large object the
  // garbage collector keeps in its old generation) is built and then encoded a second time.
  const data = new LineBytes();
  const fields: string[] = [];
  for (let count = 0; count < rows.length; count += 1) {
    if ((count + 1) % YIELD_EVERY === 0) await setImmediate();
    const row = rows[count]!;
    fields.length = row.length;
    for (let index = 0; index < row.length; index += 1) {
      const value = row[index]!;
      fields[index] = plain[index] === true && value !== null ? String(value) : copyText(value);
    }
    data.add(fields.join('\t'));
  }
  await copyBuffer(client, `COPY ${table} (${columns.join(', ')}) FROM STDIN`, data.bytes());
  return true;
}

/** Lines of text as UTF-8, each followed by a newline, in one buffer that grows as needed. */
class LineBytes {
  private buffer = Buffer.allocUnsafe(64 * 1024);
  private length = 0;

  add(line: string): void {
    // At most 3 bytes per UTF-16 unit (a surrogate pair is 2 units and 4 bytes), and the newline.
    const needed = this.length + line.length * 3 + 1;
    if (needed > this.buffer.length) {
      const larger = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2));
      this.buffer.copy(larger, 0, 0, this.length);
      this.buffer = larger;
    }
    this.length += this.buffer.write(line, this.length, 'utf8');
    this.buffer[this.length++] = NEWLINE;
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

const NEWLINE = 0x0a;
