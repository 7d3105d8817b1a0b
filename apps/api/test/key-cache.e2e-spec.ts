/**
 * Verified keys are cached per API process (one Redis round trip per request, no store query). A change that can
 * refuse a key applies on the next request in every process when made through Lockstep (API, console, operator
 * CLI: they bump the key generation the rate limit reads), and within API_KEY_CACHE_SECONDS when made in the
 * store directly. The instances trust a verified key for ten minutes here, so only the generation can explain a
 * refusal (an operator CLI run takes longer than the default ten seconds on a busy machine).
 */
import { DataSource } from 'typeorm';
import { cli } from './support/cli';
import { bearer, createTestApp, type TestApp } from './support/test-app';

describe('cached key verification', () => {
  // Two API instances on one store and one Redis, each with its own cache.
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp({ API_KEY_CACHE_SECONDS: 300 });
    b = await createTestApp({ API_KEY_CACHE_SECONDS: 300 });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  /** A key both instances have verified and cached. */
  async function warmKey(scope: 'read' | 'readwrite' = 'read') {
    const account = await a.account();
    const created = await a.keys.create(account.id, { name: 'cached', scope });
    for (const t of [a, b, a, b])
      expect((await t.http().get('/v1/test-probe/read').set(bearer(created.secret))).status).toBe(200);
    return { accountId: account.id, id: created.id, secret: created.secret };
  }

  it('refuses a key revoked in one instance on the next request to the other', async () => {
    const key = await warmKey();
    await a.keys.revoke(key.id);
    const after = await b.http().get('/v1/test-probe/read').set(bearer(key.secret));
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('invalid_api_key');
    expect(after.headers['ratelimit-limit']).toBeUndefined();
  });

  it('refuses a key revoked by the operator CLI (another process) on the next request', async () => {
    const key = await warmKey();
    expect(cli('key', 'revoke', '--id', key.id).code).toBe(0);
    for (const t of [a, b])
      expect((await t.http().get('/v1/test-probe/read').set(bearer(key.secret))).status).toBe(401);
  });

  it('applies an account change made by the operator CLI on the next request', async () => {
    const key = await warmKey();
    expect(cli('account', 'update', '--id', key.accountId, '--api-enabled', 'false').code).toBe(0);
    for (const t of [a, b]) {
      const refused = await t.http().get('/v1/test-probe/read').set(bearer(key.secret));
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('public_api_not_enabled');
    }
  });

  it('refuses a key revoked directly in the store within API_KEY_CACHE_SECONDS, and not through the cache before', async () => {
    const bound = 3;
    const c = await createTestApp({ API_KEY_CACHE_SECONDS: bound });
    try {
      const key = await warmKey();
      await c.http().get('/v1/test-probe/read').set(bearer(key.secret)).expect(200);
      const cachedAt = Date.now();
      await a.app.get(DataSource).query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [key.id]);
      // Without a generation bump the instance with the long cache still serves the key from its cache.
      expect((await b.http().get('/v1/test-probe/read').set(bearer(key.secret))).status).toBe(200);
      let status = 200;
      while (status === 200 && Date.now() - cachedAt < (bound + 5) * 1000) {
        status = (await c.http().get('/v1/test-probe/read').set(bearer(key.secret))).status;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(status).toBe(401);
    } finally {
      await c.close();
    }
  });
});
