/**
 * `COPY (SELECT ...) TO STDOUT` (text format), line by line. The values are the same text as a result set's
 * (COPY uses each type's output function, under the session's settings), but the server sends one message per
 * row rather than one length-prefixed value per column, so the client decodes one string per row and takes
 * the values out of it: markedly less work per row than the driver's row parsing. pg hands every CopyData
 * message to the active query's `handleCopyData`; `CopyOutQuery` passes the lines on as they arrive, so the
 * work on a row overlaps the server's work on the next ones.
 *
 * COPY takes no bind parameters: a value in a COPY's query (a page's lower bound) must be a quoted literal
 * (pg's `escapeLiteral`).
 */
import { Query } from 'pg';

const NEWLINE = 0x0a;

/**
 * A pg query running a `COPY ... TO STDOUT` statement (text format) whose lines (one per row, without the
 * newline) go to `onLine` as they arrive. A line that `onLine` fails on is kept in `failure` (the lines after
 * it are skipped): the caller reports it once the query has ended, so the connection is left ready for the
 * next query.
 */
export class CopyOutQuery extends Query {
  failure: unknown = null;
  private pending: Buffer | null = null;

  constructor(
    text: string,
    private readonly onLine: (line: string) => void,
  ) {
    super({ text });
  }

  /** Called by pg's client for every CopyData message (the server sends one row per message). */
  handleCopyData(message: { chunk: Buffer }): void {
    let chunk = message.chunk;
    const first = chunk.indexOf(NEWLINE);
    if (this.pending === null && first === chunk.length - 1) {
      this.row(chunk.toString('utf8', 0, first)); // the usual case: exactly one row
      return;
    }
    if (this.pending) {
      chunk = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE, start); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      this.row(chunk.toString('utf8', start, end));
      start = end + 1;
    }
    if (start < chunk.length) this.pending = Buffer.from(chunk.subarray(start));
  }

  private row(line: string): void {
    if (this.failure !== null) return;
    try {
      this.onLine(line);
    } catch (error) {
      this.failure = error;
    }
  }
}

/** A pooled pg client, as far as `copyOut` uses it. */
export interface PgPooledClient {
  query(query: Query): Query;
  release(error?: Error): void;
}

/** A pg pool, as far as `copyOut` uses it. */
export interface PgPoolLike {
  connect(): Promise<PgPooledClient>;
}

/**
 * Runs `COPY (query) TO STDOUT` on a pooled client and hands each line to `onLine` as soon as it arrives.
 * Rejects with the statement's error (the client is then discarded rather than returned to the pool), or,
 * once the statement has ended, with the first error `onLine` threw. `started` sees the client before the
 * statement is sent (to cancel it from elsewhere).
 */
export async function copyOut(
  pool: PgPoolLike,
  text: string,
  onLine: (line: string) => void,
  started?: (client: PgPooledClient) => void,
): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    started?.(client);
    const query = client.query(new CopyOutQuery(text, onLine)) as CopyOutQuery;
    await new Promise<void>((resolve, reject) => {
      query.on('error', (error: Error) => {
        broken = error;
        reject(error);
      });
      query.on('end', () => (query.failure === null ? resolve() : reject(query.failure)));
    });
  } finally {
    client.release(broken);
  }
}
