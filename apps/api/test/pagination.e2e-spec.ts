import { bearer, createTestApp, type TestApp } from './support/test-app';

describe('cursor pagination (spec 2.2)', () => {
  let t: TestApp;
  let accountId: string;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp();
    accountId = (await t.account()).id;
    key = await t.key(accountId, 'read');
    for (let i = 0; i < 4; i++) await t.key(accountId, 'read');
  });
  afterAll(() => t.close());

  const list = (path: string, query: Record<string, string | number> = {}, secret = key) =>
    t.http().get(path).query(query).set(bearer(secret));

  it('pages newest first, stable under inserts, with the envelope of 2.2', async () => {
    const all = (await list('/v1/test-probe/keys', { limit: 100 })).body;
    expect(all).toMatchObject({ has_more: false, next_cursor: null });
    expect(all.data).toHaveLength(5);
    const first = (await list('/v1/test-probe/keys', { limit: 2 })).body;
    expect(first.has_more).toBe(true);
    expect(first.data.map((k: { id: string }) => k.id)).toEqual(
      all.data.slice(0, 2).map((k: { id: string }) => k.id),
    );
    await t.key(accountId, 'read'); // a new item arrives between pages
    const seen = [...first.data];
    let cursor = first.next_cursor;
    while (cursor) {
      const page = (await list('/v1/test-probe/keys', { limit: 2, cursor })).body;
      seen.push(...page.data);
      cursor = page.next_cursor;
      expect(page.has_more).toBe(cursor !== null);
    }
    expect(seen.map((k) => k.id)).toEqual(all.data.map((k: { id: string }) => k.id));
  });

  it.each(['0', '101', '-1', '2.5', 'ten'])('refuses limit=%s with 400 invalid_limit', async (limit) => {
    const res = await list('/v1/test-probe/keys', { limit });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_limit', details: { min: 1, max: 100 } });
  });

  it('refuses a cursor from another endpoint, another account, or tampered, with 400 invalid_cursor', async () => {
    const cursor = (await list('/v1/test-probe/keys', { limit: 1 })).body.next_cursor as string;
    expect((await list('/v1/test-probe/other-keys', { cursor })).body.error.code).toBe('invalid_cursor');
    const stranger = await t.key((await t.account()).id, 'read');
    expect((await list('/v1/test-probe/keys', { cursor }, stranger)).body.error.code).toBe('invalid_cursor');
    const [payload, signature] = cursor.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), i: 'key_x' }),
    ).toString('base64url');
    for (const bad of [`${forged}.${signature}`, 'garbage', `${payload}.`, `${cursor}.x`]) {
      const res = await list('/v1/test-probe/keys', { cursor: bad });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
    }
  });
});
