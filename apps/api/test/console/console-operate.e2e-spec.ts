import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { newId } from '@lockstep/domain';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import { bearer, TEST_MASTER_KEY } from '../support/test-app';
import {
  type Browser,
  type ConsoleServer,
  eventually,
  expectAccessible,
  openBrowser,
  shot,
  signIn,
  startConsoleServer,
} from './console-harness';

const ROOT = join(__dirname, '..', '..', '..', '..');

/**
 * Operating a running sync from the console in real Chromium against the real API, worker and databases:
 * the operations log (filters, paging, one operation's field changes), pause, activate, and delete with a
 * confirmation step; CSRF and the 404 for other accounts on each of these pages.
 */
describe('console: operations log, pause, activate, delete', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let db: DataSource;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let worker: ChildProcess | null = null;
  let owner: { id: string; email: string };
  let other: { id: string; email: string };
  let secret: string;
  let syncId: string;

  const url = (path: string) => `${server.base}${path}`;
  const api = () => server.t.http();
  const getSync = async () =>
    (await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(200)).body;

  beforeAll(async () => {
    server = await startConsoleServer();
    db = server.t.app.get(DataSource);
    owner = (await server.t.account()) as { id: string; email: string };
    other = (await server.t.account()) as { id: string; email: string };
    secret = await server.t.key(owner.id, 'readwrite');
    pg = await scratchPg(`
      CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, email text);
      INSERT INTO people VALUES (1, 'Ada Lovelace', 'ada@example.com'), (2, 'Grace Hopper', 'grace@example.com');
    `);
    my = await scratchMysql([
      'CREATE TABLE contacts (id INT PRIMARY KEY, full_name VARCHAR(60) NOT NULL, email VARCHAR(100))',
      "INSERT INTO contacts VALUES (1, 'Ada Lovelace', 'ada@example.com'), (5, 'Alan Turing', 'alan@example.com')",
    ]);
    const created = await api()
      .post('/v1/sync/syncs')
      .set(bearer(secret))
      .send({
        name: 'Contacts',
        left: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
        right: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
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
            left_table: 'contacts',
            right_table: 'people',
            direction: 'two_way',
            fields: [
              { left_field: 'id', right_field: 'id' },
              { left_field: 'full_name', right_field: 'name' },
              { left_field: 'email', right_field: 'email' },
            ],
          },
        ],
      })
      .expect(200);
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

  it('starts the sync from the review page and shows Pause and the operations link on the overview', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}/review`));
    await signIn(page, owner.email);
    await page.selectOption('#match-0', 'id=id');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Update preview")')]);
    await Promise.all([page.waitForNavigation(), page.click('#start')]);
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
    // While the initial sync runs there is no Pause (the lifecycle refuses it); the page reloads itself.
    await eventually(
      'the overview to show the initial sync done',
      async () => (await page.textContent('#initial-sync'))?.includes('done'),
      45_000,
    );
    await page.waitForLoadState();
    expect(await page.isVisible('#pause')).toBe(true);
    expect(await page.getAttribute('#all-operations', 'href')).toBe(`/app/syncs/${syncId}/operations`);
  });

  it('finds an edit made in PostgreSQL in the operations log, filters it, pages it and shows its field changes', async () => {
    const { page } = browser;
    await pg.sql(`UPDATE people SET name = 'Ada King' WHERE id = 1`);
    await eventually(
      'the edit to reach MariaDB',
      async () =>
        ((await my.sql('SELECT full_name FROM contacts WHERE id = 1')) as { full_name: string }[])[0]
          ?.full_name === 'Ada King',
    );
    await page.goto(url(`/app/syncs/${syncId}/operations`));
    const updated = page.locator('#operations tr', { hasText: 'updated (push)' });
    expect(await updated.count()).toBe(1);
    expect(await updated.locator('td').nth(3).textContent()).toBe('contacts');
    expect(await updated.locator('td').nth(4).textContent()).toBe('Ada King');
    // Times to the second.
    expect(await updated.locator('time').textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await shot(page, 'operations');
    await expectAccessible(page);
    // In the viewer's time zone: a browser in Tokyo (UTC+9, no daylight saving) shows the time 9 hours on.
    const tokyo = await openBrowser({ timezoneId: 'Asia/Tokyo' });
    try {
      await tokyo.page.goto(url(`/app/syncs/${syncId}/operations`));
      await signIn(tokyo.page, owner.email);
      const time = tokyo.page.locator('#operations tr', { hasText: 'updated (push)' }).locator('time');
      const iso = (await time.getAttribute('datetime'))!;
      const shifted = new Date(Date.parse(iso) + 9 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
      expect(await time.textContent()).toMatch(new RegExp(`^${shifted} (?!UTC)`));
      expect(await time.getAttribute('title')).toMatch(/ UTC$/);
    } finally {
      await tokyo.close();
    }

    // Filter by table: only the PostgreSQL table's operations.
    await page.selectOption('#filter-table', { label: 'people (right)' });
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Show operations")')]);
    const tables = await page.locator('#operations tbody tr td:nth-child(4)').allTextContents();
    expect(tables.length).toBeGreaterThan(0);
    expect(new Set(tables)).toEqual(new Set(['people']));
    // Since a time after everything: nothing; a time that is no time: the error at the filter.
    await page.goto(url(`/app/syncs/${syncId}/operations`));
    await page.fill('#filter-since', '2999-01-01 00:00:00');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Show operations")')]);
    expect(await page.textContent('#no-operations')).toContain('No operations match');
    await page.fill('#filter-since', 'yesterday');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Show operations")')]);
    expect(await page.textContent('#filter-since-error')).toContain('ISO 8601');
    expect(await page.getAttribute('#filter-since', 'aria-describedby')).toBe('filter-since-error');
    expect(await page.getAttribute('#filter-since', 'aria-invalid')).toBe('true');
    await page.fill('#filter-since', '');
    await page.fill('#filter-record', 'not-a-record');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Show operations")')]);
    expect(await page.textContent('#filter-record-error')).toContain('record id');
    await shot(page, 'operations-filter-error');
    await expectAccessible(page);

    // Paging: two at a time, the next page continues where the first ended.
    await page.goto(url(`/app/syncs/${syncId}/operations?limit=2`));
    const first = await page
      .locator('#operations tbody tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-operation')));
    expect(first).toHaveLength(2);
    await Promise.all([page.waitForNavigation(), page.click('#older')]);
    const second = await page
      .locator('#operations tbody tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-operation')));
    expect(second.length).toBeGreaterThan(0);
    expect(second.filter((id) => first.includes(id))).toEqual([]);

    // The single operation: its field changes before and after; the record filter lists the record's log.
    await page.goto(url(`/app/syncs/${syncId}/operations`));
    await Promise.all([
      page.waitForNavigation(),
      page.locator('#operations tr', { hasText: 'updated (push)' }).locator('a:has-text("Details")').click(),
    ]);
    const change = page.locator('#field-changes tr', { hasText: 'full_name' });
    expect(await change.locator('td').allTextContents()).toEqual(['Ada Lovelace', 'Ada King']);
    expect(await page.textContent('#op-when')).toMatch(/\d\d:\d\d:\d\d UTC$/);
    await shot(page, 'operation');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('a:has-text("all its operations")')]);
    const names = await page.locator('#operations tbody tr td:nth-child(5)').allTextContents();
    expect(names.length).toBeGreaterThanOrEqual(2);
    expect(new Set(names)).toEqual(new Set(['Ada King']));
  });

  it('shows a conflict as such on the operation and in the log', async () => {
    const { page } = browser;
    const [op] = await db.query(
      `SELECT id FROM operation_log WHERE sync_id = $1 AND action = 'updated' ORDER BY occurred_at DESC LIMIT 1`,
      [syncId],
    );
    await db.query(`UPDATE operations SET details = $2 WHERE id = $1`, [
      op.id,
      JSON.stringify({ conflicts: [{ field: 'full_name', winner: 'right', reason: 'newer' }] }),
    ]);
    await page.goto(url(`/app/syncs/${syncId}/operations`));
    expect(await page.locator(`tr[data-operation="${op.id}"]`).textContent()).toContain('conflict');
    await page.goto(url(`/app/syncs/${syncId}/operations/${op.id}`));
    const conflict = page.locator('section[aria-labelledby=conflicts]');
    expect(await conflict.textContent()).toContain('Both sides changed this record');
    expect(await conflict.locator('tbody tr').textContent()).toContain('right');
    await shot(page, 'operation-conflict');
    await expectAccessible(page);
  });

  it('lists a rejected write under Records, explains it, and retries it once fixed: the record then arrives', async () => {
    const { page } = browser;
    // MariaDB refuses the write (a trigger of the app's own) until the person removes the cause.
    await my.sql(
      "CREATE TRIGGER no_admirals BEFORE UPDATE ON contacts FOR EACH ROW BEGIN IF NEW.full_name LIKE '%Admiral%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no admirals here'; END IF; END",
    );
    const long = 'Grace Hopper, Rear Admiral';
    await pg.sql(`UPDATE people SET name = $1 WHERE id = 2`, [long]);
    const issue = await eventually('a record issue', async () => {
      const body = (await api().get(`/v1/sync/issues?sync=${syncId}`).set(bearer(secret)).expect(200)).body;
      return (body.data as { id: string; type: string; message: string }[]).find((i) => i.type === 'record');
    });
    await page.goto(url(`/app/syncs/${syncId}`));
    await Promise.all([page.waitForNavigation(), page.click('#all-issues')]);
    const row = page.locator(`section[aria-labelledby=type-record] tr[data-issue="${issue.id}"]`);
    expect(await row.textContent()).toContain(issue.message);
    expect(await row.textContent()).toContain('left side');
    await shot(page, 'issues');
    await expectAccessible(page);
    await page.click('nav[aria-label="Issue types"] a:has-text("Connection")');
    expect(await page.textContent('#no-issues')).toContain('No open issues of this type');
    await page.goto(url(`/app/syncs/${syncId}/issues`));
    await Promise.all([page.waitForNavigation(), row.locator(`a[href$="${issue.id}"]`).click()]);
    expect(await page.textContent('h1')).toBe(issue.message);
    expect(await page.textContent('#issue-state')).toContain('open');
    expect(await page.textContent('#explanation')).toBeTruthy();
    expect(await page.textContent('#suggested')).toContain('What to do');
    await shot(page, 'issue');
    await expectAccessible(page);
    // Retried before the cause is gone: the page shows the failure coming back (the same issue reopens).
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Retry")')]);
    await eventually('the page to show the failure came back', async () => {
      await page.reload();
      return (await page.textContent('#after-state'))?.includes('happened again');
    });
    expect(await page.textContent('#issue-state')).toContain('open');
    await shot(page, 'issue-came-back');
    await expectAccessible(page);
    await my.sql('DROP TRIGGER no_admirals');
    await Promise.all([page.waitForNavigation(), page.click('button:has-text("Retry")')]);
    expect(await page.textContent('[role=status]')).toContain('Retrying');
    expect(await page.textContent('#issue-state')).toContain('resolved');
    await eventually('the retried write to reach MariaDB', async () => {
      const rows = (await my.sql('SELECT full_name FROM contacts WHERE id = 2')) as { full_name: string }[];
      return rows[0]?.full_name === long;
    });
    await eventually('the page to show the operation after the retry', async () => {
      await page.reload();
      return (await page.textContent('#after-ops'))?.includes('updated (push) on the left side');
    });
    expect(await page.textContent('#after-state')).toContain('has not come back');
    await shot(page, 'issue-after-retry');
    await expectAccessible(page);
    // CSRF on retry: refused without the token.
    const forged = await page.request.post(url(`/app/syncs/${syncId}/issues/${issue.id}/retry`), {
      form: { from: 'issue' },
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
  });

  it('refuses pause without the CSRF token (403) and answers other accounts with the 404 page', async () => {
    const { page } = browser;
    const forged = await page.request.post(url(`/app/syncs/${syncId}/pause`), {
      form: {},
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect((await getSync()).status).toBe('active');
    const foreign = await server.t.bareSync(other.id);
    const [op] = await db.query(`SELECT id FROM operation_log WHERE sync_id = $1 LIMIT 1`, [syncId]);
    const [issue] = await db.query(`SELECT id FROM sync_issues WHERE sync_id = $1 LIMIT 1`, [syncId]);
    const foreignIssue = newId('issue');
    await db.query(
      `INSERT INTO sync_issues (id, sync_id, type, code, side, connector, message, remediation, dedupe_key) VALUES ($1, $2, 'other', 'write_rejected', 'left', 'postgres', 'Theirs', '{"explanation":"","suggested_action":"","links":[]}', 'test')`,
      [foreignIssue, foreign],
    );
    for (const path of [
      `/app/syncs/${foreign}/operations`,
      `/app/syncs/${foreign}/operations/${op.id}`,
      `/app/syncs/${syncId}/operations/${newId('operation')}`,
      `/app/syncs/${syncId}/operations/not-an-id`,
      `/app/syncs/${foreign}/delete`,
      `/app/syncs/${foreign}/issues`,
      `/app/syncs/${foreign}/issues/${issue.id}`,
      `/app/syncs/${syncId}/issues/${newId('issue')}`,
      `/app/syncs/${syncId}/issues/${foreignIssue}`,
    ]) {
      const response = await page.goto(url(path));
      expect([path, response!.status()]).toEqual([path, 404]);
      expect(await page.textContent('h1')).toBe('Page not found');
    }
    const token = await page
      .goto(url(`/app/syncs/${syncId}`))
      .then(() => page.inputValue('input[name=_csrf] >> nth=0'));
    for (const action of ['pause', 'activate', 'delete', `issues/${foreignIssue}/retry`]) {
      const response = await page.request.post(url(`/app/syncs/${foreign}/${action}`), {
        form: { _csrf: token },
        headers: { Origin: server.base },
        maxRedirects: 0,
      });
      expect([action, response.status()]).toEqual([action, 404]);
    }
    expect(
      (await db.query(`SELECT status, deleted_at FROM syncs WHERE id = $1`, [foreign]))[0],
    ).toMatchObject({ deleted_at: null });
    const own = await page.request.post(url(`/app/syncs/${syncId}/issues/${foreignIssue}/retry`), {
      form: { _csrf: token },
      headers: { Origin: server.base },
      maxRedirects: 0,
    });
    expect(own.status()).toBe(404);
    expect(
      (await db.query(`SELECT resolved_at FROM sync_issues WHERE id = $1`, [foreignIssue]))[0].resolved_at,
    ).toBeNull();
  });

  it('pauses and activates the sync from the overview', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}`));
    await Promise.all([page.waitForNavigation(), page.click('#pause')]);
    expect(await page.textContent('[role=status]')).toContain('Paused');
    expect(await page.textContent('#sync-status')).toContain('paused');
    expect((await getSync()).status).toBe('paused');
    expect(await page.locator('#pause').count()).toBe(0);
    await shot(page, 'overview-paused');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('#activate')]);
    expect(await page.textContent('[role=status]')).toContain('Activated');
    expect((await getSync()).status).toBe('active');
  });

  it('deletes the sync after a confirmation step; the API answers 404 afterwards', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}`));
    await Promise.all([page.waitForNavigation(), page.click('#delete')]);
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}/delete`);
    expect(await page.textContent('h1')).toBe('Delete Contacts?');
    // Nothing is deleted by opening the confirmation.
    expect((await getSync()).id).toBe(syncId);
    await shot(page, 'delete-confirm');
    await expectAccessible(page);
    await Promise.all([page.waitForNavigation(), page.click('#confirm-delete')]);
    expect(new URL(page.url()).pathname).toBe('/app');
    expect(await page.textContent('[role=status]')).toContain('Deleted the sync Contacts');
    expect(await page.locator(`a[href="/app/syncs/${syncId}"]`).count()).toBe(0);
    await api().get(`/v1/sync/syncs/${syncId}`).set(bearer(secret)).expect(404);
    // The worker undoes table setup: the change-capture triggers on the PostgreSQL table go away.
    await eventually(
      'the triggers to be removed',
      async () =>
        (
          await pg.sql(
            `SELECT count(*)::int AS n FROM information_schema.triggers WHERE event_object_table = 'people' AND event_object_schema = '${pg.schema}'`,
          )
        )[0]?.['n'] === 0,
    );
  });
});
