/**
 * "Connect an app" for an `oauth` side, end to end: real headless Chromium, the built API process with the
 * stand-in connector plugin, and a real OAuth 2.0 / OpenID Connect authorization server (oidc-provider) whose
 * login and consent pages stand in for the app's sign-in. Screenshots: artifacts/screenshots/console-oauth-*.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { CredentialCipher, markCredentialRejected, sideOwner } from '@lockstep/persistence';
import { scratchPg, type ScratchPg } from '../support/scratch-dbs';
import { createTestApp, type TestApp } from '../support/test-app';
import { type Browser, expectAccessible, openBrowser, PASSWORD, shot, signIn } from './console-harness';
import { PROVIDER_PASSWORD, type OAuthWorld, startApi, startOAuthWorld } from './oauth-harness';

interface Action {
  type: string;
  side: string | null;
  connector?: string;
  url: string;
}
interface Side {
  connector: string;
  auth_method: string;
  base: { id: string; name: string };
  auth_status: string;
  connected_at: string;
}
interface Sync {
  id: string;
  open_issues: number;
  left: Side | null;
  right: Side | null;
  pending_actions: Action[];
}

describe('console: connect an oauth side (browser sign-in)', () => {
  let world: OAuthWorld;
  let t: TestApp;
  let db: DataSource;
  let pg: ScratchPg;
  const owner = { email: '', key: '' };
  const stranger = { email: '', key: '' };
  const browsers: Browser[] = [];

  beforeAll(async () => {
    [world, t, pg] = await Promise.all([
      startOAuthWorld(),
      createTestApp(),
      scratchPg('CREATE TABLE contacts (id serial PRIMARY KEY, name text)'),
    ]);
    db = t.app.get(DataSource);
    for (const person of [owner, stranger]) {
      person.email = `oauth-${person === owner ? 'owner' : 'stranger'}-${process.pid}-${Date.now()}@example.com`;
      const account = await t.accounts.create({ email: person.email, password: PASSWORD });
      person.key = await t.key(account.id, 'readwrite');
    }
  }, 60_000);

  afterEach(async () => {
    await Promise.all(browsers.splice(0).map((browser) => browser.close().catch(() => undefined)));
  });

  afterAll(async () => {
    await Promise.all([world?.close(), t?.close(), pg?.drop()]);
  });

  /** A fresh browser (no cookies at Lockstep or at the app) signed in to the console. */
  async function browserFor(email: string): Promise<Page> {
    const browser = await openBrowser();
    browsers.push(browser);
    await browser.page.goto(`${world.base}/app/sign-in`);
    await signIn(browser.page, email);
    return browser.page;
  }

  async function createSync(
    right: string,
    left: Record<string, unknown> = {
      connector: 'postgres',
      auth: { connectionString: pg.url },
      base: pg.schema,
    },
  ): Promise<Sync> {
    const created = await world.api<Sync>('POST', '/v1/sync/syncs', owner.key, {
      name: `OAuth ${right}`,
      left,
      right: { connector: right },
    });
    expect(created.status).toBe(201);
    return created.body;
  }

  const getSync = async (id: string): Promise<Sync> =>
    (await world.api<Sync>('GET', `/v1/sync/syncs/${id}`, owner.key)).body;
  const connectAction = (sync: Sync) =>
    sync.pending_actions.find((action) => action.type === 'user_authorization');
  const flowsOf = async (syncId: string) =>
    Number(
      (await db.query(`SELECT count(*) AS n FROM console_oauth_flows WHERE sync_id = $1`, [syncId]))[0].n,
    );
  const storedSide = async (syncId: string, side: string) =>
    (
      await db.query(
        `SELECT connector, auth_status, credentials, connected_via FROM sync_sides WHERE sync_id = $1 AND side = $2`,
        [syncId, side],
      )
    )[0] as {
      connector: string;
      auth_status: string;
      credentials: Buffer | null;
      connected_via: string | null;
    };

  /** From the connect page: "Sign in with ...", then the app's login page. */
  async function startSignIn(
    page: Page,
    connectUrl: string,
    appName = 'Stand-in App',
    screenshots = false,
  ): Promise<void> {
    await page.goto(connectUrl);
    if (screenshots) await shot(page, 'oauth-connect-page');
    await expectAccessible(page);
    await Promise.all([
      page.waitForURL(`${world.issuer}/interaction/**`),
      page.click(`button:has-text("Sign in with ${appName}")`),
    ]);
  }

  async function appLogin(page: Page, user: string, screenshots = false): Promise<void> {
    await page.fill('#username', user);
    await page.fill('#password', PROVIDER_PASSWORD);
    if (screenshots) await shot(page, 'oauth-app-sign-in');
    await Promise.all([
      page.waitForSelector('button:has-text("Allow")'),
      page.click('button:has-text("Sign in")'),
    ]);
    if (screenshots) await shot(page, 'oauth-app-consent');
  }

  /**
   * Clicks Allow at the app and returns the callback URL the app redirected the browser to, without opening it.
   * The callback is a hop in a redirect chain, which Playwright's routing does not see; the DevTools protocol's
   * Fetch domain pauses every request, redirect hops included.
   */
  async function allowAndCatchCallback(page: Page): Promise<string> {
    const cdp = await page.context().newCDPSession(page);
    const caught = new Promise<string>((resolve) => {
      cdp.on('Fetch.requestPaused', (event: { requestId: string; request: { url: string } }) => {
        resolve(event.request.url);
        void cdp
          .send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'Aborted' })
          .catch(() => undefined);
      });
    });
    await cdp.send('Fetch.enable', { patterns: [{ urlPattern: `${world.base}/app/oauth/callback*` }] });
    await page.click('button:has-text("Allow")').catch(() => undefined);
    const callback = await Promise.race([
      caught,
      new Promise<string>((resolve) => setTimeout(() => resolve(''), 10_000)),
    ]);
    await cdp.send('Fetch.disable');
    await cdp.detach();
    expect(callback).toMatch(/[?&]code=/);
    return callback;
  }

  /** Opens a URL and returns the HTTP status of the page it shows. */
  async function open(page: Page, url: string): Promise<number> {
    const response = await page.goto(url);
    return response!.status();
  }

  it('signs in at the app, consents, lands on the review page; the side is connected and its pending action gone', async () => {
    const sync = await createSync('standin_oauth');
    expect(sync.right).toBeNull();
    const action = connectAction(sync)!;
    expect(action).toMatchObject({
      side: 'right',
      connector: 'standin_oauth',
      url: `${world.base}/app/syncs/${sync.id}/connect/right`,
    });

    // The pending action's link first asks the person to sign in to Lockstep as the account's owner.
    const browser = await openBrowser();
    browsers.push(browser);
    const page = browser.page;
    await page.goto(action.url);
    expect(new URL(page.url()).pathname).toBe('/app/sign-in');
    await signIn(page, owner.email);
    expect(page.url()).toBe(action.url);

    const callbacks: string[] = [];
    const authorizations: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${world.base}/app/oauth/callback`)) callbacks.push(request.url());
      if (request.url().startsWith(`${world.issuer}/auth?`)) authorizations.push(request.url());
    });
    await startSignIn(page, action.url, 'Stand-in App', true);
    // The authorization request: PKCE S256, state, nonce, the declared scopes, our redirect URI.
    expect(authorizations).toHaveLength(1);
    const authorize = new URL(authorizations[0]!).searchParams;
    expect(Object.fromEntries(authorize)).toMatchObject({
      response_type: 'code',
      client_id: 'lockstep-console-test',
      redirect_uri: `${world.base}/app/oauth/callback`,
      scope: 'openid profile workspaces',
      code_challenge_method: 'S256',
    });
    expect(authorize.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.get('state')).toBeTruthy();
    expect(authorize.get('nonce')).toBeTruthy();

    await page.fill('#username', 'ada');
    await page.fill('#password', 'wrong password');
    await page.click('button:has-text("Sign in")');
    await page.waitForSelector('text=Wrong username or password.');
    await appLogin(page, 'ada', true);
    await Promise.all([
      page.waitForURL(`${world.base}/app/syncs/${sync.id}/review**`),
      page.click('button:has-text("Allow")'),
    ]);
    await page.waitForSelector('[role=status]');
    expect(await page.textContent('[role=status]')).toContain(
      'Connected Stand-in App (Analytical Engine) as the right side.',
    );
    await shot(page, 'oauth-connected-review');
    await expectAccessible(page);

    const after = await getSync(sync.id);
    expect(after.right).toMatchObject({
      connector: 'standin_oauth',
      auth_method: 'oauth',
      base: { id: 'ws_engine', name: 'Analytical Engine' },
      auth_status: 'ok',
    });
    expect(after.pending_actions.map((a) => a.type)).toEqual(['user_confirmation']);
    const stored = await storedSide(sync.id, 'right');
    expect(stored.connected_via).toBe('console');
    const credentials = t.app.get(CredentialCipher).decrypt(stored.credentials!, sideOwner(sync.id, 'right'));
    expect(Object.keys(credentials).sort()).toEqual([
      'access_token',
      'expires_at',
      'refresh_token',
      'scope',
      'token_type',
    ]);
    expect(credentials['scope']).toContain('workspaces');
    expect(Date.parse(credentials['expires_at']!)).toBeGreaterThan(Date.now());
    expect(await flowsOf(sync.id)).toBe(0);

    // The app's redirect, replayed: the state was used once, so nothing happens.
    expect(callbacks).toHaveLength(1);
    const callback = new URL(callbacks[0]!);
    expect(callback.searchParams.get('state')).toBeTruthy();
    expect(callback.searchParams.get('iss')).toBe(world.issuer);
    expect(await open(page, callbacks[0]!)).toBe(400);
    expect(await page.textContent('h1')).toBe('This sign-in cannot be completed');
    await shot(page, 'oauth-replayed-state');
    await expectAccessible(page);
    expect((await getSync(sync.id)).right!.connected_at).toBe(after.right!.connected_at);
  });

  it('a denied consent shows a page with "Try again" and stores nothing', async () => {
    const sync = await createSync('standin_oauth');
    const page = await browserFor(owner.email);
    await startSignIn(page, connectAction(sync)!.url);
    await appLogin(page, 'ada');
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().startsWith(`${world.base}/app/oauth/callback`)),
      page.click('button:has-text("Deny")'),
    ]);
    expect(response.status()).toBe(403);
    expect(new URL(response.url()).searchParams.get('error')).toBe('access_denied');
    await page.waitForSelector('h1');
    expect(await page.textContent('h1')).toBe('Stand-in App was not connected');
    expect(await page.textContent('main')).toContain('access was not granted');
    await shot(page, 'oauth-denied');
    await expectAccessible(page);
    expect((await getSync(sync.id)).right).toBeNull();
    expect((await storedSide(sync.id, 'right')).credentials).toBeNull();
    expect(await flowsOf(sync.id)).toBe(0);
    await Promise.all([
      page.waitForURL(`${world.base}/app/syncs/${sync.id}/connect/right`),
      page.click('a:has-text("Try again")'),
    ]);
  });

  it('a forged state and a tampered code get readable pages, never a 500, and store nothing', async () => {
    const sync = await createSync('standin_oauth');
    const page = await browserFor(owner.email);
    expect(await open(page, `${world.base}/app/oauth/callback?code=made-up&state=forged-state`)).toBe(400);
    expect(await page.textContent('h1')).toBe('This sign-in cannot be completed');
    await shot(page, 'oauth-forged-state');
    await expectAccessible(page);
    expect(await open(page, `${world.base}/app/oauth/callback`)).toBe(400);

    await startSignIn(page, connectAction(sync)!.url);
    await appLogin(page, 'ada');
    const callback = new URL(await allowAndCatchCallback(page));
    callback.searchParams.set('code', 'tampered-code');
    expect(await open(page, callback.href)).toBe(502);
    expect(await page.textContent('h1')).toBe('Signing in to Stand-in App did not finish');
    expect(await page.textContent('main')).toMatch(/invalid_grant|grant request is invalid/);
    await shot(page, 'oauth-token-error');
    await expectAccessible(page);
    expect((await getSync(sync.id)).right).toBeNull();
    expect((await storedSide(sync.id, 'right')).credentials).toBeNull();
    expect(await flowsOf(sync.id)).toBe(0);
  });

  it("another account's session can neither start nor finish the owner's sign-in", async () => {
    const sync = await createSync('standin_oauth');
    const strangerPage = await browserFor(stranger.email);
    // Start: a valid form of the stranger's own session, for the owner's sync: the console 404 page.
    await strangerPage.goto(`${world.base}/app`);
    const [response] = await Promise.all([
      strangerPage.waitForResponse((r) => r.url() === `${world.base}/app/oauth/start`),
      // A real form submission from a page of the stranger's console (their CSRF token, same origin).
      strangerPage.evaluate(`(() => {
        const form = document.createElement('form');
        form.method = 'post';
        form.action = '/app/oauth/start';
        const fields = { _csrf: document.querySelector('input[name=_csrf]').value, sync: ${JSON.stringify(sync.id)}, side: 'right' };
        for (const [name, value] of Object.entries(fields)) {
          const input = document.createElement('input');
          input.type = 'hidden';
          input.name = name;
          input.value = value;
          form.appendChild(input);
        }
        document.body.appendChild(form);
        form.submit();
      })()`),
    ]);
    expect(response.status()).toBe(404);
    await shot(strangerPage, 'oauth-other-account-start');
    expect(await flowsOf(sync.id)).toBe(0);

    // Finish: the owner's callback URL opened in the stranger's session finds no flow and consumes nothing.
    const ownerPage = await browserFor(owner.email);
    await startSignIn(ownerPage, connectAction(sync)!.url);
    await appLogin(ownerPage, 'ada');
    const callback = await allowAndCatchCallback(ownerPage);
    expect(await open(strangerPage, callback)).toBe(400);
    expect(await strangerPage.textContent('h1')).toBe('This sign-in cannot be completed');
    await shot(strangerPage, 'oauth-other-account-callback');
    expect((await getSync(sync.id)).right).toBeNull();
    expect(await flowsOf(sync.id)).toBe(1);

    // The owner's own session still completes it.
    await Promise.all([
      ownerPage.waitForURL(`${world.base}/app/syncs/${sync.id}/review**`),
      ownerPage.goto(callback),
    ]);
    expect((await getSync(sync.id)).right).toMatchObject({
      connector: 'standin_oauth',
      base: { id: 'ws_engine' },
    });
  });

  it('with both sides unconnected, the side signed in first takes the left slot (one-side-is-left rule)', async () => {
    const sync = await createSync('standin_oauth', { connector: 'postgres' });
    expect(
      sync.pending_actions.filter((a) => a.type === 'user_authorization').map((a) => [a.side, a.connector]),
    ).toEqual([
      ['left', 'postgres'],
      ['right', 'standin_oauth'],
    ]);
    const page = await browserFor(owner.email);
    await startSignIn(page, `${world.base}/app/syncs/${sync.id}/connect/right`);
    await appLogin(page, 'ada');
    await Promise.all([
      page.waitForURL(`${world.base}/app/syncs/${sync.id}/review**`),
      page.click('button:has-text("Allow")'),
    ]);
    expect(await page.textContent('[role=status]')).toContain('as the left side');
    const after = await getSync(sync.id);
    expect(after.left).toMatchObject({ connector: 'standin_oauth', auth_method: 'oauth', auth_status: 'ok' });
    expect(after.right).toBeNull();
    expect(
      after.pending_actions.filter((a) => a.type === 'user_authorization').map((a) => [a.side, a.connector]),
    ).toEqual([['right', 'postgres']]);
    const left = await storedSide(sync.id, 'left');
    expect(
      Object.keys(t.app.get(CredentialCipher).decrypt(left.credentials!, sideOwner(sync.id, 'left'))),
    ).toContain('access_token');
  });

  it('an app account with several bases picks one after signing in', async () => {
    const sync = await createSync('standin_oauth');
    const page = await browserFor(owner.email);
    await startSignIn(page, connectAction(sync)!.url);
    await appLogin(page, 'ben');
    await Promise.all([
      page.waitForURL(`${world.base}/app/oauth/callback**`),
      page.click('button:has-text("Allow")'),
    ]);
    await page.waitForSelector('text=Choose what to sync');
    await shot(page, 'oauth-choose-base');
    await expectAccessible(page);
    expect((await getSync(sync.id)).right).toBeNull();
    await page.check('input[value=ws_post]');
    await Promise.all([
      page.waitForURL(`${world.base}/app/syncs/${sync.id}/review**`),
      page.click('button:has-text("Use this base")'),
    ]);
    expect(await page.textContent('[role=status]')).toContain(
      'Connected Stand-in App (Post Office) as the right side.',
    );
    expect((await getSync(sync.id)).right).toMatchObject({
      connector: 'standin_oauth',
      base: { id: 'ws_post', name: 'Post Office' },
    });
    expect(await flowsOf(sync.id)).toBe(0);
  });

  it('a side whose credentials broke is reconnected by signing in again, with the account that owns its base', async () => {
    const sync = await createSync('standin_oauth');
    let page = await browserFor(owner.email);
    await startSignIn(page, connectAction(sync)!.url);
    await appLogin(page, 'ada');
    await Promise.all([
      page.waitForURL(`${world.base}/app/syncs/${sync.id}/review**`),
      page.click('button:has-text("Allow")'),
    ]);
    const connected = await getSync(sync.id);
    // The app rejects the stored token later on (what the engine or a schema read records).
    await markCredentialRejected(db, {
      syncId: sync.id,
      side: 'right',
      connector: 'standin_oauth',
      connectorName: 'Stand-in App',
      reason: 'token revoked',
      reconnectUrl: `${world.base}/app/syncs/${sync.id}/connect/right`,
    });
    const broken = await getSync(sync.id);
    expect(broken.right!.auth_status).toBe('error');
    expect(broken.open_issues).toBe(1);
    const reconnect = connectAction(broken)!;
    expect(reconnect.url).toBe(`${world.base}/app/syncs/${sync.id}/connect/right`);

    // Signed in to the app as someone who cannot reach the side's base: refused, nothing changes.
    page = await browserFor(owner.email);
    await startSignIn(page, reconnect.url);
    await appLogin(page, 'ben');
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.url().startsWith(`${world.base}/app/oauth/callback`)),
      page.click('button:has-text("Allow")'),
    ]);
    expect(refused.status()).toBe(409);
    expect(await page.textContent('h1')).toBe('Sign in with the account that owns this base');
    await shot(page, 'oauth-reconnect-wrong-account');
    await expectAccessible(page);
    expect((await getSync(sync.id)).right!.auth_status).toBe('error');

    page = await browserFor(owner.email);
    await startSignIn(page, reconnect.url);
    await appLogin(page, 'ada');
    await Promise.all([
      page.waitForURL(`${world.base}/app/syncs/${sync.id}/review**`),
      page.click('button:has-text("Allow")'),
    ]);
    expect(await page.textContent('[role=status]')).toContain(
      'Reconnected Stand-in App (Analytical Engine) as the right side.',
    );
    const fixed = await getSync(sync.id);
    expect(fixed.right).toMatchObject({
      auth_status: 'ok',
      base: { id: 'ws_engine' },
      connected_at: connected.right!.connected_at,
    });
    expect(fixed.open_issues).toBe(0);
    expect(connectAction(fixed)).toBeUndefined();
  });

  it('the API refuses to start with a broken plugin or a client registration for an unknown connector', async () => {
    const broken = await startApi({ CONNECTOR_PLUGINS: join(__dirname, 'fixtures', 'no-such-plugin.js') });
    expect(broken.code).not.toBe(0);
    expect(broken.output).toContain('connector plugin');
    expect(broken.output).toContain('no module found');
    const typo = await startApi({
      OAUTH_CLIENTS: JSON.stringify({ standin_oath: { client_id: 'x', client_secret: 'y' } }),
    });
    expect(typo.code).not.toBe(0);
    expect(typo.output).toContain('OAUTH_CLIENTS: no connector "standin_oath" is offered');
  });

  it('an oauth connector without a client registration shows a page for the operator, not a crash', async () => {
    const sync = await createSync('standin_unset');
    const page = await browserFor(owner.email);
    await page.goto(connectAction(sync)!.url);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${world.base}/app/oauth/start`),
      page.click('button:has-text("Sign in with Unregistered App")'),
    ]);
    expect(response.status()).toBe(503);
    expect(await page.textContent('h1')).toBe('Unregistered App sign-in is not set up');
    expect(await page.textContent('main')).toContain('OAUTH_CLIENTS under "standin_unset"');
    await shot(page, 'oauth-not-configured');
    await expectAccessible(page);
    expect(await flowsOf(sync.id)).toBe(0);
  });
});
