import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Bull from 'bull';
import { recordLocalRuntime } from '@lockstep/config';
import { QUEUES, SYNC_JOBS } from '@lockstep/jobs';
import { cli, cliWithExactEnv } from './support/cli';
import { scratchMysql, scratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, TEST_MASTER_KEY, type TestApp } from './support/test-app';

/** The `activate` jobs for this sync in the `syncs` queue under a Redis key prefix, whatever their state. */
async function activateJobs(prefix: string, syncId: string): Promise<number> {
  const queue = new Bull(QUEUES.syncs, process.env.REDIS_URL!, { prefix });
  try {
    const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'paused']);
    return jobs.filter((job) => job?.name === SYNC_JOBS.activate && job.data.syncId === syncId).length;
  } finally {
    await queue.close();
  }
}

describe('operator CLI', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('creates an account and keys, lists and revokes them, printing JSON', async () => {
    const email = `cli-${Date.now()}@example.com`;
    const created = cli(
      'account',
      'create',
      '--email',
      email,
      '--password',
      'a long password',
      '--plan',
      'pro',
      '--api-enabled',
      'true',
      '--subscription',
      'active',
    );
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

    const missingSync = cli(
      'key',
      'create',
      '--account',
      account.id,
      '--name',
      'one sync',
      '--scope',
      'read',
      '--sync',
      'sync_0123456789abcdefghij',
    );
    expect(missingSync.code).toBe(1);
    expect(missingSync.stderr).toContain('not_found');
    const syncId = await t.bareSync(account.id);
    const limited = cli(
      'key',
      'create',
      '--account',
      account.id,
      '--name',
      'one sync',
      '--scope',
      'read',
      '--sync',
      syncId,
    );
    expect(limited.json().sync_id).toBe(syncId);

    const list = cli('key', 'list', '--account', account.id);
    expect(list.code).toBe(0);
    expect(list.json().data.map((k: { name: string }) => k.name)).toEqual(['one sync', 'agent']);
    expect(list.stdout).not.toContain(secret);

    const revoked = cli('key', 'revoke', '--id', id);
    expect(revoked.code).toBe(0);
    expect(revoked.json().revoked_at).not.toBeNull();
    expect((await t.http().get('/v1/sync/connectors').set(bearer(secret))).status).toBe(401);

    const updated = cli(
      'account',
      'update',
      '--id',
      account.id,
      '--api-enabled',
      'false',
      '--subscription',
      'none',
      '--plan',
      'business',
    );
    expect(updated.json()).toMatchObject({ api_enabled: false, subscription: 'none', plan: 'business' });
  });

  it('run next to npm start, uses its settings: sync start queues its job under its QUEUE_PREFIX, not lockstep:', async () => {
    const pg = await scratchPg(
      'CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL, email varchar(200))',
    );
    const my = await scratchMysql([
      'CREATE TABLE contacts (id int AUTO_INCREMENT PRIMARY KEY, full_name varchar(200) NOT NULL, email varchar(200))',
    ]);
    const home = mkdtempSync(join(tmpdir(), 'lockstep-home-'));
    const prefix = `lockstep-cli-${randomBytes(4).toString('hex')}`;
    try {
      const write = await t.key((await t.account()).id, 'readwrite');
      const left = { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema };
      const right = { connector: 'mysql', auth: { connectionString: my.url }, base: my.database };
      const sync = (
        await t
          .http()
          .post('/v1/sync/syncs')
          .set(bearer(write))
          .send({ name: 'Prefix', left, right })
          .expect(201)
      ).body;
      const fields = [
        { left_field: 'name', right_field: 'full_name' },
        { left_field: 'email', right_field: 'email' },
      ];
      const tables = [{ left_table: 'people', right_table: 'contacts', direction: 'two_way', fields }];
      await t
        .http()
        .put(`/v1/sync/syncs/${sync.id}/mappings`)
        .set(bearer(write))
        .send({ tables })
        .expect(200);

      // What `npm start` records when run with a non-default prefix; the CLI's environment sets none of it.
      recordLocalRuntime(home, {
        DATABASE_URL: process.env.DATABASE_URL,
        REDIS_URL: process.env.REDIS_URL,
        QUEUE_PREFIX: prefix,
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
      });
      const {
        DATABASE_URL: _store,
        REDIS_URL: _redis,
        QUEUE_PREFIX: _prefix,
        LOCKSTEP_MASTER_KEY: _key,
        ...shell
      } = process.env;
      const started = cliWithExactEnv({ ...shell, LOCKSTEP_HOME: home }, 'sync', 'start', '--id', sync.id);
      expect(started.stderr).toBe('');
      expect(started.json()).toMatchObject({ id: sync.id, status: 'active' });

      expect(await activateJobs(prefix, sync.id)).toBe(1);
      expect(await activateJobs('lockstep', sync.id)).toBe(0);
      expect(await activateJobs(process.env.QUEUE_PREFIX!, sync.id)).toBe(0);
    } finally {
      const queue = new Bull(QUEUES.syncs, process.env.REDIS_URL!, { prefix });
      await queue.obliterate({ force: true }).finally(() => queue.close());
      rmSync(home, { recursive: true, force: true });
      await Promise.all([pg.drop(), my.drop()]);
    }
  });

  it('says what is wrong on stderr and exits non-zero', () => {
    const unknown = cli('account', 'explode');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command');
    const missing = cli('key', 'create', '--name', 'x', '--scope', 'read');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing --account');
    const misspelt = cli(
      'sync',
      'start',
      '--id',
      'sync_0123456789abcdefghij',
      '--delete_approval',
      'auto_approve',
    );
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toContain('"sync start" takes no --delete_approval');
    expect(misspelt.stderr).toContain('[--delete-approval review_required|auto_approve]');
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
