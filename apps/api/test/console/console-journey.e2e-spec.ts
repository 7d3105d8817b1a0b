import type { Page } from 'playwright-core';
import { liveExportWorld, type LiveExportWorld } from '../support/live-export-worker';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import {
  type Browser,
  eventually,
  expectAccessible,
  freePort,
  initialDone,
  openBrowser,
  pace,
  shot,
  signIn,
} from './console-harness';

const ROWS = 20_000;
const EXPORT_ROWS = 500;
/** A name MariaDB's own rule (a CHECK constraint Lockstep cannot know of) refuses. */
const REFUSED_NAME = 'Grace Hopper (grace@navy.mil)';

/**
 * Issue 29's journey in one piece, in real Chromium against the real API, worker and databases: a person who
 * never touches the API creates a PostgreSQL <-> MariaDB sync, maps two tables with one `create`, sees an
 * incompatible pair explained, starts with the suggested match field, watches a 20,000-row initial sync,
 * finds an edit in the operations log, sees a record issue clear itself once the value is fixed in the source,
 * fixes the cause of another in the target and retries it, approves a held delete, pauses
 * and deletes the sync; then sets up a scheduled live export and watches its run. The test itself only edits
 * the apps' databases (what someone outside Lockstep would do) and moves the worker's schedule clock.
 * Every step: an axe-core check and a screenshot `artifacts/screenshots/journey-*.png`.
 */
