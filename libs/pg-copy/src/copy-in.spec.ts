import { DataSource } from 'typeorm';
import { copyIn } from './copy-in';
import { copyText } from './text-format';

describe('COPY text fields', () => {
  it('escapes what would end a field or a line, and writes NULL as \\N', () => {
    expect(copyText(null)).toBe('\\N');
    expect(copyText('plain')).toBe('plain');
    expect(copyText('a\tb\nc\rd\\e')).toBe('a\\tb\\nc\\rd\\\\e');
    expect(copyText('\\N')).toBe('\\\\N');
    expect(copyText(12)).toBe('12');
    expect(copyText(false)).toBe('false');
    expect(copyText('{"a":"x\\"y"}')).toBe('{"a":"x\\\\"y"}');
  });

  it('reports false (nothing written) outside a PostgreSQL transaction', async () => {
    expect(await copyIn({ query: async () => [] }, 't', ['a'], [['x']])).toBe(false);
    expect(
      await copyIn(
        {
          queryRunner: {
            isTransactionActive: false,
            connect: async () => ({ query: async () => undefined }),
          },
        },
        't',
        ['a'],
        [['x']],
      ),
    ).toBe(false);
  });
});

describe('copyIn (against the test store)', () => {
  let db: DataSource;
  const table = `copy_in_spec_${Date.now().toString(36)}`;

  beforeAll(async () => {
    db = new DataSource({ type: 'postgres', url: process.env['DATABASE_URL'], entities: [] });
    await db.initialize();
    await db.query(`CREATE TABLE ${table} (id text PRIMARY KEY, note text)`);
  });

  afterAll(async () => {
    await db.query(`DROP TABLE IF EXISTS ${table}`);
    await db.destroy();
  });

  it('returns once the rows are in, values escaped as COPY text', async () => {
    await db.transaction(async (tx) => {
      expect(
        await copyIn(
          tx,
          table,
          ['id', 'note'],
          [
            ['a', 'tab\there'],
            ['b', null],
            ['c', 'line\nbreak \\N'],
          ],
        ),
      ).toBe(true);
      expect(await tx.query(`SELECT id, note FROM ${table} ORDER BY id`)).toEqual([
        { id: 'a', note: 'tab\there' },
        { id: 'b', note: null },
        { id: 'c', note: 'line\nbreak \\N' },
      ]);
    });
  });

  it('writes the values of plain columns as they are, and still escapes the other columns', async () => {
    await db.transaction(async (tx) => {
      expect(
        await copyIn(
          tx,
          table,
          ['id', 'note'],
          [
            ['p1', 'x\ty'],
            ['p2', null],
          ],
          [true, false],
        ),
      ).toBe(true);
      expect(await tx.query(`SELECT id, note FROM ${table} WHERE id LIKE 'p%' ORDER BY id`)).toEqual([
        { id: 'p1', note: 'x\ty' },
        { id: 'p2', note: null },
      ]);
      await tx.query(`DELETE FROM ${table} WHERE id LIKE 'p%'`);
    });
  });

  it('rejects with the server error when a row is refused, and the transaction rolls back', async () => {
    await expect(
      db.transaction(async (tx) => {
        await copyIn(
          tx,
          table,
          ['id', 'note'],
          [
            ['d', 'fine'],
            ['a', 'duplicate key'],
          ],
        );
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await db.query(`SELECT id FROM ${table} WHERE id = 'd'`)).toEqual([]);
    // The pooled connection is usable again.
    expect(await db.query(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: 3 }]);
  });
});
