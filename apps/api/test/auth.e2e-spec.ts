import type { Scope } from '@lockstep/contracts';
import { bearer, createTestApp, type TestApp } from './support/test-app';

describe('authentication and authorization (spec section 5)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers a request without a key with 401 missing_api_key and a user_api_key action naming the scope', async () => {
    const res = await t.http().get('/v1/test-probe/read');
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({
      type: 'authentication_error',
      code: 'missing_api_key',
      doc_url: 'http://lockstep.test/docs/errors/missing_api_key',
      required_action: {
        type: 'user_api_key',
        audience: 'end_user',
        action: 'open_in_browser',
        side: null,
        url: 'http://lockstep.test/app/settings/api-keys?scope=read',
      },
    });
    expect(res.body.error.required_action.instruction).toContain('"read"');
    const write = await t.http().post('/v1/test-probe/write').send({});
    expect(write.body.error.required_action.url).toBe(
      'http://lockstep.test/app/settings/api-keys?scope=readwrite',
    );
  });

  it('answers unknown, malformed, non-bearer and revoked keys identically with 401 invalid_api_key', async () => {
    const account = await t.account();
    const valid = await t.key(account.id, 'read');
    const revoked = await t.keys.create(account.id, { name: 'to revoke', scope: 'read' });
    await t.keys.revoke(revoked.id);
    const unknown = valid.slice(0, -43) + 'A'.repeat(43);
    const headers = [
      bearer(unknown),
      bearer('not-a-key'),
      { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      bearer(revoked.secret),
    ];
    const bodies = [];
    for (const h of headers) {
      const res = await t.http().get('/v1/test-probe/read').set(h);
      expect(res.status).toBe(401);
      bodies.push(res.body);
    }
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(bodies[0].error).toMatchObject({
      type: 'authentication_error',
      code: 'invalid_api_key',
      required_action: { type: 'user_api_key' },
    });
  });

  const matrix: [Scope, string, string, number][] = [
    ['read', 'get', '/v1/test-probe/read', 200],
    ['read', 'post', '/v1/test-probe/validate', 200],
    ['read', 'post', '/v1/test-probe/operate', 403],
    ['read', 'post', '/v1/test-probe/write', 403],
    ['operate', 'get', '/v1/test-probe/read', 200],
    ['operate', 'post', '/v1/test-probe/operate', 202],
    ['operate', 'post', '/v1/test-probe/write', 403],
    ['readwrite', 'get', '/v1/test-probe/read', 200],
    ['readwrite', 'post', '/v1/test-probe/operate', 202],
    ['readwrite', 'post', '/v1/test-probe/write', 201],
  ];
  it.each(matrix)('a %s key on %s %s gets %i', async (scope, method, path, status) => {
    const account = await t.account();
    const secret = await t.key(account.id, scope);
    const req = method === 'get' ? t.http().get(path) : t.http().post(path).send({});
    const res = await req.set(bearer(secret));
    expect(res.status).toBe(status);
    if (status === 403) {
      expect(res.body.error).toMatchObject({ type: 'permission_error', code: 'insufficient_scope' });
      const needed = path.endsWith('operate') ? 'operate' : 'readwrite';
      expect(res.body.error.message).toContain(`"${needed}"`);
      expect(res.body.error.message).toContain(`"${scope}"`);
      expect(res.body.error.details).toEqual({ required_scope: needed, key_scope: scope });
    }
  });

  it('refuses a one-sync key on endpoints not about one existing sync, and lets it read', async () => {
    const account = await t.account();
    const syncId = await t.bareSync(account.id);
    const secret = await t.key(account.id, 'readwrite', syncId);
    const write = await t.http().post('/v1/test-probe/write').set(bearer(secret)).send({});
    expect(write.status).toBe(403);
    expect(write.body.error).toMatchObject({ type: 'permission_error', code: 'sync_restricted_key' });
    const read = await t.http().get('/v1/test-probe/read').set(bearer(secret));
    expect(read.status).toBe(200);
    expect(read.body.sync_id).toBe(syncId);
    const connectors = await t.http().get('/v1/sync/connectors').set(bearer(secret));
    expect(connectors.status).toBe(200);
  });

  it('refuses an account not admitted to the API with 403 public_api_not_enabled (not a requires_action)', async () => {
    const account = await t.account({ apiEnabled: false });
    const secret = await t.key(account.id, 'readwrite');
    const res = await t.http().get('/v1/test-probe/read').set(bearer(secret));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ type: 'permission_error', code: 'public_api_not_enabled' });
    expect(res.body.error.required_action).toBeUndefined();
    await t.accounts.update(account.id, { apiEnabled: true });
    expect((await t.http().get('/v1/test-probe/read').set(bearer(secret))).status).toBe(200);
  });

  it('refuses creating or changing without a subscription with 403 subscription_required, reads still work', async () => {
    const account = await t.account({ subscription: 'none' });
    const secret = await t.key(account.id, 'readwrite');
    const write = await t.http().post('/v1/test-probe/write').set(bearer(secret)).send({});
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('subscription_required');
    expect((await t.http().get('/v1/test-probe/read').set(bearer(secret))).status).toBe(200);
  });

  it('stops accepting a key revoked mid-session on the very next request', async () => {
    const account = await t.account();
    const created = await t.keys.create(account.id, { name: 'session', scope: 'read' });
    expect((await t.http().get('/v1/test-probe/read').set(bearer(created.secret))).status).toBe(200);
    await t.keys.revoke(created.id);
    const after = await t.http().get('/v1/test-probe/read').set(bearer(created.secret));
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('invalid_api_key');
  });

  it('records last_used_at and never returns the secret in listings', async () => {
    const account = await t.account();
    const created = await t.keys.create(account.id, { name: 'tracked', scope: 'read' });
    expect(created.last_used_at).toBeNull();
    await t.http().get('/v1/test-probe/read').set(bearer(created.secret)).expect(200);
    const [listed] = await t.keys.list(account.id);
    expect(listed.last_used_at).not.toBeNull();
    expect(JSON.stringify(listed)).not.toContain(created.secret);
  });
});
