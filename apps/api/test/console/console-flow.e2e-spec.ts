import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import { bearer, TEST_MASTER_KEY } from '../support/test-app';
import {
  type Browser,
  type ConsoleServer,
  expectAccessible,
  eventually,
  openBrowser,
  shot,
  signIn,
  startConsoleServer,
} from './console-harness';

const ROOT = join(__dirname, '..', '..', '..', '..');

/**
 * The console's "Done means" flow in real Chromium against the real API and worker: sign in, create a key and
 * use it against the API, open the deferred side's link from the API's pending action and connect PostgreSQL,
 * review (validation errors disable Start), start and watch the initial sync finish, approve one held delete
 * and ignore another.
 */
describe('console: the whole flow from key to held deletes', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let db: DataSource;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let worker: ChildProcess | null = null;
  let owner: { id: string; email: string };

  beforeAll(async () => {
    server = await startConsoleServer();
    db = server.t.app.get(DataSource);
    owner = (await server.t.account()) as { id: string; email: string };
    pg = await scratchPg(`
      CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, email text);
      INSERT INTO people VALUES (1, 'Ada Lovelace', 'ada@example.com'), (2, 'Grace Hopper', 'grace@example.com'), (3, 'Edsger Dijkstra', NULL), (4, 'Barbara Liskov', 'barbara@example.com');
    `);
    my = await scratchMysql([
      'CREATE TABLE contacts (id INT PRIMARY KEY, full_name VARCHAR(60) NOT NULL, email VARCHAR(100))',
      "INSERT INTO contacts VALUES (1, 'Ada Lovelace', 'ada@example.com'), (2, 'Grace Hopper', 'grace@example.com'), (5, 'Alan Turing', 'alan@example.com')",
    ]);
    browser = await openBrowser();
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await server?.close();
  });

  const url = (path: string) => `${server.base}${path}`;
  let secret: string;
  let syncId: string;
  const api = () => server.t.http();

  it('signs in and creates a readwrite key that works against the API', async () => {
    const { page } = browser;
    await page.goto(url('/app'));
    await signIn(page, owner.email);
    expect(await page.textContent('h1')).toBe('Your syncs');
    await page.goto(url('/app/settings/api-keys?scope=readwrite'));
    await page.fill('#key-name', 'my agent');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Create key")')]);
    secret = (await page.textContent('#new-secret'))!.trim();
    await shot(page, 'flow-api-key');
    await expectAccessible(page);
    const created = await api()
      .post('/v1/sync/syncs')
      .set(bearer(secret))
      .send({
        name: 'Contacts',
        left: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
        right: { connector: 'postgres' },
      });
    expect(created.status).toBe(201);
    syncId = created.body.id;
    expect(created.body.right).toBeNull();
    expect(created.body.pending_actions).toContainEqual(
      expect.objectContaining({
        type: 'user_authorization',
        side: 'right',
        url: url(`/app/syncs/${syncId}/connect/right`),
      }),
    );
  });

  it("connects the deferred PostgreSQL side from the pending action's link; the action disappears", async () => {
    const { page } = browser;
    const sync = (await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body;
    const action = sync.pending_actions.find((a: { type: string }) => a.type === 'user_authorization');
    await page.goto(action.url);
    expect(await page.textContent('h1')).toContain('Connect the right side');
    expect(await page.getAttribute('#auth-connectionString', 'placeholder')).toBeTruthy();
    await shot(page, 'flow-connect');
    await expectAccessible(page);
    await page.fill('#auth-connectionString', 'postgres://nobody@127.0.0.1:1/none');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list bases")')]);
    expect(await page.textContent('[role=alert]')).toBeTruthy();
    await shot(page, 'flow-connect-error');
    await expectAccessible(page);
    await page.fill('#auth-connectionString', pg.url);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list bases")')]);
    await page.selectOption('#base', pg.schema);
    await shot(page, 'flow-connect-bases');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Connect")')]);
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}/review`);
    expect(await page.textContent('[role=status]')).toContain('Connected PostgreSQL as the right side');
    const after = (await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body;
    expect(after.right).toMatchObject({ connector: 'postgres', base: { id: pg.schema }, auth_status: 'ok' });
    expect(after.pending_actions.map((a: { type: string }) => a.type)).toEqual(['user_confirmation']);
    expect(
      (
        await db.query(`SELECT connected_via FROM sync_sides WHERE sync_id = $1 AND side = 'right'`, [syncId])
      )[0].connected_via,
    ).toBe('console');
  });

  const putMappings = async (fields: object[]) => {
    const current = await api().get(`/v1/sync/syncs/${syncId}/mappings`).set(bearer(secret)).expect(200);
    await api()
      .put(`/v1/sync/syncs/${syncId}/mappings`)
      .set(bearer(secret))
      .set('If-Match', current.headers['etag'])
      .send({ tables: [{ left_table: 'contacts', right_table: 'people', direction: 'two_way', fields }] })
      .expect(200);
  };

  it('shows validation errors on the review page with Start disabled', async () => {
    const { page } = browser;
    await putMappings([
      { left_field: 'id', right_field: 'id' },
      { left_field: 'email', right_field: 'email' },
    ]);
    const reviewUrl = (await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body
      .review_url;
    await page.goto(reviewUrl);
    expect(await page.textContent('#validation-errors')).toContain('required_field_unmapped');
    expect(await page.isDisabled('#start')).toBe(true);
    await shot(page, 'flow-review-errors');
    await expectAccessible(page);
  });

  it('reviews the fixed mappings with a preview and the match field, starts, and watches the initial sync finish', async () => {
    const { page } = browser;
    await putMappings([
      { left_field: 'id', right_field: 'id' },
      { left_field: 'full_name', right_field: 'name' },
      { left_field: 'email', right_field: 'email' },
    ]);
    await page.goto(url(`/app/syncs/${syncId}/review`));
    expect(await page.locator('#validation-errors').count()).toBe(0);
    expect(await page.textContent('#pair-0 .preview')).toContain('3 record(s) on the left, 4 on the right');
    await page.selectOption('#match-0', 'id=id');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Update preview")')]);
    expect(await page.textContent('#pair-0 .preview')).toContain('2 match on the chosen field');
    expect(await page.isChecked('input[name=prefer_0][value=left]')).toBe(true);
    expect(await page.isEnabled('#start')).toBe(true);
    await shot(page, 'flow-review');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('#start')]);
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}`);
    expect(await page.textContent('#sync-status')).toContain('active');
    const started = (await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body;
    expect(started).toMatchObject({
      status: 'active',
      delete_approval: 'review_required',
      pending_actions: [],
    });
    expect(
      (await db.query(`SELECT start_options FROM syncs WHERE id = $1`, [syncId]))[0].start_options,
    ).toMatchObject({ prefer: 'left', match: [{ tablePair: 0, leftField: 'id', rightField: 'id' }] });
    // While the initial sync is preparing or running the overview updates itself in place (the console's
    // script; a meta refresh only without JavaScript). The marker shows the page is never reloaded.
    expect(await page.getAttribute('body', 'data-refresh')).toBe('2');
    expect(await page.locator('meta[http-equiv=refresh]').count()).toBe(0);
    expect(await page.content()).toContain('<noscript><meta http-equiv="refresh" content="2"></noscript>');
    await page.evaluate('window.notReloaded = true');
    await shot(page, 'flow-overview-preparing');
    await expectAccessible(page);

    worker = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
      env: {
        ...process.env,
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
        ENGINE_ACCOUNT_ID: owner.id,
        ENGINE_LEASE_SECONDS: '3',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    // The overview refreshes itself while the initial sync runs; wait for the page to say it is done.
    await eventually(
      'the overview to show the initial sync done',
      async () => (await page.textContent('#initial-sync'))?.includes('done'),
      45_000,
    );
    expect(await page.evaluate('window.notReloaded === true')).toBe(true);
    await eventually(
      'the page to stop updating',
      async () => (await page.getAttribute('body', 'data-refresh')) === null,
    );
    expect(await page.textContent('section[aria-labelledby=initial]')).toContain('Finished');
    await shot(page, 'flow-overview-done');
    await expectAccessible(page);
    const names = (await pg.sql('SELECT name FROM people ORDER BY id')).map((r) => r['name']);
    expect(names).toEqual([
      'Ada Lovelace',
      'Grace Hopper',
      'Edsger Dijkstra',
      'Barbara Liskov',
      'Alan Turing',
    ]);
  });

  it('approves one held delete and ignores another', async () => {
    const { page } = browser;
    await my.sql('DELETE FROM contacts WHERE id IN (3, 4)');
    const held = await eventually('two held deletes', async () => {
      const body = (
        await api().get(`/v1/sync/pending-deletes?sync=${syncId}`).set(bearer(secret)).expect(200)
      ).body;
      return body.data.length === 2
        ? (body.data as { record_id: string; review_url: string; record: { name: string } }[])
        : null;
    });
    const edsger = held.find((h) => h.record.name === 'Edsger Dijkstra')!;
    const barbara = held.find((h) => h.record.name === 'Barbara Liskov')!;
    await page.goto(url(`/app/syncs/${syncId}/pending-deletes`));
    expect(await page.locator(`tr[data-record="${edsger.record_id}"] td`).nth(2).textContent()).toBe(
      'contacts',
    );
    await shot(page, 'flow-pending-deletes');
    await expectAccessible(page);
    await Promise.all([
      page.waitForNavigation(),
      page.click(`tr[data-record="${edsger.record_id}"] button:has-text("Approve delete")`),
    ]);
    await Promise.all([
      page.waitForNavigation(),
      page.click(`tr[data-record="${barbara.record_id}"] button:has-text("Ignore")`),
    ]);
    expect(await page.textContent('#empty')).toContain('Nothing is waiting for review');
    await eventually(
      'the approved delete to reach PostgreSQL',
      async () => (await pg.sql('SELECT id FROM people WHERE id = 3')).length === 0,
    );
    expect(await pg.sql('SELECT name FROM people WHERE id = 4')).toEqual([{ name: 'Barbara Liskov' }]);
    await page.goto(url(`/app/syncs/${syncId}/pending-deletes?tab=ignored`));
    expect(await page.locator(`tr[data-record="${barbara.record_id}"]`).count()).toBe(1);
    await shot(page, 'flow-pending-deletes-ignored');
    await expectAccessible(page);
    await page.goto(url(`/app/syncs/${syncId}/records/${barbara.record_id}?side=right`));
    expect(await page.textContent('#main table')).toContain('Barbara Liskov');
    await shot(page, 'flow-record');
    await expectAccessible(page);
  });
});
