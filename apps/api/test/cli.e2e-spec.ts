import { cli } from './support/cli';
import { bearer, createTestApp, type TestApp } from './support/test-app';

describe('operator CLI', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('creates an account and keys, lists and revokes them, printing JSON', async () => {
    const email = `cli-${Date.now()}@example.com`;
    const created = cli('account', 'create', '--email', email, '--password', 'a long password', '--plan', 'pro', '--api-enabled', 'true', '--subscription', 'active');
    expect(created.code).toBe(0);
    const account = created.json();
    expect(account).toMatchObject({ email, plan: 'pro', api_enabled: true, subscription: 'active' });
    expect(account.id).toMatch(/^acc_[0-9a-z]{20}$/);
    expect(created.stdout).not.toContain('a long password');

    const key = cli('key', 'create', '--account', account.id, '--name', 'agent', '--scope', 'operate');
    expect(key.code).toBe(0);
    const { id, secret, scope, sync_id } = key.json();
    expect(id).toMatch(/^key_/);
    expect(secret).toMatch(/^lsk_[0-9a-z]{16}_[A-Za-z0-9_-]{43}$/);
    expect({ scope, sync_id }).toEqual({ scope: 'operate', sync_id: null });
    await t.http().get('/v1/sync/connectors').set(bearer(secret)).expect(200);

    const missingSync = cli('key', 'create', '--account', account.id, '--name', 'one sync', '--scope', 'read', '--sync', 'sync_0123456789abcdefghij');
    expect(missingSync.code).toBe(1);
    expect(missingSync.stderr).toContain('not_found');
    const syncId = await t.bareSync(account.id);
    const limited = cli('key', 'create', '--account', account.id, '--name', 'one sync', '--scope', 'read', '--sync', syncId);
    expect(limited.json().sync_id).toBe(syncId);

    const list = cli('key', 'list', '--account', account.id);
    expect(list.code).toBe(0);
    expect(list.json().data.map((k: { name: string }) => k.name)).toEqual(['one sync', 'agent']);
    expect(list.stdout).not.toContain(secret);

    const revoked = cli('key', 'revoke', '--id', id);
    expect(revoked.code).toBe(0);
    expect(revoked.json().revoked_at).not.toBeNull();
    expect((await t.http().get('/v1/sync/connectors').set(bearer(secret))).status).toBe(401);

    const updated = cli('account', 'update', '--id', account.id, '--api-enabled', 'false', '--subscription', 'none', '--plan', 'business');
    expect(updated.json()).toMatchObject({ api_enabled: false, subscription: 'none', plan: 'business' });
  });

  it('says what is wrong on stderr and exits non-zero', () => {
    const unknown = cli('account', 'explode');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command');
    const missing = cli('key', 'create', '--name', 'x', '--scope', 'read');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing --account');
    const badScope = cli('key', 'create', '--account', 'acc_x', '--name', 'x', '--scope', 'admin');
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain('invalid_request');
    const email = `dup-${Date.now()}@example.com`;
    expect(cli('account', 'create', '--email', email, '--password', 'a long password').code).toBe(0);
    const dup = cli('account', 'create', '--email', email, '--password', 'a long password');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('already exists');
    expect(dup.stdout).toBe('');
  });
});
