import { bearer, createTestApp, type TestApp } from './support/test-app';

describe('Idempotency-Key (spec section 8)', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key((await t.account()).id, 'readwrite');
  });
  afterAll(() => t.close());

  const write = (idempotencyKey: string | null, body: object, secret = key) => {
    const req = t.http().post('/v1/test-probe/write').set(bearer(secret));
    if (idempotencyKey !== null) req.set('Idempotency-Key', idempotencyKey);
    return req.send(body);
  };

  it('replays the original status and body with Idempotent-Replayed: true', async () => {
    const first = await write('replay-1', { name: 'a', n: 1 });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBe('false');
    const again = await write('replay-1', { n: 1, name: 'a' }); // same body, other key order
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const fresh = await write(null, { name: 'a', n: 1 });
    expect(fresh.body.id).not.toBe(first.body.id);
  });

  it('refuses the same key with another body: 400 idempotency_key_reused', async () => {
    await write('reuse-1', { name: 'a' }).expect(201);
    const res = await write('reuse-1', { name: 'b' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reused' });
  });

  it('refuses a duplicate while the first still runs: 409 idempotency_key_in_use, then replays', async () => {
    const slow = write('in-use-1', { delay_ms: 800 });
    const slowDone = slow.then((r) => r);
    await new Promise((r) => setTimeout(r, 250));
    const dup = await write('in-use-1', { delay_ms: 800 });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'idempotency_key_in_use' });
    const first = await slowDone;
    expect(first.status).toBe(201);
    const replay = await write('in-use-1', { delay_ms: 800 });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
  });

  it('releases the key of a failed request so a retry runs for real', async () => {
    const failed = await write('release-1', { fail: true });
    expect(failed.status).toBe(409);
    const again = await write('release-1', { fail: true });
    expect(again.status).toBe(409);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    const other = await write('release-1', { fail: false });
    expect(other.status).toBe(201);
  });

  it('refuses a malformed or too long key: 400 invalid_idempotency_key', async () => {
    for (const bad of ['x'.repeat(256), 'has space', '']) {
      const res = await write(bad, {});
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_idempotency_key');
    }
  });

  it('keeps keys per account: another account may use the same key', async () => {
    const mine = await write('shared-key', { v: 1 });
    const otherKey = await t.key((await t.account()).id, 'readwrite');
    const theirs = await write('shared-key', { v: 2 }, otherKey);
    expect(theirs.status).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBe('false');
    expect(theirs.body.id).not.toBe(mine.body.id);
  });
});
