import { DataSource, QueryFailedError } from 'typeorm';
import { preparedRows } from './prepared';

/** One pooled connection, so the prepared statements it holds can be read back through the same pool. */
function oneConnection(): DataSource {
  return new DataSource({
    type: 'postgres',
    url: process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    extra: { max: 1 },
  });
}

const READ = `SELECT $1::int + 1 AS n, 'prepared-spec' AS tag`;

async function preparedTexts(source: DataSource): Promise<string[]> {
  const rows: { statement: string }[] = await source.query(
    `SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%prepared-spec%' AND name LIKE 'ls_%'`,
  );
  return rows.map((row) => row.statement);
}

describe('preparedRows', () => {
  let source: DataSource;
  beforeAll(async () => {
    source = await oneConnection().initialize();
  });
  afterAll(async () => {
    await source.destroy();
  });

  it('runs a read outside a transaction as a named prepared statement, once per connection', async () => {
    expect(await preparedRows(source, READ, [1])).toEqual([{ n: 2, tag: 'prepared-spec' }]);
    expect(await preparedRows(source.manager, READ, [41])).toEqual([{ n: 42, tag: 'prepared-spec' }]);
    expect(await preparedTexts(source)).toEqual([READ]);
  });

  it("runs inside a caller's transaction on that transaction's connection, as an ordinary query", async () => {
    const other = `SELECT $1::int AS n, 'prepared-spec-tx' AS tag`;
    const seen = await source.transaction(async (tx) => {
      const rows = await preparedRows<{ n: number }>(tx, other, [7]);
      const prepared: unknown[] = await tx.query(
        `SELECT 1 FROM pg_prepared_statements WHERE statement = $1`,
        [other],
      );
      return { rows, prepared: prepared.length };
    });
    expect(seen).toEqual({ rows: [{ n: 7, tag: 'prepared-spec-tx' }], prepared: 0 });
  });

  it('raises a failed statement as QueryFailedError with its code, as query does', async () => {
    const error = await preparedRows(source, `SELECT 1 / $1::int AS n`, [0]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryFailedError);
    expect((error as QueryFailedError & { code?: string }).code).toBe('22012');
  });
});
