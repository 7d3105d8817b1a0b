import { DataSource } from 'typeorm';
import { findConnector } from '@lockstep/connectors-registry';
import { ConnectorCatalog } from '../../src/connectors/connector-catalog';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import { bearer } from '../support/test-app';
import {
  type Browser,
  type ConsoleServer,
  expectAccessible,
  openBrowser,
  shot,
  signIn,
  startConsoleServer,
} from './console-harness';

/**
 * Creating a sync from the console in real Chromium against the real API and databases: the name, each side's
 * app from the catalogue (one above the plan shown with the plan that unlocks it), the declared credential
 * fields, the bases from the live list, and the errors at their field (`invalid_auth` with the app's reason,
 * `base_not_found`).
 */
describe('console: new sync', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let db: DataSource;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let owner: { id: string; email: string };
  let other: { id: string; email: string };

  const url = (path: string) => `${server.base}${path}`;

  beforeAll(async () => {
    server = await startConsoleServer();
    db = server.t.app.get(DataSource);
    server.t.app.get(ConnectorCatalog).add({
      ...findConnector('postgres')!,
      type: 'postgres_enterprise',
      displayName: 'PostgreSQL Enterprise',
      plan: 'business',
    });
    owner = (await server.t.account()) as { id: string; email: string };
    other = (await server.t.account()) as { id: string; email: string };
    pg = await scratchPg(`CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL);`);
    my = await scratchMysql(['CREATE TABLE contacts (id INT PRIMARY KEY, full_name VARCHAR(60) NOT NULL)']);
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await server?.close();
  });

  const submit = async (button: string) => {
    const { page } = browser;
    await Promise.all([page.waitForNavigation(), page.click(button)]);
  };

  it('asks for a name and both apps, showing an app above the plan with the plan that unlocks it', async () => {
    const { page } = browser;
    await page.goto(url('/app'));
    await signIn(page, owner.email);
    await submit('#new-sync');
    expect(new URL(page.url()).pathname).toBe('/app/syncs/new');
    const locked = page.locator('#left-connector-postgres_enterprise');
    expect(await locked.isDisabled()).toBe(true);
    expect(await page.textContent('#left-connector-postgres_enterprise-plan')).toBe(
      'needs the business plan',
    );
    await shot(page, 'new-sync');
    await expectAccessible(page);
    await submit('button:has-text("Continue")');
    expect(await page.textContent('#name-error')).toContain('Give the sync a name');
    expect(await page.getAttribute('#name', 'aria-invalid')).toBe('true');
    expect(await page.textContent('#left-connector-error')).toContain("Pick the left side's app");
    // A forged choice of the locked app is refused at the field, with the plan.
    const token = await page.inputValue('input[name=_csrf]');
    const forged = await page.request.post(url('/app/syncs/new'), {
      form: {
        _csrf: token,
        name: 'x',
        left_connector: 'postgres_enterprise',
        right_connector: 'mysql',
        step: 'apps',
      },
      headers: { Origin: server.base },
    });
    expect(forged.status()).toBe(400);
    expect(await forged.text()).toContain('PostgreSQL Enterprise needs the business plan.');
  });

  it('shows the declared credential fields, the app refusing them at the side, then the live bases', async () => {
    const { page } = browser;
    await page.fill('#name', 'People');
    await page.check('#left-connector-mysql');
    await page.check('#right-connector-postgres');
    await submit('button:has-text("Continue")');
    expect(await page.getAttribute('#left-auth-connectionString', 'placeholder')).toBeTruthy();
    await page.fill('#left-auth-connectionString', my.url);
    const wrong = new URL(pg.url);
    wrong.password = 'not-the-password';
    wrong.username = 'nobody_here';
    await page.fill('#right-auth-connectionString', wrong.toString());
    await submit('#check');
    expect(await page.textContent('#right-auth-error')).toContain('The app rejected the credentials:');
    expect(await page.getAttribute('#right-auth-connectionString', 'aria-describedby')).toBe(
      'right-auth-error',
    );
    expect(await page.locator('#left-auth-error').count()).toBe(0);
    await shot(page, 'new-sync-invalid-auth');
    await expectAccessible(page);
    await page.fill('#right-auth-connectionString', pg.url);
    await submit('#check');
    expect(await page.locator('#left-base option').allTextContents()).toContain(my.database);
    await page.selectOption('#left-base', my.database);
    await page.selectOption('#right-base', pg.schema);
    await shot(page, 'new-sync-bases');
    await expectAccessible(page);
  });

  it('shows base_not_found at the base when the schema went away, then creates the sync', async () => {
    const { page } = browser;
    const gone = await scratchPg('');
    await page.fill('#right-auth-connectionString', gone.url);
    await submit('button:has-text("Check again")');
    await page.selectOption('#right-base', gone.schema);
    await gone.drop();
    await submit('#create');
    expect(await page.textContent('#right-base-error')).toContain('reach no base');
    expect(await page.getAttribute('#right-base', 'aria-invalid')).toBe('true');
    await shot(page, 'new-sync-base-not-found');
    await expectAccessible(page);
    // With an error on the page, the credentials are checked again before Create is offered.
    expect(await page.locator('#create').count()).toBe(0);
    await submit('#check');
    await page.selectOption('#left-base', my.database);
    await page.selectOption('#right-base', pg.schema);
    await submit('#create');
    expect(await page.textContent('[role=status]')).toContain('Created the sync People');
    const syncId = new URL(page.url()).pathname.split('/').pop()!;
    const secret = await server.t.key(owner.id, 'read');
    const sync = (await server.t.http().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body;
    expect(sync).toMatchObject({
      name: 'People',
      status: 'draft',
      left: { connector: 'mysql', base: { id: my.database } },
      right: { connector: 'postgres', base: { id: pg.schema } },
    });
    // Another account does not see it.
    const theirs = await server.t.key(other.id, 'read');
    await server.t.http().get(`/v1/sync/syncs/${syncId}`).set(bearer(theirs)).expect(404);
    expect((await db.query(`SELECT account_id FROM syncs WHERE id = $1`, [syncId]))[0].account_id).toBe(
      owner.id,
    );
  });

  it('can be filled in with the keyboard alone, the focus always visible', async () => {
    const { page } = browser;
    await page.goto(url('/app/syncs/new'));
    const focused = () =>
      page.evaluate(`(() => {
        const el = document.activeElement;
        const style = getComputedStyle(el);
        return { id: el.id, tag: el.tagName, outline: style.outlineStyle, width: parseFloat(style.outlineWidth) };
      })()`) as Promise<{ id: string; tag: string; outline: string; width: number }>;
    /** Tabs forward until the element is focused; every element passed on the way shows its focus. */
    const tabTo = async (id: string) => {
      for (let i = 0; i < 40; i += 1) {
        await page.keyboard.press('Tab');
        const now = await focused();
        expect([now.id || now.tag, now.outline !== 'none' && now.width > 0]).toEqual([
          now.id || now.tag,
          true,
        ]);
        if (now.id === id) return;
      }
      throw new Error(`Tab never reached #${id}`);
    };
    await tabTo('name');
    await page.keyboard.type('Keyboard');
    await tabTo('left-connector-postgres');
    await page.keyboard.press('ArrowDown');
    expect(await page.isChecked('#left-connector-mysql')).toBe(true);
    await tabTo('right-connector-postgres');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    expect((await focused()).tag).toBe('BUTTON');
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect(await page.inputValue('#name')).toBe('Keyboard');
    expect(await page.locator('#left-auth-connectionString').count()).toBe(1);
    expect(await page.locator('#right-auth-connectionString').count()).toBe(1);
  });

  it('refuses the form without the CSRF token (403), creating nothing', async () => {
    const { page } = browser;
    const before = await db.query(`SELECT count(*)::int AS n FROM syncs WHERE account_id = $1`, [owner.id]);
    const forged = await page.request.post(url('/app/syncs/new'), {
      form: { name: 'Forged', left_connector: 'mysql', right_connector: 'postgres', step: 'create' },
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect(await db.query(`SELECT count(*)::int AS n FROM syncs WHERE account_id = $1`, [owner.id])).toEqual(
      before,
    );
  });
});
