import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import { bearer, TEST_MASTER_KEY } from '../support/test-app';
import {
  type Browser,
  type ConsoleServer,
  eventually,
  expectAccessible,
  initialDone,
  openBrowser,
  pace,
  shot,
  signIn,
  startConsoleServer,
} from './console-harness';

const ROOT = join(__dirname, '..', '..', '..', '..');
const ROWS = 20_000;

/**
 * The sync overview and records in real Chromium against the real API, worker and databases: the progress of
 * a 20,000-row initial sync (records done of total, rate, time left) updating in place, change detection per
 * side, "Needs you" on the syncs list (actions, held deletes, open issues), held deletes and issues on the
 * overview, record search by each side's key, and the record status document as a page (both copies, queued
 * work, issues, held delete history, operations, refetch); CSRF and the 404 for other accounts.
 */
describe('console: overview progress, Needs you, record search and status', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let worker: ChildProcess | null = null;
  let paced: { release: () => void } | null = null;
  let owner: { id: string; email: string };
  let secret: string;
  let syncId: string;

  const url = (path: string) => `${server.base}${path}`;
  const api = () => server.t.http();

  beforeAll(async () => {
    server = await startConsoleServer();
    owner = (await server.t.account()) as { id: string; email: string };
    secret = await server.t.key(owner.id, 'readwrite');
    pg = await scratchPg(`
      CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, email text);
      INSERT INTO people SELECT n, 'Person ' || n, 'p' || n || '@example.com' FROM generate_series(1, ${ROWS}) n;
    `);
    my = await scratchMysql([
      'CREATE TABLE contacts (id INT PRIMARY KEY, full_name VARCHAR(60) NOT NULL, email VARCHAR(100))',
    ]);
    const created = await api()
      .post('/v1/sync/syncs')
      .set(bearer(secret))
      .send({
        name: 'Twenty thousand',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      })
      .expect(201);
    syncId = created.body.id;
    const current = await api().get(`/v1/sync/syncs/${syncId}/mappings`).set(bearer(secret)).expect(200);
    await api()
      .put(`/v1/sync/syncs/${syncId}/mappings`)
      .set(bearer(secret))
      .set('If-Match', current.headers['etag'])
      .send({
        tables: [
          {
            left_table: 'people',
            right_table: 'contacts',
            direction: 'two_way',
            fields: [
              { left_field: 'id', right_field: 'id' },
              { left_field: 'name', right_field: 'full_name' },
              { left_field: 'email', right_field: 'email' },
            ],
          },
        ],
      })
      .expect(200);
    browser = await openBrowser();
  });
  afterAll(async () => {
    paced?.release();
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await server?.close();
  });

  it('counts the pending action under "Needs you" on the syncs list', async () => {
    const { page } = browser;
    await page.goto(url('/app'));
    await signIn(page, owner.email);
    const cell = page.locator(`tr[data-sync="${syncId}"] .needs-you`);
    expect(await cell.locator('.needs').textContent()).toBe('1');
    expect(await cell.textContent()).toContain('review and start');
  });

  it('shows the progress of a 20,000-row initial sync (done of total, rate, time left) updating in place', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}/review`));
    // MariaDB's table is empty: nothing to match, every row is created there.
    await Promise.all([page.waitForNavigation(), page.click('#start')]);
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}`);
    await page.evaluate('window.notReloaded = true');
    worker = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
      env: {
        ...process.env,
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
        ENGINE_ACCOUNT_ID: owner.id,
        ENGINE_LEASE_SECONDS: '3',
        // Small pages: the run takes long enough to be watched at 2 s a refresh.
        ENGINE_PAGE_SIZE: '250',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    // Paced until the recent rate has been seen; then it runs at full speed to the end.
    paced = pace(worker);
    const doneOf = () => initialDone(page);
    const first = await eventually(
      'the overview to show records done while the initial sync runs',
      async () => {
        const seen = await doneOf();
        return seen && seen.done > 0 && seen.done < seen.total ? seen : null;
      },
      60_000,
    );
    expect(first.total).toBe(ROWS);
    expect(await page.textContent('#initial-rate')).toMatch(/^[\d,]+ records\/s$/);
    expect(await page.textContent('#initial-eta')).toMatch(/^about \d+ (s|min \d+ s) left$/);
    await shot(page, 'overview-initial-progress');
    await expectAccessible(page);
    // The numbers move without a reload (the console's script swaps the page's main in place), and the rate
    // is then measured over the last seconds rather than averaged over the preparation too.
    const later = await eventually(
      'the records done to move on, with the recent rate',
      async () => {
        const seen = await doneOf();
        const rate = ((await page.textContent('#initial-pace').catch(() => null)) ?? '').replace(/\s+/g, ' ');
        if ((await page.textContent('#initial-sync'))?.includes('done')) return 'finished first';
        return seen && seen.done > first.done && rate.includes('records/s lately') ? rate : null;
      },
      60_000,
    );
    paced.release();
    expect(later).toMatch(/[\d,]+ records\/s lately · about \d+ (s|min \d+ s) left/);
    await eventually(
      'the overview to show the initial sync done',
      async () => (await page.textContent('#initial-sync'))?.includes('done'),
      120_000,
    );
    expect(await page.evaluate('window.notReloaded === true')).toBe(true);
    expect(await page.textContent('#initial-done')).toBe(
      `${ROWS.toLocaleString('en-US')} of ${ROWS.toLocaleString('en-US')} records`,
    );
    expect(await page.locator('#initial-eta').count()).toBe(0);
    const count = (await my.sql('SELECT COUNT(*) AS n FROM contacts')) as { n: number }[];
    expect(Number(count[0]!.n)).toBe(ROWS);
    await eventually('change detection on both sides', async () => {
      await page.reload();
      const left = (await page.textContent('#detection-left')) ?? '';
      const right = (await page.textContent('#detection-right')) ?? '';
      return !/not_started|waiting/.test(left + right) && left.length > 0 && right.length > 0;
    });
    await shot(page, 'overview-done');
    await expectAccessible(page);
  });

  it('counts a held delete and an open issue under "Needs you" and shows both on the overview', async () => {
    const { page } = browser;
    await my.sql('DELETE FROM contacts WHERE id = 7');
    await my.sql(
      "CREATE TRIGGER no_admirals BEFORE UPDATE ON contacts FOR EACH ROW BEGIN IF NEW.full_name LIKE '%Admiral%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no admirals here'; END IF; END",
    );
    await pg.sql(`UPDATE people SET name = 'Grace Hopper, Rear Admiral' WHERE id = 2`);
    const sync = await eventually('a held delete and an open issue', async () => {
      const body = (await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body;
      return body.pending_deletes === 1 && body.open_issues >= 1 ? body : null;
    });
    await page.goto(url('/app'));
    const cell = page.locator(`tr[data-sync="${syncId}"] .needs-you`);
    expect(await cell.locator('.needs').textContent()).toBe(String(1 + sync.open_issues));
    expect(await cell.textContent()).toContain('1 held delete');
    expect(await cell.textContent()).toContain(`${sync.open_issues} open issue`);
    await shot(page, 'syncs-needs-you');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), cell.locator('a:has-text("held delete")').click()]);
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}/pending-deletes`);
    await page.goto(url(`/app/syncs/${syncId}`));
    expect(await page.textContent('#held-deletes')).toContain('Person 7');
    expect(await page.textContent('section[aria-labelledby=issues]')).toContain('no admirals here');
    await shot(page, 'overview-held-and-issues');
    await expectAccessible(page);
  });

  it("finds a record by the right side's key and by name, and shows its status document with both copies", async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}`));
    await Promise.all([page.waitForNavigation(), page.click('#find-record')]);
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}/records`);
    await shot(page, 'records-search-empty');
    await expectAccessible(page);
    // By the key on one side: the MariaDB table only.
    await page.fill('#search-query', '2');
    await page.selectOption('#search-table', { label: 'contacts (right)' });
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Find records")')]);
    // Exact id matches first, then names containing the text.
    const rows = page.locator('#records tbody tr');
    expect(await rows.first().locator('td').nth(4).textContent()).toBe('id in the app');
    expect(await rows.first().locator('td').nth(3).textContent()).toBe('2');
    expect(await rows.nth(1).locator('td').nth(4).textContent()).toBe('name');
    await shot(page, 'records-search');
    await expectAccessible(page);
    // By name: starts with.
    await page.goto(url(`/app/syncs/${syncId}/records?query=${encodeURIComponent('Person 1999')}`));
    expect(await page.textContent('#records')).toContain('Person 1999');
    // Nothing found, and a refused table at its field.
    await page.goto(url(`/app/syncs/${syncId}/records?query=nobody-has-this`));
    expect(await page.textContent('#no-records')).toContain('No record of this sync matches');
    const refused = await page.goto(
      url(`/app/syncs/${syncId}/records?query=2&table=table_00000000000000000000`),
    );
    expect(refused!.status()).toBe(400);
    expect(await page.getAttribute('#search-table', 'aria-invalid')).toBe('true');
    expect(await page.textContent('#search-table-error')).toBeTruthy();
    await shot(page, 'records-search-error');
    await expectAccessible(page);

    // The record with the open issue: both copies read live, its issue, history, and a refetch.
    await page.goto(url(`/app/syncs/${syncId}/records?query=2&table=`));
    await page.fill('#search-query', '2');
    await page.selectOption('#search-table', { label: 'people (left)' });
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Find records")')]);
    await Promise.all([page.waitForNavigation(), page.locator('#records tbody tr a').first().click()]);
    expect(await page.textContent('#copy-left')).toContain('Grace Hopper, Rear Admiral');
    expect(await page.textContent('#copy-right')).toContain('Person 2');
    expect(await page.textContent('#record-issues')).toContain('no admirals here');
    expect(await page.locator('#record-operations tbody tr').count()).toBeGreaterThan(0);
    await shot(page, 'record-status');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('#refetch')]);
    expect(await page.textContent('[role=status]')).toContain('will be read again');

    // The held delete's record: the left copy only, the delete waiting, its history.
    await page.goto(url(`/app/syncs/${syncId}/records?query=7&table=`));
    await page.selectOption('#search-table', { label: 'people (left)' });
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Find records")')]);
    await Promise.all([page.waitForNavigation(), page.locator('#records tbody tr a').first().click()]);
    expect(await page.textContent('#held-delete')).toContain('waits for review');
    expect(await page.textContent('#delete-history')).toContain('detected');
    expect(await page.textContent('#copy-right')).toContain('deleted');
    await shot(page, 'record-held-delete');
    await expectAccessible(page);
  });

  it('refuses a refetch without the CSRF token and answers another account with the 404 page', async () => {
    const { page } = browser;
    const recordUrl = page.url();
    const recordId = new URL(recordUrl).pathname.split('/').pop()!;
    const forged = await page.request.post(url(`/app/syncs/${syncId}/records/${recordId}/refetch`), {
      form: {},
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    const stranger = (await server.t.account()) as { id: string; email: string };
    const other = await openBrowser();
    try {
      await other.page.goto(url('/app'));
      await signIn(other.page, stranger.email);
      for (const path of [
        `/app/syncs/${syncId}/records?query=2`,
        `/app/syncs/${syncId}/records/${recordId}`,
      ]) {
        const response = await other.page.goto(url(path));
        expect([path, response!.status(), await other.page.textContent('h1')]).toEqual([
          path,
          404,
          'Page not found',
        ]);
      }
    } finally {
      await other.close();
    }
  });
});
