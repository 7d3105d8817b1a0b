import { ConnectorError } from '@lockstep/connectors-core';
import { collectAll, paginate, paginateByNumber } from './pagination';

const LETTERS = 'abcdefg'.split('');

describe('pagination helpers', () => {
  it('pages by offset token until the app gives none', async () => {
    const asked: (string | null)[] = [];
    const pages = paginate<string>(async (offset) => {
      asked.push(offset);
      const start = offset ? Number(offset) : 0;
      const next = start + 3 < LETTERS.length ? String(start + 3) : undefined;
      return { items: LETTERS.slice(start, start + 3), next };
    });
    expect(await collectAll(pages)).toEqual(LETTERS);
    expect(asked).toEqual([null, '3', '6']);
  });

  it('pages by cursor objects, resuming from a given cursor', async () => {
    const pages = paginate<number, { after: number }>(
      async (cursor) => {
        const after = cursor?.after ?? 0;
        return { items: [after + 1], next: after + 1 < 4 ? { after: after + 1 } : null };
      },
      { after: 1 },
    );
    expect(await collectAll(pages)).toEqual([2, 3, 4]);
  });

  it('stops with a transient error when the app repeats a token', async () => {
    const pages = paginate<number>(async () => ({ items: [1], next: 'same' }));
    const error = await collectAll(pages).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).kind).toBe('transient');
  });

  it('pages by number until a short page, or until the app says there is no more', async () => {
    const numbers: number[] = [];
    const short = paginateByNumber<string>(
      async (page) => {
        numbers.push(page);
        return { items: LETTERS.slice((page - 1) * 3, page * 3) };
      },
      { pageSize: 3 },
    );
    expect(await collectAll(short)).toEqual(LETTERS);
    expect(numbers).toEqual([1, 2, 3]);
    const told = paginateByNumber<number>(async (page) => ({ items: [page], hasMore: page < 2 }), {
      pageSize: 1,
      first: 1,
    });
    expect(await collectAll(told)).toEqual([1, 2]);
  });

  it('collectAll refuses a list past its maximum', async () => {
    const pages = paginateByNumber<number>(async (page) => ({ items: [page, page] }), { pageSize: 2 });
    await expect(collectAll(pages, 5)).rejects.toMatchObject({ kind: 'unsupported' });
  });
});
