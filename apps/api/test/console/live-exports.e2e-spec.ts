import {
  scratchMysql,
  scratchPg,
  uniqueName,
  type ScratchMysql,
  type ScratchPg,
} from '../support/scratch-dbs';
import { addLiveExportTestConnectors, pgSource } from '../support/live-export';
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
 * Live exports in the console, in real Chromium against the real API, PostgreSQL (source) and MariaDB
 * (destination): the deferred destination's pending action opens a page that connects it (the action goes),
 * the list and overview, the readable refusals (already connected, plan without live export, browser sign-in
 * connectors), 404 for another account's export, and the console 404 page for unknown `/app` paths.
 */
describe('console: live exports', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let owner: { id: string; email: string };
  let key: string;

  beforeAll(async () => {
    server = await startConsoleServer();
    addLiveExportTestConnectors(server.t);
    owner = (await server.t.account({ plan: 'business' })) as { id: string; email: string };
    key = await server.t.key(owner.id, 'readwrite');
    pg = await scratchPg(
      `CREATE TABLE customers (id integer PRIMARY KEY, email text); INSERT INTO customers VALUES (1, 'ada@example.com');`,
    );
    my = await scratchMysql();
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await server?.close();
  });

  const url = (path: string) => `${server.base}${path}`;
  const api = () => server.t.http();
  const follow = (link: string) => link.replace(server.base, '');
  const createDeferred = async (name: string, destination: object = { connector: 'mysql' }) => {
    const created = await api()
      .post('/v1/live-export/live-exports')
      .set(bearer(key))
      .send({ name, source: pgSource(pg), destination });
    expect(created.status).toBe(201);
    return created.body as {
      id: string;
      pending_actions: { type: string; side: string; url: string }[];
      mappings_url: string;
      save_url: string;
      schedule_url: string;
      trigger_url: string;
    };
  };
  let lexId: string;

  it("connects the deferred MariaDB destination from the pending action's link, with a location; the action disappears", async () => {
    const lex = await createDeferred('Customers to MariaDB');
    lexId = lex.id;
    expect(lex.pending_actions).toEqual([
      expect.objectContaining({
        type: 'user_authorization',
        side: 'destination',
        url: url(`/app/live-exports/${lex.id}/connect/destination`),
      }),
    ]);

    const { page } = browser;
    await page.goto(lex.pending_actions[0]!.url);
    await signIn(page, owner.email);
    expect(new URL(page.url()).pathname).toBe(`/app/live-exports/${lex.id}/connect/destination`);
    expect(await page.textContent('h1')).toBe('Connect the destination of "Customers to MariaDB"');
    expect(await page.getAttribute('#auth-connectionString', 'placeholder')).toBeTruthy();
    expect(await page.getAttribute('label[for=auth-connectionString] a', 'href')).toMatch(/^https:\/\//);
    await shot(page, 'live-export-connect');
    await expectAccessible(page);

    // Credentials that do not work: the app's reason, nothing stored.
    await page.fill('#auth-connectionString', 'mysql://nobody@127.0.0.1:1/none');
    const refused = await Promise.all([
      page.waitForNavigation(),
      page.click('button:has-text("Check and list locations")'),
    ]);
    expect(refused[0]!.status()).toBe(400);
    expect(await page.textContent('[role=alert]')).toContain('destination');
    await shot(page, 'live-export-connect-error');
    await expectAccessible(page);

    await page.fill('#auth-connectionString', my.url);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list locations")')]);
    const offered = await page.$$eval('#pick option', (options) =>
      options.map((o) => o.getAttribute('value')),
    );
    expect(offered).toContain(my.database);
    await page.selectOption('#pick', my.database);
    await shot(page, 'live-export-connect-locations');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Connect")')]);
    expect(new URL(page.url()).pathname).toBe(`/app/live-exports/${lex.id}`);
    expect(await page.textContent('[role=status]')).toContain('Connected MySQL / MariaDB as the destination');
    expect(await page.textContent('#side-destination')).toContain(my.database);
    expect(await page.textContent('#side-destination')).toContain('connected');
    await shot(page, 'live-export-overview-connected');
    await expectAccessible(page);

    const after = (await api().get(`/v1/live-export/live-exports/${lex.id}`).set(bearer(key)).expect(200))
      .body;
    expect(after.destination).toMatchObject({ connector: 'mysql', connected: true, location: my.database });
    expect(after.pending_actions).toEqual([]);
  });

  it('shows mappings, saved state, schedule and runs on the overview and the list', async () => {
    const lex = (await api().get(`/v1/live-export/live-exports/${lexId}`).set(bearer(key)).expect(200)).body;
    const destinationTable = uniqueName('customers');
    await api()
      .put(follow(lex.mappings_url))
      .set(bearer(key))
      .set('If-Match', '"1"')
      .send({
        tables: [
          {
            source_table: 'customers',
            destination_table: destinationTable,
            fields: [{ source_field: 'id', primary: true }, { source_field: 'email' }],
          },
        ],
      })
      .expect(200);
    await api().post(follow(lex.save_url)).set(bearer(key)).expect(200);
    await api().patch(follow(lex.schedule_url)).set(bearer(key)).send({ cadence: 'hourly' }).expect(200);
    const run = (await api().post(follow(lex.trigger_url)).set(bearer(key)).send({}).expect(202)).body;
    const RUN_STATE = /queued|running|succeeded|failed|canceled/;

    const { page } = browser;
    await page.goto(url(`/app/live-exports/${lexId}`));
    expect(await page.textContent('#mappings-summary')).toContain('1 table(s), 2 field(s) mapped');
    expect(await page.textContent('#mapped-tables')).toContain(destinationTable);
    expect(await page.textContent('#schedule-text')).toContain('Hourly');
    expect(await page.textContent('#run-list tbody tr')).toMatch(RUN_STATE);
    expect(await page.textContent('#run-list tbody tr')).toContain('manual');
    expect(await page.$$('#run-list tbody tr')).toHaveLength(1);
    await shot(page, 'live-export-overview');
    await expectAccessible(page);

    await page.click('nav >> text=Live exports');
    expect(new URL(page.url()).pathname).toBe('/app/live-exports');
    const row = await page.textContent(`#live-exports tr:has(a[href="/app/live-exports/${lexId}"])`);
    expect(row).toContain('Customers to MariaDB');
    expect(row).toContain('PostgreSQL');
    expect(row).toContain('saved');
    expect(row).toContain('Hourly');
    expect(row).toMatch(RUN_STATE);
    await shot(page, 'live-export-list');
    await expectAccessible(page);
    // No worker runs here: take the queued run (and its job) back.
    await api().post(`/v1/live-export/runs/${run.id}/cancel`).set(bearer(key)).send({});
  });

  it('connects a deferred PostgreSQL source with its base picker', async () => {
    const created = await api()
      .post('/v1/live-export/live-exports')
      .set(bearer(key))
      .send({
        name: 'Source later',
        source: { connector: 'postgres' },
        destination: { connector: 'mysql', auth: { connectionString: my.url }, location: my.database },
      })
      .expect(201);
    const action = created.body.pending_actions.find((a: { side: string }) => a.side === 'source');
    const { page } = browser;
    await page.goto(action.url);
    expect(await page.textContent('h1')).toBe('Connect the source of "Source later"');
    await page.fill('#auth-connectionString', pg.url);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list bases")')]);
    await page.selectOption('#pick', pg.schema);
    await shot(page, 'live-export-connect-source');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Connect")')]);
    expect(await page.textContent('[role=status]')).toContain('Connected PostgreSQL as the source');
    const after = (
      await api().get(`/v1/live-export/live-exports/${created.body.id}`).set(bearer(key)).expect(200)
    ).body;
    expect(after.source).toMatchObject({ connected: true, base: pg.schema });
    expect(after.pending_actions).toEqual([]);
  });

  it('answers a connect of an already connected side with a readable message (409), and says browser sign-in is not available', async () => {
    const lex = await createDeferred('Raced');
    const { page } = browser;
    await page.goto(url(`/app/live-exports/${lex.id}/connect/destination`));
    await page.fill('#auth-connectionString', my.url);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list locations")')]);
    await page.selectOption('#pick', my.database);
    // Meanwhile the agent completes the side over the API.
    await api()
      .patch(`/v1/live-export/live-exports/${lex.id}`)
      .set(bearer(key))
      .send({ destination: { auth: { connectionString: my.url }, location: my.database } })
      .expect(200);
    const [raced] = await Promise.all([page.waitForNavigation(), page.click('button:has-text("Connect")')]);
    expect(raced!.status()).toBe(409);
    expect(await page.textContent('[role=alert]')).toContain('The destination is already connected');
    expect(await page.$('#auth-connectionString')).toBeNull();
    await shot(page, 'live-export-already-connected');
    await expectAccessible(page);

    const oauth = await createDeferred('Browser sign-in', { connector: 'fake_oauth_export' });
    await page.goto(oauth.pending_actions[0]!.url);
    expect(await page.textContent('#oauth-unavailable')).toContain(
      'Browser sign-in for live export sides is not available',
    );
    await shot(page, 'live-export-oauth');
    await expectAccessible(page);
  });

  it("gives another account the 404 page for the owner's export, and a plan without live export a readable page", async () => {
    const stranger = (await server.t.account({ plan: 'business' })) as { id: string; email: string };
    const other = await openBrowser();
    try {
      const { page } = other;
      await page.goto(url('/app/live-exports'));
      await signIn(page, stranger.email);
      expect(await page.textContent('#no-live-exports')).toContain('No live exports yet');
      for (const path of [
        `/app/live-exports/${lexId}`,
        `/app/live-exports/${lexId}/connect/destination`,
        '/app/live-exports/lex_00000000000000000000',
        '/app/live-exports/nonsense/connect/source',
      ]) {
        const response = await page.goto(url(path));
        expect([path, response!.status(), await page.textContent('h1')]).toEqual([
          path,
          404,
          'Page not found',
        ]);
      }
      await shot(page, 'live-export-not-found');
      await expectAccessible(page);
      await server.t.accounts.update(stranger.id, { plan: 'free' });
      const gated = await page.goto(url('/app/live-exports'));
      expect(gated!.status()).toBe(403);
      expect(await page.textContent('h1')).toBe('Live export is not available');
      expect(await page.textContent('main')).toContain('pro or business plan');
      await shot(page, 'live-export-unavailable');
      await expectAccessible(page);
    } finally {
      await other.close();
    }
    // The owner's side of it: an unknown side name is a 404 too.
    const response = await browser.page.goto(url(`/app/live-exports/${lexId}/connect/left`));
    expect(response!.status()).toBe(404);
  });

  it('renders the console 404 page for unknown /app paths, signed in or not; the API keeps its JSON 404', async () => {
    const { page } = browser;
    const response = await page.goto(url('/app/no-such-page/here'));
    expect(response!.status()).toBe(404);
    expect(response!.headers()['content-type']).toMatch(/^text\/html/);
    expect(await page.textContent('h1')).toBe('Page not found');
    expect(await page.textContent('.who')).toBe(owner.email);
    await shot(page, 'live-export-unknown-path');
    await expectAccessible(page);

    const anonymous = await api().get('/app/nowhere').expect(404);
    expect(anonymous.headers['content-type']).toMatch(/^text\/html/);
    expect(anonymous.text).toContain('Page not found');
    const json = await api().get('/v1/nowhere').expect(404);
    expect(json.body.error.code).toBe('not_found');
    // Existing routes are not shadowed.
    await api().get('/app/sign-in').expect(200);
    await api().get('/app/assets/console.css').expect(200);
  });
});
