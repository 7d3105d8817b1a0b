import { liveExportWorld, type LiveExportWorld } from '../support/live-export-worker';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import { bearer } from '../support/test-app';
import {
  type Browser,
  eventually,
  expectAccessible,
  freePort,
  openBrowser,
  shot,
  signIn,
} from './console-harness';

const ROWS = 3000;

/**
 * A live export set up entirely in the console, in real Chromium against the real API, worker (its schedule
 * test clock on), PostgreSQL (source) and MariaDB (destination): create, connect both sides, choose tables and
 * fields (a refused document explained at its table, a stale version explained), save, a daily schedule in a
 * time zone (a wrong zone explained at its field), Run now then cancel while no worker runs, and a scheduled
 * run watched to the end on the overview and a manual one on its run page, both updating in place; CSRF and
 * the 404 for other accounts on the new pages.
 */
describe('console: sets up a scheduled live export and watches a run', () => {
  let w: LiveExportWorld;
  let base: string;
  let browser: Browser;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let owner: { id: string; email: string };
  let key: string;
  let lexId: string;

  const url = (path: string) => `${base}${path}`;
  const api = () => w.t.http();
  const schedule = async () =>
    (await api().get(`/v1/live-export/live-exports/${lexId}/schedule`).set(bearer(key)).expect(200)).body;
  const runsOf = async (): Promise<{ id: string }[]> =>
    (await api().get(`/v1/live-export/runs?live_export=${lexId}`).set(bearer(key)).expect(200)).body.data;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    w = await liveExportWorld({ PUBLIC_URL: base });
    await w.t.app.listen(port, '127.0.0.1');
    owner = (await w.t.account({ plan: 'business' })) as { id: string; email: string };
    key = await w.t.key(owner.id, 'readwrite');
    pg = await scratchPg(`
      CREATE TABLE customers (id integer PRIMARY KEY, full_name text, email text, note text);
      INSERT INTO customers SELECT n, 'Customer ' || n, 'c' || n || '@example.com', NULL FROM generate_series(1, ${ROWS}) n;
      CREATE TABLE audit (id integer PRIMARY KEY, what text);
    `);
    my = await scratchMysql();
    // A clock long before any slot: nothing is due until the test moves it.
    await w.setClock('2000-01-01T00:00:00Z');
    browser = await openBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await w?.close();
  });

  it('creates the export and connects both sides from the console', async () => {
    const { page } = browser;
    await page.goto(url('/app/live-exports'));
    await signIn(page, owner.email);
    await Promise.all([page.waitForNavigation(), page.click('#new-live-export')]);
    expect(new URL(page.url()).pathname).toBe('/app/live-exports/new');
    await shot(page, 'live-export-new');
    await expectAccessible(page);
    // Nothing chosen: each field says what it needs (the browser's own check is bypassed by posting directly).
    const token = await page.inputValue('input[name=_csrf]');
    const empty = await page.request.post(url('/app/live-exports/new'), {
      form: { _csrf: token, name: '', source: '', destination: '' },
      headers: { Origin: base },
    });
    expect(empty.status()).toBe(400);
    expect(await empty.text()).toContain('Give the live export a name.');
    const long = await page.request.post(url('/app/live-exports/new'), {
      form: { _csrf: token, name: 'x'.repeat(1000), source: 'postgres', destination: 'mysql' },
      headers: { Origin: base },
    });
    expect(long.status()).toBe(400);
    expect(await long.text()).toContain('At most');

    await page.fill('#new-name', 'Customers');
    await page.selectOption('#new-source', 'postgres');
    await page.selectOption('#new-destination', 'mysql');
    await Promise.all([page.waitForNavigation(), page.click('#create')]);
    expect(new URL(page.url()).pathname).toMatch(/^\/app\/live-exports\/lex_\w+\/connect\/source$/);
    lexId = new URL(page.url()).pathname.split('/')[3]!;
    await page.fill('#auth-connectionString', pg.url);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list bases")')]);
    await page.selectOption('#pick', pg.schema);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Connect")')]);
    expect(await page.textContent('[role=status]')).toContain('Connected PostgreSQL as the source');
    await Promise.all([page.waitForNavigation(), page.click('section[aria-labelledby=todo] a')]);
    await page.fill('#auth-connectionString', my.url);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Check and list locations")')]);
    await page.selectOption('#pick', my.database);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Connect")')]);
    expect(await page.textContent('#side-destination')).toContain(my.database);
    expect(await page.textContent('#mappings-summary')).toContain('Nothing is mapped yet');
    await shot(page, 'live-export-created');
    await expectAccessible(page);
  });

  it('maps a table, explains a refused document at its table and a stale version, and saves', async () => {
    const { page } = browser;
    await Promise.all([page.waitForNavigation(), page.click('#edit-mappings')]);
    expect(await page.textContent('#no-tables')).toContain('No table chosen yet');
    await page.check('label:has-text("customers") input');
    await Promise.all([page.waitForNavigation(), page.click('#show-fields')]);
    expect(await page.textContent('#table-0 legend')).toBe('customers');
    // The primary key is the row id by default; every field is ticked.
    expect(await page.isChecked('#t0-f0-primary')).toBe(true);
    await shot(page, 'live-export-map');
    await expectAccessible(page);
    // Two fields to one column: refused, explained at the table, the form keeps what was sent.
    await page.fill('#t0-dest', 'customers_copy');
    await page.fill('#t0-f2-dest', 'full_name');
    const [refused] = await Promise.all([page.waitForNavigation(), page.click('#store-mappings')]);
    expect(refused!.status()).toBe(400);
    expect(await page.textContent('#map-issues')).toContain('Not stored');
    expect(await page.textContent('#t0-issues')).toContain('duplicate_field_name');
    expect(await page.getAttribute('#table-0', 'aria-describedby')).toBe('t0-issues');
    expect(await page.inputValue('#t0-dest')).toBe('customers_copy');
    await shot(page, 'live-export-map-refused');
    await expectAccessible(page);
    // Leave out `note`, name the email column, store.
    await page.fill('#t0-f2-dest', 'email_address');
    await page.uncheck('#t0-f3');
    await Promise.all([page.waitForNavigation(), page.click('#store-mappings')]);
    expect(await page.textContent('[role=status]')).toContain('Mappings stored (version 2)');
    expect(await page.textContent('#mapped-tables')).toContain('customers_copy');
    expect(await page.textContent('#mapped-tables')).toContain('email_address');
    expect(await page.textContent('#mapped-tables')).not.toContain('note');

    // Someone else stores mappings while the page is open: a clear message, their version shown.
    await page.goto(url(`/app/live-exports/${lexId}/map`));
    const current = await api().get(`/v1/live-export/live-exports/${lexId}/mappings`).set(bearer(key));
    await api()
      .put(`/v1/live-export/live-exports/${lexId}/mappings`)
      .set(bearer(key))
      .set('If-Match', current.headers['etag'])
      .send({
        tables: [
          {
            source_table: 'customers',
            destination_table: 'customers_copy',
            fields: [
              { source_field: 'id', primary: true },
              { source_field: 'full_name' },
              { source_field: 'email', destination_field: 'email_address' },
              { source_field: 'note' },
            ],
          },
        ],
      })
      .expect(200);
    await page.uncheck('#t0-f1');
    const [stale] = await Promise.all([page.waitForNavigation(), page.click('#store-mappings')]);
    expect(stale!.status()).toBe(409);
    expect(await page.textContent('#map-error')).toContain('Someone else changed the mappings');
    expect(await page.isChecked('#t0-f3')).toBe(true);
    await shot(page, 'live-export-map-stale');
    await expectAccessible(page);

    await page.goto(url(`/app/live-exports/${lexId}`));
    await Promise.all([page.waitForNavigation(), page.click('#save')]);
    expect(await page.textContent('[role=status]')).toContain('Saved version 3: 1 table(s) ready');
    const columns = (await my.sql(
      `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = '${my.database}' AND table_name = 'customers_copy'`,
    )) as { c: string }[];
    expect(columns.map((c) => c.c)).toEqual(
      expect.arrayContaining(['id', 'full_name', 'email_address', 'note']),
    );
  });

  it('sets a daily schedule in a time zone, with a wrong zone explained at its field', async () => {
    const { page } = browser;
    await page.selectOption('#cadence', 'daily');
    await page.fill('#time-of-day', '06:30');
    await page.fill('#timezone', 'Mars/Olympus_Mons');
    await Promise.all([page.waitForNavigation(), page.click('#save-schedule')]);
    expect(await page.textContent('#timezone-error')).toContain('IANA time zone');
    expect(await page.getAttribute('#timezone', 'aria-invalid')).toBe('true');
    expect(await page.inputValue('#cadence')).toBe('daily');
    await shot(page, 'live-export-schedule-error');
    await expectAccessible(page);
    await page.fill('#timezone', 'Europe/Berlin');
    await Promise.all([page.waitForNavigation(), page.click('#save-schedule')]);
    expect(await page.textContent('[role=status]')).toContain('Schedule saved. Next run');
    expect(await page.textContent('#schedule-text')).toContain('Daily at 06:30 (Europe/Berlin)');
    expect(await schedule()).toMatchObject({
      cadence: 'daily',
      time_of_day: '06:30',
      timezone: 'Europe/Berlin',
      enabled: true,
    });
    await shot(page, 'live-export-scheduled');
    await expectAccessible(page);
  });

  it('queues a run with Run now and cancels it while no worker runs', async () => {
    const { page } = browser;
    await page.goto(url(`/app/live-exports/${lexId}`));
    await Promise.all([page.waitForNavigation(), page.click('#run-now')]);
    expect(new URL(page.url()).pathname).toMatch(new RegExp(`^/app/live-exports/${lexId}/runs/run_\\w+$`));
    expect(await page.textContent('#run-state')).toContain('queued');
    expect(await page.getAttribute('body', 'data-refresh')).toBe('2');
    await shot(page, 'live-export-run-queued');
    await expectAccessible(page);
    // CSRF: refused without the token.
    const runId = new URL(page.url()).pathname.split('/').pop()!;
    const forged = await page.request.post(url(`/app/live-exports/${lexId}/runs/${runId}/cancel`), {
      form: { from: 'run' },
      headers: { Origin: base },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Cancel run")')]);
    expect(await page.textContent('[role=status]')).toContain('Run canceled');
    expect(await page.textContent('#run-state')).toContain('canceled');
    expect(await page.getAttribute('body', 'data-refresh')).toBeNull();
  });

  it('watches the scheduled run on the overview, then a manual one on its page, updating in place', async () => {
    const { page } = browser;
    await w.startWorker({ ENGINE_ACCOUNT_ID: owner.id });
    const slot = Date.parse(String((await schedule())['next_run_at']));
    await page.goto(url(`/app/live-exports/${lexId}`));
    await page.evaluate('window.notReloaded = true');
    await w.setClock(new Date(slot + 2000));
    await w.tick();
    // The page was loaded before the run existed: it updates once reloaded, then in place while it runs.
    await page.reload();
    await page.evaluate('window.notReloaded = true');
    const scheduled = page.locator('#run-list tbody tr', { hasText: 'schedule' });
    await eventually(
      'the scheduled run to succeed on the overview',
      async () =>
        (
          await scheduled
            .locator('.run-state')
            .textContent()
            .catch(() => '')
        )?.includes('succeeded'),
      60_000,
    );
    expect(await scheduled.locator('.run-progress').textContent()).toContain(
      `${ROWS.toLocaleString('en-US')} written`,
    );
    expect(await page.evaluate('window.notReloaded === true')).toBe(true);
    await shot(page, 'live-export-overview-runs');
    await expectAccessible(page);
    const count = (await my.sql('SELECT COUNT(*) AS n FROM customers_copy')) as { n: number }[];
    expect(Number(count[0]!.n)).toBe(ROWS);

    // A manual run after a change: its page shows the run to the end without a reload.
    await pg.sql(`UPDATE customers SET full_name = 'Ada' WHERE id = 1`);
    await Promise.all([page.waitForNavigation(), page.click('#run-now')]);
    await page.evaluate('window.notReloaded = true');
    await eventually(
      'the manual run to succeed on its page',
      async () => (await page.textContent('#run-state'))?.includes('succeeded'),
      60_000,
    );
    expect(await page.evaluate('window.notReloaded === true')).toBe(true);
    expect(await page.textContent('#run-progress')).toMatch(/[1-9][\d,]* written/);
    expect(await page.locator('button:has-text("Cancel run")').count()).toBe(0);
    await shot(page, 'live-export-run');
    await expectAccessible(page);
    expect(await my.sql('SELECT full_name FROM customers_copy WHERE id = 1')).toEqual([{ full_name: 'Ada' }]);
  }, 180_000);

  it('answers another account with the 404 page on the new pages', async () => {
    const runs = await runsOf();
    const stranger = (await w.t.account({ plan: 'business' })) as { id: string; email: string };
    const other = await openBrowser();
    try {
      await other.page.goto(url('/app/live-exports'));
      await signIn(other.page, stranger.email);
      for (const path of [
        `/app/live-exports/${lexId}/map`,
        `/app/live-exports/${lexId}/delete`,
        `/app/live-exports/${lexId}/runs/${runs[0]!.id}`,
        `/app/live-exports/${lexId}/runs/run_00000000000000000000`,
      ]) {
        const response = await other.page.goto(url(path));
        expect([path, response!.status(), await other.page.textContent('h1')]).toEqual([
          path,
          404,
          'Page not found',
        ]);
      }
      const token = await other.page.inputValue('input[name=_csrf] >> nth=0');
      const foreign = await other.page.request.post(url(`/app/live-exports/${lexId}/trigger`), {
        form: { _csrf: token },
        headers: { Origin: base },
        maxRedirects: 0,
      });
      expect(foreign.status()).toBe(404);
      expect(await runsOf()).toHaveLength(runs.length);
    } finally {
      await other.close();
    }
  });

  it('deletes the export after a confirmation page; the destination table stays', async () => {
    const { page } = browser;
    await page.goto(url(`/app/live-exports/${lexId}`));
    await page.fill('#rename', 'Customers nightly');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Rename")')]);
    expect(await page.textContent('[role=status]')).toContain('Renamed to “Customers nightly”');
    await Promise.all([page.waitForNavigation(), page.click('#delete')]);
    expect(await page.textContent('h1')).toBe('Delete “Customers nightly”?');
    expect(await page.textContent('main')).toContain('The tables it created in the destination');
    await shot(page, 'live-export-delete');
    await expectAccessible(page);
    // CSRF: refused without the token, nothing deleted.
    const forged = await page.request.post(url(`/app/live-exports/${lexId}/delete`), {
      form: {},
      headers: { Origin: base },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    await api().get(`/v1/live-export/live-exports/${lexId}`).set(bearer(key)).expect(200);
    await Promise.all([page.waitForNavigation(), page.click('#confirm-delete')]);
    expect(new URL(page.url()).pathname).toBe('/app/live-exports');
    expect(await page.textContent('[role=status]')).toContain('Deleted the live export “Customers nightly”');
    await api().get(`/v1/live-export/live-exports/${lexId}`).set(bearer(key)).expect(404);
    const count = (await my.sql('SELECT COUNT(*) AS n FROM customers_copy')) as { n: number }[];
    expect(Number(count[0]!.n)).toBe(ROWS);
  });
});
