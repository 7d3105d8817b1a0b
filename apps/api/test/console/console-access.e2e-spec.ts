import { DataSource } from 'typeorm';
import { newId } from '@lockstep/domain';
import { bearer } from '../support/test-app';
import {
  type Browser,
  type ConsoleServer,
  expectAccessible,
  openBrowser,
  PASSWORD,
  shot,
  signIn,
  startConsoleServer,
} from './console-harness';

/** Sign-in, sessions, CSRF, account isolation, API keys and held-delete decisions in the console (real Chromium). */
describe('console: sign-in, keys, isolation, held deletes', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let owner: { id: string; email: string };
  let other: { id: string; email: string };
  let db: DataSource;

  beforeAll(async () => {
    server = await startConsoleServer();
    db = server.t.app.get(DataSource);
    owner = (await server.t.account()) as { id: string; email: string };
    other = (await server.t.account()) as { id: string; email: string };
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  const url = (path: string) => `${server.base}${path}`;

  it('sends a signed-out person to the sign-in page, refuses a wrong password, signs in to the page asked for', async () => {
    const { page } = browser;
    await page.goto(url('/app/settings/api-keys?scope=operate'));
    expect(new URL(page.url()).pathname).toBe('/app/sign-in');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/app/settings/api-keys?scope=operate');
    await shot(page, 'sign-in');
    await expectAccessible(page);
    await signIn(page, owner.email, 'not the password');
    expect(await page.textContent('[role=alert]')).toContain('The email or password is not right.');
    await shot(page, 'sign-in-wrong-password');
    await expectAccessible(page);
    expect(await db.query(`SELECT 1 FROM console_sessions WHERE account_id = $1`, [owner.id])).toHaveLength(
      0,
    );
    await signIn(page, owner.email);
    expect(page.url()).toBe(url('/app/settings/api-keys?scope=operate'));
    expect(await page.isChecked('input[name=scope][value=operate]')).toBe(true);
    const cookie = (await browser.context.cookies()).find((c) => c.name === 'lockstep_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/app' });
    // Only the token's SHA-256 is stored.
    const [stored] = await db.query(
      `SELECT encode(token_hash, 'hex') AS hash FROM console_sessions WHERE account_id = $1`,
      [owner.id],
    );
    expect(stored.hash).toHaveLength(64);
    expect(stored.hash).not.toContain(Buffer.from(cookie.value).toString('hex'));
  });

  it('makes further tries wait after 5 failed sign-ins for one email (429 page), even with the right password', async () => {
    const victim = (await server.t.account()) as { id: string; email: string };
    const page = await server.t.http().get('/app/sign-in').expect(200);
    const cookie = (page.headers['set-cookie'] as unknown as string[])
      .find((c) => c.startsWith('lockstep_csrf='))!
      .split(';')[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const attempt = (password: string) =>
      server.t
        .http()
        .post('/app/sign-in')
        .set('Cookie', cookie)
        .set('Origin', server.base)
        .type('form')
        .send({ _csrf: csrf, email: victim.email, password, next: '/app' });
    for (let i = 0; i < 5; i += 1) expect((await attempt('wrong password')).status).toBe(401);
    const locked = await attempt(PASSWORD);
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('Too many failed sign-ins');
    expect(locked.headers['set-cookie']?.toString() ?? '').not.toContain('lockstep_session=');
  });

  it('creates a key (secret shown once) that works against the API, lists it with last use, and revokes it at once', async () => {
    const { page } = browser;
    await page.goto(url('/app/settings/api-keys?scope=read'));
    await page.fill('#key-name', 'reporting agent');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Create key")')]);
    const secret = (await page.textContent('#new-secret'))!.trim();
    expect(secret).toMatch(/^lsk_/);
    await shot(page, 'api-keys-created');
    await expectAccessible(page);
    await server.t.http().get('/v1/sync/syncs').set(bearer(secret)).expect(200);
    await page.goto(url('/app/settings/api-keys'));
    expect(await page.content()).not.toContain(secret);
    const row = page.locator('tr', { hasText: 'reporting agent' });
    expect(await row.textContent()).toContain('read');
    expect(await row.locator('td').nth(4).textContent()).not.toContain('never');
    await Promise.all([page.waitForNavigation(), row.locator('button:has-text("Revoke")').click()]);
    expect(await page.textContent('[role=status]')).toContain('is revoked');
    await shot(page, 'api-keys-revoked');
    await expectAccessible(page);
    const refused = await server.t.http().get('/v1/sync/syncs').set(bearer(secret));
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
    expect(refused.body.error.required_action.url).toBe(url('/app/settings/api-keys?scope=read'));
  });

  it('refuses a form without the CSRF token and a cross-site post (403 page), changing nothing', async () => {
    const { page } = browser;
    const before = await db.query(`SELECT count(*)::int AS n FROM api_keys WHERE account_id = $1`, [
      owner.id,
    ]);
    const missing = await page.request.post(url('/app/settings/api-keys'), {
      form: { name: 'forged', scope: 'readwrite' },
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(missing.status()).toBe(403);
    expect(await missing.text()).toContain('Form expired');
    const token = await page
      .goto(url('/app/settings/api-keys'))
      .then(() => page.inputValue('input[name=_csrf] >> nth=0'));
    const crossSite = await page.request.post(url('/app/settings/api-keys'), {
      form: { _csrf: token, name: 'forged', scope: 'readwrite' },
      headers: { Origin: 'https://evil.example' },
      maxRedirects: 0,
    });
    expect(crossSite.status()).toBe(403);
    const wrong = await page.request.post(url('/app/settings/api-keys'), {
      form: { _csrf: `${token}x`, name: 'forged', scope: 'readwrite' },
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(wrong.status()).toBe(403);
    expect(
      await db.query(`SELECT count(*)::int AS n FROM api_keys WHERE account_id = $1`, [owner.id]),
    ).toEqual(before);
    // The sign-in form's double-submit token is checked too.
    const signInForged = await server.t
      .http()
      .post('/app/sign-in')
      .type('form')
      .send({ email: owner.email, password: PASSWORD, _csrf: 'a'.repeat(43) });
    expect(signInForged.status).toBe(403);
  });

  it("answers another account's sync, key and record with the 404 page, and unknown ids too", async () => {
    const { page } = browser;
    const foreign = await server.t.bareSync(other.id);
    const mine = await server.t.bareSync(owner.id);
    const foreignKey = (await server.t.keys.create(other.id, { name: 'theirs', scope: 'read' })).id;
    for (const path of [
      `/app/syncs/${foreign}`,
      `/app/syncs/${foreign}/review`,
      `/app/syncs/${foreign}/connect/right`,
      `/app/syncs/${foreign}/pending-deletes`,
      `/app/syncs/${foreign}/pending-deletes/${newId('record')}`,
      `/app/syncs/${foreign}/records/${newId('record')}?side=left`,
      `/app/syncs/${mine}/records/${newId('record')}?side=left`,
      `/app/syncs/${newId('sync')}`,
      '/app/syncs/not-an-id/review',
    ]) {
      const response = await page.goto(url(path));
      expect([path, response!.status()]).toEqual([path, 404]);
      expect(await page.textContent('h1')).toBe('Page not found');
    }
    await shot(page, 'not-found');
    await expectAccessible(page);
    const token = await page
      .goto(url('/app/settings/api-keys'))
      .then(() => page.inputValue('input[name=_csrf] >> nth=0'));
    const revokeForeign = await page.request.post(url(`/app/settings/api-keys/${foreignKey}/revoke`), {
      form: { _csrf: token },
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(revokeForeign.status()).toBe(404);
    expect(
      (await db.query(`SELECT revoked_at FROM api_keys WHERE id = $1`, [foreignKey]))[0].revoked_at,
    ).toBeNull();
  });

  it('shows held deletes with side, table and detected time; Ignore moves one to the Ignored tab, Restore and Approve decide', async () => {
    const { page } = browser;
    const syncId = await server.t.bareSync(owner.id);
    const held = async (name: string) => {
      const record = newId('record');
      const pendingDelete = newId('pendingDelete');
      await db.query(
        `INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id, right_deleted, name) VALUES ($1, $2, 0, gen_random_uuid(), $3, $4, true, $5)`,
        [record, syncId, `l-${name}`, `r-${name}`, name],
      );
      await db.query(
        `INSERT INTO pending_deletes (id, sync_id, record_id, table_pair, missing_side, delete_from_side, state) VALUES ($1, $2, $3, 0, 'right', 'left', 'awaiting_review')`,
        [pendingDelete, syncId, record],
      );
      await db.query(
        `INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor) VALUES ($1, $2, $3, 'detected', 'engine')`,
        [pendingDelete, syncId, record],
      );
      return { record, pendingDelete };
    };
    const state = async (id: string) =>
      (await db.query(`SELECT state, requested_action FROM pending_deletes WHERE id = $1`, [id]))[0];
    const ada = await held('Ada <b>Lovelace</b>');
    const grace = await held('Grace Hopper');
    await page.goto(url(`/app/syncs/${syncId}/pending-deletes`));
    const adaRow = page.locator(`tr[data-record="${ada.record}"]`);
    expect(await adaRow.locator('td').first().textContent()).toContain('Ada <b>Lovelace</b>'); // escaped, shown as text
    expect(await adaRow.locator('td').nth(1).textContent()).toBe('right');
    expect(await adaRow.locator('td').nth(3).locator('time').getAttribute('datetime')).toMatch(
      /^\d{4}-\d\d-\d\dT/,
    );
    await shot(page, 'pending-deletes');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), adaRow.locator('button:has-text("Ignore")').click()]);
    expect(await state(ada.pendingDelete)).toEqual({ state: 'ignored', requested_action: null });
    expect(await page.locator(`tr[data-record="${ada.record}"]`).count()).toBe(0);
    await page.click('a:has-text("Ignored")');
    const ignoredRow = page.locator(`tr[data-record="${ada.record}"]`);
    expect(await ignoredRow.count()).toBe(1);
    expect(await ignoredRow.locator('button:has-text("Ignore")').count()).toBe(0);
    await shot(page, 'pending-deletes-ignored');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), ignoredRow.locator('button:has-text("Restore")').click()]);
    expect(await state(ada.pendingDelete)).toEqual({ state: 'closed', requested_action: 'restore' });
    await page.goto(url(`/app/syncs/${syncId}/pending-deletes/${grace.record}`));
    await shot(page, 'pending-delete-one');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Approve delete")')]);
    expect(await state(grace.pendingDelete)).toEqual({ state: 'approved', requested_action: 'approve' });
    expect(
      (
        await db.query(
          `SELECT actor FROM pending_delete_events WHERE pending_delete_id = $1 AND kind = 'approved'`,
          [grace.pendingDelete],
        )
      )[0].actor,
    ).toBe('console');
  });

  it('shows open issues with their remediation on the overview; Retry clears one', async () => {
    const { page } = browser;
    const syncId = await server.t.bareSync(owner.id);
    const issueId = newId('issue');
    const remediation = {
      explanation: 'The app refused the write: <value too long>.',
      suggested_action: 'Shorten the value, then retry.',
      links: [],
    };
    await db.query(
      `INSERT INTO sync_issues (id, sync_id, type, code, side, connector, message, remediation, dedupe_key) VALUES ($1, $2, 'other', 'write_rejected', 'left', 'postgres', 'A write was rejected', $3, 'test')`,
      [issueId, syncId, JSON.stringify(remediation)],
    );
    await page.goto(url(`/app/syncs/${syncId}`));
    const card = page.locator('article', { hasText: 'A write was rejected' });
    expect(await card.textContent()).toContain('The app refused the write: <value too long>.');
    expect(await card.textContent()).toContain('Shorten the value, then retry.');
    await shot(page, 'overview-issue');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), card.locator('button:has-text("Retry")').click()]);
    expect(await page.textContent('[role=status]')).toContain('Retrying');
    expect(await page.locator('article', { hasText: 'A write was rejected' }).count()).toBe(0);
    expect(
      (await db.query(`SELECT resolved_at FROM sync_issues WHERE id = $1`, [issueId]))[0].resolved_at,
    ).not.toBeNull();
  });

  it('signs out: the session row is gone and console pages ask to sign in again', async () => {
    const { page } = browser;
    await page.goto(url('/app'));
    await shot(page, 'syncs');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Sign out")')]);
    expect(await page.textContent('[role=status]')).toContain('You are signed out');
    expect(await db.query(`SELECT 1 FROM console_sessions WHERE account_id = $1`, [owner.id])).toHaveLength(
      0,
    );
    await page.goto(url('/app'));
    expect(new URL(page.url()).pathname).toBe('/app/sign-in');
  });

  it('ends a session after 12 idle hours', async () => {
    const { page } = browser;
    await page.goto(url('/app'));
    await signIn(page, owner.email);
    expect(await page.textContent('h1')).toBe('Your syncs');
    await db.query(
      `UPDATE console_sessions SET last_seen_at = now() - interval '12 hours 1 minute' WHERE account_id = $1`,
      [owner.id],
    );
    await page.goto(url('/app'));
    expect(new URL(page.url()).pathname).toBe('/app/sign-in');
    expect(await db.query(`SELECT 1 FROM console_sessions WHERE account_id = $1`, [owner.id])).toHaveLength(
      0,
    );
  });
});