describe('console: the whole journey, without the API', () => {
  let w: LiveExportWorld;
  let base: string;
  let browser: Browser;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let owner: { id: string; email: string };
  let syncId: string;

  const url = (path: string) => `${base}${path}`;
  const go = async (page: Page, action: Promise<unknown>) => {
    await Promise.all([page.waitForNavigation(), action]);
  };
  const step = async (page: Page, name: string) => {
    await shot(page, name, 'journey');
    await expectAccessible(page);
  };
  /** Reloads the page until `check` holds: what a person does while waiting for the worker. */
  const reloadUntil = (page: Page, what: string, check: () => Promise<boolean>, timeoutMs = 30_000) =>
    eventually(
      what,
      async () => {
        await page.reload();
        return check();
      },
      timeoutMs,
    );

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    w = await liveExportWorld({ PUBLIC_URL: base });
    await w.t.app.listen(port, '127.0.0.1');
    owner = (await w.t.account({ plan: 'business' })) as { id: string; email: string };
    pg = await scratchPg(`
      CREATE TABLE people (id integer PRIMARY KEY, email text NOT NULL UNIQUE, name text NOT NULL, active boolean);
      INSERT INTO people SELECT n, 'p' || n || '@example.com', 'Person ' || n, n % 2 = 0 FROM generate_series(1, ${ROWS}) n;
      CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL);
      INSERT INTO notes VALUES (1, 'first'), (2, 'second');
      CREATE TABLE orders (id integer PRIMARY KEY, item text, amount numeric(10,2));
      INSERT INTO orders SELECT n, 'Item ' || n, n * 1.5 FROM generate_series(1, ${EXPORT_ROWS}) n;
    `);
    my = await scratchMysql([
      "CREATE TABLE contacts (id INT PRIMARY KEY, email VARCHAR(100) NOT NULL UNIQUE, full_name VARCHAR(60) NOT NULL, joined DATE, CONSTRAINT no_email_in_name CHECK (full_name NOT LIKE '%@%'))",
      // One row already there under the same email (matched, not duplicated), one only in MariaDB.
      "INSERT INTO contacts VALUES (1, 'p1@example.com', 'Person 1', '2026-01-01'), (50001, 'alan@example.com', 'Alan Turing', NULL)",
    ]);
    await w.setClock('2000-01-01T00:00:00Z');
    browser = await openBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await w?.close();
  });

  it('creates the sync, maps two tables with one create, starts it and watches the initial sync', async () => {
    const { page } = browser;
    await page.goto(url('/app'));
    await signIn(page, owner.email);
    await go(page, page.click('#new-sync'));
    await page.fill('#name', 'Journey');
    await page.check('#left-connector-postgres');
    await page.check('#right-connector-mysql');
    await go(page, page.click('button:has-text("Continue")'));
    await page.fill('#left-auth-connectionString', pg.url);
    await page.fill('#right-auth-connectionString', my.url);
    await go(page, page.click('#check'));
    await page.selectOption('#left-base', pg.schema);
    await page.selectOption('#right-base', my.database);
    await step(page, 'new-sync');
    await go(page, page.click('#create'));
    expect(await page.textContent('[role=status]')).toContain('Created the sync Journey');
    syncId = new URL(page.url()).pathname.split('/').pop()!;

    // Mappings: people <-> contacts (same-named fields paired), an incompatible pair explained, then fixed.
    await go(page, page.click('#edit-mappings'));
    await go(page, page.click('#add-pair'));
    // Choosing a table swaps that pair's section in place (no navigation); both chosen, same-named fields pair.
    await page.selectOption('#p0_left_table', 'people');
    await page.selectOption('#p0_right_table', 'contacts');
    await eventually(
      'the same-named fields to be paired',
      async () =>
        (await page.locator('#p0_f1_left').count()) > 0 && (await page.inputValue('#p0_f0_left')) === 'id',
    );
    expect([await page.inputValue('#p0_f0_left'), await page.inputValue('#p0_f1_left')]).toEqual([
      'id',
      'email',
    ]);
    await go(page, page.click('#pair-0 button:has-text("Add a field pair")'));
    await page.selectOption('#p0_f2_left', 'active');
    await page.selectOption('#p0_f2_right', 'joined');
    const issuesAt = (anchor: string) => page.textContent(`[data-issues-for="${anchor}"]`);
    await eventually('the incompatible pair to be explained', async () =>
      (await issuesAt('/tables/0/fields/2'))?.includes('boolean values cannot be converted to date'),
    );
    await step(page, 'mappings-incompatible');
    await page.selectOption('#p0_f2_left', 'name');
    await page.selectOption('#p0_f2_right', 'full_name');
    await eventually('no error left', async () =>
      /^0 error\(s\)/.test((await page.textContent('#validation-status')) ?? ''),
    );
    // notes -> a table created in MariaDB.
    await go(page, page.click('#add-pair'));
    await page.selectOption('#p1_left_table', 'notes');
    await page.selectOption('#p1_right_table', '+create');
    await eventually(
      'the fields to be offered as creates',
      async () => (await page.locator('#p1_f1_right-create').count()) > 0,
    );
    await page.fill('#p1_right_table-create', 'notes');
    await page.selectOption('#p1_direction', 'left_to_right');
    expect(await page.isChecked('input[name=delete_approval][value=review_required]')).toBe(true);
    await eventually('the created table among what saving writes', async () =>
      (await page.textContent('#save-effects'))?.includes('creates the table(s) notes'),
    );
    await step(page, 'mappings');
    await go(page, page.click('#save'));
    expect(await page.textContent('[role=status]')).toContain('The mappings are saved');

    // Review: the suggested match field (email, unique and required on both sides), then Start.
    await go(page, page.click('a:has-text("review and start")'));
    expect(await page.inputValue('#match-0')).toBe('email=email');
    expect(await page.textContent('#match-0-suggested')).toContain('email = email');
    expect(await page.textContent('.preview')).toContain('1 match on the chosen field');
    await step(page, 'review');
    await go(page, page.click('#start'));
    expect(new URL(page.url()).pathname).toBe(`/app/syncs/${syncId}`);
    await page.evaluate('window.notReloaded = true');
    // Small pages: the run takes long enough to be watched at 2 s a refresh.
    await w.startWorker({ ENGINE_ACCOUNT_ID: owner.id, ENGINE_PAGE_SIZE: '500', ENGINE_LEASE_SECONDS: '3' });
    // Paced until progress has been seen: a fast machine could finish between two refreshes.
    const paced = pace(w.worker!);
    const first = await eventually(
      'records done while the initial sync runs',
      async () => {
        const seen = await initialDone(page);
        return seen && seen.done > 0 && seen.done < seen.total ? seen : null;
      },
      60_000,
    ).finally(() => paced.release());
    expect(first.total).toBeGreaterThanOrEqual(ROWS);
    expect(await page.textContent('#initial-rate')).toMatch(/^[\d,]+ records\/s$/);
    await step(page, 'overview-progress');
    await eventually(
      'the initial sync done',
      async () => (await page.textContent('#initial-sync'))?.includes('done'),
      90_000,
    );
    expect(await page.evaluate('window.notReloaded === true')).toBe(true);
    const done = await initialDone(page);
    expect(done && done.done === done.total && done.total >= ROWS).toBe(true);
    await step(page, 'overview-done');
    const [count] = (await my.sql('SELECT COUNT(*) AS n FROM contacts')) as { n: number }[];
    expect(Number(count!.n)).toBe(ROWS + 1);
    expect(await pg.sql(`SELECT name FROM people WHERE email = 'alan@example.com'`)).toEqual([
      { name: 'Alan Turing' },
    ]);
    expect(((await my.sql('SELECT COUNT(*) AS n FROM notes')) as { n: number }[])[0]!.n).toBe(2);
  }, 150_000);

  it('finds an edit in the operations log, retries a fixed record issue, approves a held delete', async () => {
    const { page } = browser;
    // Someone edits a row in PostgreSQL: the person finds the operation and its field change.
    await pg.sql(`UPDATE people SET name = 'Ada King' WHERE id = 1`);
    await page.goto(url(`/app/syncs/${syncId}`));
    await go(page, page.click('#all-operations'));
    // Detected in PostgreSQL (poll), written to MariaDB (push); a record is named by its first text field.
    const updated = page
      .locator('#operations tr', { hasText: 'p1@example.com' })
      .filter({ hasText: 'updated (push)' });
    await reloadUntil(page, 'the edit in the operations log', async () => (await updated.count()) === 1);
    await step(page, 'operations');
    await go(page, updated.locator('a:has-text("Details")').click());
    expect(await page.locator('#field-changes tr', { hasText: 'full_name' }).textContent()).toContain(
      'Ada King',
    );
    await step(page, 'operation');

    // A name too long for MariaDB's VARCHAR(60) (Lockstep checks it against the schema it read): fixed in
    // PostgreSQL, the record syncs with that change and its issue clears itself, no retry needed.
    await pg.sql(`UPDATE people SET name = $1 WHERE id = 4`, [`${'Very long name '.repeat(5)}4`]);
    await page.goto(url(`/app/syncs/${syncId}`));
    await go(page, page.click('#all-issues'));
    const tooLong = page.locator('section[aria-labelledby=type-record] tr[data-issue]', {
      hasText: 'p4@example.com',
    });
    await reloadUntil(page, 'the too-long issue', async () => (await tooLong.count()) === 1);
    expect(await tooLong.textContent()).toContain('longer than 60 characters');
    await go(page, tooLong.locator('a').first().click());
    await step(page, 'issue-too-long');
    await pg.sql(`UPDATE people SET name = 'Short name 4' WHERE id = 4`);
    await reloadUntil(page, 'the issue to clear itself', async () =>
      Boolean((await page.textContent('#issue-state'))?.includes('resolved')),
    );
    expect(await my.sql('SELECT full_name FROM contacts WHERE id = 4')).toEqual([
      { full_name: 'Short name 4' },
    ]);

    // Too long again, this time kept: the person widens the MariaDB column and retries. The retried push
    // reads the column's current type (not the VARCHAR(60) read at setup), so the name arrives.
    const longName = `${'Very long name '.repeat(5)}5`;
    await pg.sql(`UPDATE people SET name = $1 WHERE id = 5`, [longName]);
    await page.goto(url(`/app/syncs/${syncId}/issues`));
    const widen = page.locator('section[aria-labelledby=type-record] tr[data-issue]', {
      hasText: 'p5@example.com',
    });
    await reloadUntil(page, 'the second too-long issue', async () => (await widen.count()) === 1);
    await go(page, widen.locator('a').first().click());
    expect(await page.textContent('#suggested')).toContain('widen the right field');
    await my.sql('ALTER TABLE contacts MODIFY full_name VARCHAR(120) NOT NULL');
    await go(page, page.click('button:has-text("Retry")'));
    expect(await page.textContent('#issue-state')).toContain('resolved');
    await reloadUntil(page, 'the widened column to take the name', async () =>
      Boolean((await page.textContent('#after-ops'))?.includes('updated (push) on the right side')),
    );
    expect(await page.textContent('#after-state')).toContain('has not come back');
    expect(await my.sql('SELECT full_name FROM contacts WHERE id = 5')).toEqual([{ full_name: longName }]);

    // A name MariaDB's CHECK constraint refuses: the write fails, the issue says why.
    await pg.sql(`UPDATE people SET name = $1 WHERE id = 2`, [REFUSED_NAME]);
    await page.goto(url(`/app/syncs/${syncId}/issues`));
    const row = page.locator('section[aria-labelledby=type-record] tr[data-issue]', {
      hasText: 'p2@example.com',
    });
    await reloadUntil(page, 'the record issue', async () => (await row.count()) === 1);
    await step(page, 'issues');
    await go(page, row.locator('a').first().click());
    expect(await page.textContent('h1')).toContain('no_email_in_name');
    // MariaDB's name for its error 4025 (mysql2 names it after MySQL's 4025, an unrelated InnoDB error).
    expect(await page.textContent('#explanation')).toContain('(code ER_CONSTRAINT_FAILED)');
    expect(await page.textContent('#issue-state')).toContain('open');
    expect(await page.textContent('#suggested')).toContain('What to do');
    await step(page, 'issue');
    // The person drops the app's over-strict rule in MariaDB (the cause), then retries: the record arrives.
    await my.sql('ALTER TABLE contacts DROP CONSTRAINT no_email_in_name');
    await go(page, page.click('button:has-text("Retry")'));
    expect(await page.textContent('[role=status]')).toContain('Retrying');
    expect(await page.textContent('#issue-state')).toContain('resolved');
    await reloadUntil(page, 'the operation after the retry', async () =>
      Boolean((await page.textContent('#after-ops'))?.includes('updated')),
    );
    expect(await page.textContent('#after-state')).toContain('has not come back');
    await step(page, 'issue-retried');
    expect(await my.sql('SELECT full_name FROM contacts WHERE id = 2')).toEqual([
      { full_name: REFUSED_NAME },
    ]);

    // A row deleted in MariaDB: held for review (delete approval on), approved from the held deletes page.
    await my.sql('DELETE FROM contacts WHERE id = 3');
    await page.goto(url('/app'));
    const held = page.locator(`tr[data-sync="${syncId}"] .needs-you a:has-text("held delete")`);
    await reloadUntil(page, 'the held delete under Needs you', async () => (await held.count()) === 1);
    await step(page, 'needs-you');
    await go(page, held.click());
    const waiting = page.locator('tr[data-record]', { hasText: 'p3@example.com' });
    expect(await waiting.count()).toBe(1);
    await step(page, 'held-deletes');
    await go(page, waiting.locator('button:has-text("Approve delete")').click());
    expect(await page.textContent('#empty')).toContain('Nothing is waiting for review');
    await eventually(
      'the approved delete to reach PostgreSQL',
      async () => (await pg.sql('SELECT id FROM people WHERE id = 3')).length === 0,
    );
    await step(page, 'held-deletes-approved');
  }, 90_000);

  it('pauses and deletes the sync', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}`));
    await go(page, page.click('#pause'));
    expect(await page.textContent('[role=status]')).toContain('Paused');
    expect(await page.textContent('#sync-status')).toContain('paused');
    await step(page, 'paused');
    await go(page, page.click('#delete'));
    expect(await page.textContent('h1')).toBe('Delete Journey?');
    await step(page, 'delete-confirm');
    await go(page, page.click('#confirm-delete'));
    expect(await page.textContent('[role=status]')).toContain('Deleted the sync Journey');
    expect(await page.locator(`a[href="/app/syncs/${syncId}"]`).count()).toBe(0);
  });

  it('sets up a scheduled live export and watches its run', async () => {
    const { page } = browser;
    await page.goto(url('/app/live-exports'));
    await go(page, page.click('#new-live-export'));
    await page.fill('#new-name', 'Orders');
    await page.selectOption('#new-source', 'postgres');
    await page.selectOption('#new-destination', 'mysql');
    await go(page, page.click('#create'));
    const lexId = new URL(page.url()).pathname.split('/')[3]!;
    await page.fill('#auth-connectionString', pg.url);
    await go(page, page.click('button:has-text("Check and list bases")'));
    await page.selectOption('#pick', pg.schema);
    await go(page, page.click('button:has-text("Connect")'));
    await go(page, page.click('section[aria-labelledby=todo] a'));
    await page.fill('#auth-connectionString', my.url);
    await go(page, page.click('button:has-text("Check and list locations")'));
    await page.selectOption('#pick', my.database);
    await go(page, page.click('button:has-text("Connect")'));
    await go(page, page.click('#edit-mappings'));
    await page.check('label:has-text("orders") input');
    await go(page, page.click('#show-fields'));
    await page.fill('#t0-dest', 'orders_copy');
    await step(page, 'live-export-map');
    await go(page, page.click('#store-mappings'));
    expect(await page.textContent('[role=status]')).toContain('Mappings stored');
    await page.goto(url(`/app/live-exports/${lexId}`));
    await go(page, page.click('#save'));
    expect(await page.textContent('[role=status]')).toContain('1 table(s) ready');
    await page.selectOption('#cadence', 'daily');
    await page.fill('#time-of-day', '06:30');
    await page.fill('#timezone', 'Europe/Berlin');
    await go(page, page.click('#save-schedule'));
    expect(await page.textContent('#schedule-text')).toContain('Daily at 06:30 (Europe/Berlin)');
    await step(page, 'live-export-scheduled');

    // The worker's clock reaches the slot the page announced: the scheduled run shows up and finishes.
    const next = await page.getAttribute('#schedule-text time', 'datetime');
    await w.setClock(new Date(Date.parse(next!) + 2000));
    await w.tick();
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
    expect(await page.evaluate('window.notReloaded === true')).toBe(true);
    expect(await scheduled.locator('.run-progress').textContent()).toContain(`${EXPORT_ROWS} written`);
    await step(page, 'live-export-run');
    const [count] = (await my.sql('SELECT COUNT(*) AS n FROM orders_copy')) as { n: number }[];
    expect(Number(count!.n)).toBe(EXPORT_ROWS);
  }, 90_000);
});
