import { Pool } from 'pg';
import { copyOut } from './copy-out';

describe('copyOut (against the test store)', () => {
  let pool: Pool;

  beforeAll(() => {
    pool = new Pool({ connectionString: process.env['DATABASE_URL'], max: 1 });
  });

  afterAll(async () => {
    await pool.end();
  });

  it('hands over every line, whatever the size of the messages', async () => {
    const lines: string[] = [];
    await copyOut(
      pool,
      `COPY (SELECT n, repeat('x', n % 3) || E'\\t' FROM generate_series(1, 2000) n) TO STDOUT`,
      (line) => lines.push(line),
    );
    expect(lines).toHaveLength(2000);
    expect(lines[0]).toBe('1\tx\\t');
    expect(lines[1999]).toBe('2000\txx\\t');
  });

  it('raises what onLine threw once the statement has ended, and keeps the client usable', async () => {
    let calls = 0;
    const failure = new Error('bad line');
    await expect(
      copyOut(pool, 'COPY (SELECT generate_series(1, 5)) TO STDOUT', () => {
        calls += 1;
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(calls).toBe(1);
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('rejects with the server error and discards the client', async () => {
    await expect(copyOut(pool, 'COPY (SELECT 1 / 0) TO STDOUT', () => undefined)).rejects.toMatchObject({
      code: '22012',
    });
    expect(pool.totalCount).toBe(0);
    expect((await pool.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
  });
});
