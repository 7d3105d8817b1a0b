/**
 * "Sign in with Airtable", end to end: real headless Chromium, the built API process (openid-client is
 * ESM-only) with `OAUTH_CLIENTS` registering Airtable and `AIRTABLE_API_URL` / `AIRTABLE_OAUTH_URL` pointing at
 * the Airtable simulator, whose authorize page and token endpoint follow Airtable's OAuth reference. A person
 * connects a deferred Airtable side by signing in (PKCE S256); the side keeps that method; its access token,
 * expired, is renewed once and saved encrypted, and the API restarted uses the saved tokens without renewing
 * again. Screenshots: artifacts/screenshots/console-airtable-oauth-*.
 */
import type { Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';
import { CredentialCipher, sideOwner } from '@lockstep/persistence';
import { scratchPg, type ScratchPg } from '../support/scratch-dbs';
import { createTestApp, type TestApp } from '../support/test-app';
import { type Browser, expectAccessible, openBrowser, PASSWORD, shot, signIn } from './console-harness';
import { type BuiltApi, startBuiltApi } from './oauth-harness';

const CLIENT_ID = 'lockstep-airtable-console-test';
const CLIENT_SECRET = 'airtable-console-secret-0123456789';

interface Action {
  type: string;
  side: string | null;
  connector?: string;
  url: string;
}
interface Sync {
  id: string;
  left: { connector: string } | null;
  right: { connector: string; auth_method: string; base: { id: string; name: string } } | null;
  pending_actions: Action[];
}

describe('console: sign in with Airtable (OAuth 2 with PKCE against the simulator)', () => {
  let simulator: AirtableSimulator;
  let built: BuiltApi;
  let t: TestApp;
  let db: DataSource;
  let pg: ScratchPg;
  let browser: Browser | undefined;
  const owner = { email: '', key: '' };

  beforeAll(async () => {
    simulator = await AirtableSimulator.start({ perBasePerSecond: 1000, perTokenPerSecond: 1000 });
    const base = simulator.addBase('Sales');
    simulator.addTable(base, 'Deals', [{ name: 'Name', type: 'singleLineText' }]);
    [built, t, pg] = await Promise.all([
      startBuiltApi((origin) => {
        simulator.registerIntegration({
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
          redirectUris: [`${origin}/app/oauth/callback`],
        });
        return {
          AIRTABLE_API_URL: simulator.url,
          AIRTABLE_OAUTH_URL: simulator.url,
          OAUTH_CLIENTS: JSON.stringify({ airtable: { client_id: CLIENT_ID, client_secret: CLIENT_SECRET } }),
        };
      }),
      createTestApp(),
      scratchPg('CREATE TABLE deals (id serial PRIMARY KEY, name text)'),
    ]);
    db = t.app.get(DataSource);
    owner.email = `airtable-oauth-${process.pid}-${Date.now()}@example.com`;
    const account = await t.accounts.create({ email: owner.email, password: PASSWORD });
    owner.key = await t.key(account.id, 'readwrite');
  }, 120_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await Promise.all([built?.close(), t?.close(), pg?.drop()]);
    await simulator?.close();
  });

  const storedCredentials = async (syncId: string, side: string): Promise<Record<string, string>> => {
    const rows: { credentials: Buffer }[] = await db.query(
      `SELECT credentials FROM sync_sides WHERE sync_id = $1 AND side = $2`,
      [syncId, side],
    );
    return t.app.get(CredentialCipher).decrypt(rows[0]!.credentials, sideOwner(syncId, side));
  };

  async function signInWithAirtable(page: Page, connectUrl: string): Promise<void> {
    await page.goto(connectUrl);
    // Not connected yet: both ways are offered.
    expect(await page.isVisible('button:has-text("Sign in with Airtable")')).toBe(true);
    expect(await page.isVisible('#auth-apiKey')).toBe(true);
    await shot(page, 'airtable-oauth-connect-page');
    await expectAccessible(page);
    await Promise.all([
      page.waitForURL(`${simulator.url}/oauth2/v1/authorize?**`),
      page.click('button:has-text("Sign in with Airtable")'),
    ]);
    const authorize = new URL(page.url());
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      client_id: CLIENT_ID,
      redirect_uri: `${built.base}/app/oauth/callback`,
      response_type: 'code',
      code_challenge_method: 'S256',
      scope: 'data.records:read data.records:write schema.bases:read schema.bases:write webhook:manage',
    });
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await shot(page, 'airtable-oauth-consent');
    await Promise.all([
      page.waitForURL(`${built.base}/app/syncs/**/review**`),
      page.click('button:has-text("Grant access")'),
    ]);
  }

  it('a person signs in with Airtable and the deferred side connects, keeping that method; renewed tokens are saved and used after a restart', async () => {
    const created = await built.api<Sync>('POST', '/v1/sync/syncs', owner.key, {
      name: 'Deals both ways',
      left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
      right: { connector: 'airtable' },
    });
    expect(created.status).toBe(201);
    const sync = created.body;
    expect(sync.right).toBeNull();
    const action = sync.pending_actions.find((candidate) => candidate.type === 'user_authorization')!;
    expect(action).toMatchObject({ side: 'right', connector: 'airtable' });

    browser = await openBrowser();
    const page = browser.page;
    await page.goto(action.url);
    await signIn(page, owner.email);
    await signInWithAirtable(page, action.url);
    expect(await page.textContent('main')).toContain('Connected Airtable (Sales) as the right side');
    expect(simulator.oauth.exchanges).toBe(1);

    const connected = (await built.api<Sync>('GET', `/v1/sync/syncs/${sync.id}`, owner.key)).body;
    expect(connected.right).toMatchObject({
      connector: 'airtable',
      auth_method: 'oauth',
      base: { name: 'Sales' },
    });
    expect(connected.pending_actions.some((candidate) => candidate.type === 'user_authorization')).toBe(
      false,
    );
    const first = await storedCredentials(sync.id, 'right');
    expect(Object.keys(first).sort()).toEqual([
      'access_token',
      'expires_at',
      'refresh_token',
      'scope',
      'token_type',
    ]);

    // Spec 2.6 and rule 6 of 4.2: a signed-in side cannot be switched to a pasted token.
    const rotated = await built.api<{ error: { code: string } }>(
      'PATCH',
      `/v1/sync/syncs/${sync.id}`,
      owner.key,
      {
        right: { auth: { apiKey: 'patSOMETHING.0123' } },
      },
    );
    expect([rotated.status, rotated.body.error.code]).toEqual([400, 'invalid_auth']);
    // The connect page offers signing in again only.
    await page.goto(action.url);
    expect(await page.isVisible('button:has-text("Sign in with Airtable")')).toBe(true);
    expect(await page.isVisible('#auth-apiKey')).toBe(false);

    // An hour later the access token has expired: the next live read renews it once and saves the new tokens.
    simulator.advanceClock(61 * 60_000);
    const bases = () =>
      built.api<{ data: { name: string }[] }>(
        'GET',
        `/v1/sync/syncs/${sync.id}/sides/right/bases`,
        owner.key,
      );
    const listed = await bases();
    expect(listed.status).toBe(200);
    expect(simulator.oauth.refreshes).toBe(1);
    const renewed = await storedCredentials(sync.id, 'right');
    expect(renewed['access_token']).not.toBe(first['access_token']);
    expect(renewed['refresh_token']).not.toBe(first['refresh_token']);

    // The API restarts (nothing kept in memory): it reads the saved tokens and renews nothing.
    await built.restart();
    expect((await bases()).status).toBe(200);
    expect(simulator.oauth.refreshes).toBe(1);
    expect((await storedCredentials(sync.id, 'right'))['access_token']).toBe(renewed['access_token']);
    // The refresh token the renewal spent is refused: renewing twice would have broken the side.
    const reused = await fetch(`${simulator.url}/oauth2/v1/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first['refresh_token']! }),
    });
    expect([reused.status, ((await reused.json()) as { error: string }).error]).toEqual([
      400,
      'invalid_grant',
    ]);
  }, 120_000);

  it('the new-sync page offers signing in with Airtable after creating the sync; the side then connects by sign-in', async () => {
    const page = browser!.page;
    const submit = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)]);
    await page.goto(`${built.base}/app/syncs/new`);
    await page.fill('#name', 'Deals signed in');
    await page.check('#left-connector-postgres');
    await page.check('#right-connector-airtable');
    await submit('button:has-text("Continue")');
    // Airtable offers both: a token now, or signing in once the sync exists.
    expect(await page.isVisible('#right-auth-apiKey')).toBe(true);
    await page.check('#right-method-sign_in');
    await page.fill('#left-auth-connectionString', pg.url);
    await submit('#check');
    expect(await page.isVisible('#right-auth-apiKey')).toBe(false);
    expect(await page.textContent('#right-method')).toContain(
      'Sign in with Airtable after creating the sync',
    );
    await shot(page, 'airtable-oauth-new-sync');
    await expectAccessible(page);
    await page.selectOption('#left-base', pg.schema);
    await submit('#create');
    const syncId = new URL(page.url()).pathname.split('/').pop()!;
    const created = (await built.api<Sync>('GET', `/v1/sync/syncs/${syncId}`, owner.key)).body;
    expect(created.right).toBeNull();
    const action = created.pending_actions.find((candidate) => candidate.type === 'user_authorization')!;
    expect(action).toMatchObject({ side: 'right', connector: 'airtable' });
    await signInWithAirtable(page, action.url);
    const connected = (await built.api<Sync>('GET', `/v1/sync/syncs/${syncId}`, owner.key)).body;
    expect(connected.right).toMatchObject({ connector: 'airtable', auth_method: 'oauth' });
  }, 120_000);
});
