import { DataSource } from 'typeorm';
import { SyncEntity } from '@lockstep/persistence';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from '../support/scratch-dbs';
import { bearer } from '../support/test-app';
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

/**
 * The mappings editor and the review page's additions in real Chromium against the real API and databases:
 * a person maps two tables PostgreSQL <-> MariaDB (one of them created in MariaDB), sees an incompatible pair
 * explained as they edit, saves, is told when someone else changed the mappings meanwhile (If-Match), and
 * starts the sync with the suggested match field; the 404 for other accounts and CSRF on the new routes.
 */
describe('console: mappings editor, review suggestions', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let db: DataSource;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let owner: { id: string; email: string };
  let other: { id: string; email: string };
  let secret: string;
  let syncId: string;

  const url = (path: string) => `${server.base}${path}`;
  const api = () => server.t.http();
  const navigating = <T>(action: Promise<T>) =>
    Promise.all([browser.page.waitForNavigation(), action]).then(([, result]) => result);
  const issuesAt = (anchor: string) =>
    browser.page
      .locator(`[data-issues-for="${anchor}"]`)
      .textContent()
      .then((t) => t ?? '');

  beforeAll(async () => {
    server = await startConsoleServer();
    db = server.t.app.get(DataSource);
    owner = (await server.t.account()) as { id: string; email: string };
    other = (await server.t.account()) as { id: string; email: string };
    secret = await server.t.key(owner.id, 'readwrite');
    pg = await scratchPg(`
      CREATE TABLE customers (id integer PRIMARY KEY, email text NOT NULL UNIQUE, name text, active boolean);
      INSERT INTO customers VALUES (1, 'ada@example.com', 'Ada', true), (2, 'grace@example.com', 'Grace', false);
      CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL, written_on date);
      INSERT INTO notes VALUES (1, 'first', '2026-01-02');
    `);
    my = await scratchMysql([
      'CREATE TABLE clients (id INT PRIMARY KEY, email VARCHAR(100) NOT NULL UNIQUE, full_name VARCHAR(60), joined DATE)',
      "INSERT INTO clients VALUES (1, 'ada@example.com', 'Ada', '2026-01-01'), (7, 'alan@example.com', 'Alan', NULL)",
    ]);
    const created = await api()
      .post('/v1/sync/syncs')
      .set(bearer(secret))
      .send({
        name: 'Customers',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      })
      .expect(201);
    syncId = created.body.id;
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([pg?.drop().catch(() => undefined), my?.drop().catch(() => undefined)]);
    await server?.close();
  });

  it('maps two tables with one create, explains an incompatible pair as the person edits, and saves', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}`));
    await signIn(page, owner.email);
    await navigating(page.click('#edit-mappings'));
    expect(await page.textContent('h1')).toBe('Mappings of "Customers"');
    await navigating(page.click('#add-pair'));

    // Choosing a table lists its fields in place (no reload; the focused control keeps focus); with both chosen, same-named fields
    // are paired.
    await page.focus('#p0_left_table');
    await page.selectOption('#p0_left_table', 'customers');
    await page.selectOption('#p0_right_table', 'clients');
    await eventually(
      'the same-named fields to be paired',
      async () =>
        (await page.locator('#p0_f1_right').count()) > 0 && (await page.inputValue('#p0_f0_left')) === 'id',
    );
    expect(
      await page.evaluate(
        () =>
          (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document
            .activeElement?.id,
      ),
    ).toBe('p0_left_table');
    expect(await page.inputValue('#p0_f1_right')).toBe('email');
    expect(await issuesAt('/tables/0/fields/0')).toContain('Types compatible');
    // text into VARCHAR(100): a warning (it never blocks) at the row.
    expect(await issuesAt('/tables/0/fields/1')).toContain('may lose information');

    // A pair of a boolean and a date: explained at its row before anything is saved, without a reload.
    await navigating(page.click('#pair-0 button:has-text("Add a field pair")'));
    await page.selectOption('#p0_f2_left', 'active');
    await page.selectOption('#p0_f2_right', 'joined');
    await eventually('the incompatible pair to be explained', async () =>
      (await issuesAt('/tables/0/fields/2')).includes('incompatible_field_types'),
    );
    const explained = await issuesAt('/tables/0/fields/2');
    expect(explained).toContain('boolean values cannot be converted to date');
    expect(await page.textContent('#validation-status')).toMatch(/[1-9]\d* error\(s\)/);
    await shot(page, 'mappings-incompatible');
    await expectAccessible(page);
    // Fixed by picking the right pair: text into VARCHAR(60) is only a warning, no error is left.
    await page.selectOption('#p0_f2_left', 'name');
    await page.selectOption('#p0_f2_right', 'full_name');
    await eventually('the row to be checked again', async () =>
      (await issuesAt('/tables/0/fields/2')).includes('Warning: "name" (left) -> "full_name" (right)'),
    );
    expect(await page.textContent('#validation-status')).toMatch(/^0 error\(s\)/);

    // A second pair whose MariaDB table is created: the fields of the PostgreSQL table are offered as creates.
    await navigating(page.click('#add-pair'));
    await page.selectOption('#p1_left_table', 'notes');
    await page.selectOption('#p1_right_table', '+create');
    await eventually(
      'the fields to be offered as creates',
      async () => (await page.locator('#p1_f1_right-create').count()) > 0,
    );
    await page.fill('#p1_right_table-create', 'notes');
    expect(await page.inputValue('#p1_f1_right-create')).toBe('body');
    await page.selectOption('#p1_direction', 'left_to_right');
    // What saving writes into MariaDB follows the typed name.
    await eventually('the new table to be named among what saving writes', async () =>
      (await page.textContent('#save-effects'))?.includes('creates the table(s) notes'),
    );
    await shot(page, 'mappings-editor');
    await expectAccessible(page);

    await navigating(page.click('#save'));
    expect(await page.textContent('[role=status]')).toContain('The mappings are saved');
    const tables = (await my.sql(
      `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'notes'`,
    )) as { c: string }[];
    expect(tables.map((t) => t.c)).toEqual(
      expect.arrayContaining(['id', 'body', 'written_on', 'lockstep_id']),
    );
    const saved = await api().get(`/v1/sync/syncs/${syncId}/mappings`).set(bearer(secret)).expect(200);
    expect(saved.body.tables).toHaveLength(2);
    expect(saved.body.tables[1].direction).toBe('left_to_right');
    expect(saved.body.tables[0].fields.map((f: { right_field: string }) => f.right_field)).toEqual([
      'id',
      'email',
      'full_name',
    ]);
  });

  it('says so when someone else changed the mappings meanwhile, and keeps the edit', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}/mappings`));
    // Someone else (an agent over the API) changes the mappings after the page was opened.
    const current = await api().get(`/v1/sync/syncs/${syncId}/mappings`).set(bearer(secret)).expect(200);
    const theirs = {
      tables: [{ ...current.body.tables[0], direction: 'left_to_right' }, current.body.tables[1]],
    };
    await api()
      .put(`/v1/sync/syncs/${syncId}/mappings`)
      .set(bearer(secret))
      .set('If-Match', current.headers['etag'])
      .send(theirs)
      .expect(200);
    await page.selectOption('#p0_right_delete', 'do_nothing');
    const [response] = await Promise.all([page.waitForNavigation(), page.click('#save')]);
    expect(response?.status()).toBe(412);
    expect(await page.textContent('#conflict')).toContain('Someone else changed these mappings');
    expect(await page.inputValue('#p0_right_delete')).toBe('do_nothing');
    await shot(page, 'mappings-conflict');
    await expectAccessible(page);
    const after = await api().get(`/v1/sync/syncs/${syncId}/mappings`).set(bearer(secret)).expect(200);
    expect(after.body.tables[0].direction).toBe('left_to_right');
    expect(after.body.tables[0].right.record_delete_behavior).toBe('sync');
    // Their version, loaded again, shows their change.
    await navigating(page.click('#conflict a'));
    expect(await page.inputValue('#p0_direction')).toBe('left_to_right');
  });

  it('suggests the match field on review, states what starting changes, and starts with it', async () => {
    const { page } = browser;
    await page.goto(url(`/app/syncs/${syncId}/review`));
    // email is unique and required on both sides (the connectors say so in type_details): suggested over the
    // primary keys (id = id), preselected, and the preview counts the matches on it.
    expect(await page.inputValue('#match-0')).toBe('email=email');
    expect(await page.textContent('#match-0-suggested')).toContain('email = email');
    expect(await page.textContent('.preview')).toContain('1 match on the chosen field');
    expect(await page.textContent('#effects-left')).toContain('triggers on each mapped table');
    expect(await page.textContent('#effects-left')).toContain('customers');
    expect(await page.textContent('#effects-right')).toContain('lockstep_change_log');
    expect(await page.getAttribute('#edit-mappings', 'href')).toBe(`/app/syncs/${syncId}/mappings`);
    await shot(page, 'review-suggested-match');
    await expectAccessible(page);
    await navigating(page.click('#start'));
    expect(page.url()).toContain(`/app/syncs/${syncId}`);
    const sync = await db.getRepository(SyncEntity).findOneByOrFail({ id: syncId });
    expect(sync.status).toBe('active');
    expect(sync.startOptions?.match).toEqual([{ tablePair: 0, leftField: 'email', rightField: 'email' }]);
  });

  it('works without JavaScript: Load fields and Check post the form, a refused save shows its issues at the row', async () => {
    const created = await api()
      .post('/v1/sync/syncs')
      .set(bearer(secret))
      .send({
        name: 'Plain',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      })
      .expect(201);
    const plain = await openBrowser({ javaScript: false });
    try {
      const { page } = plain;
      page.setDefaultTimeout(10_000);
      const go = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)]);
      await page.goto(url(`/app/syncs/${created.body.id}/mappings`));
      await signIn(page, owner.email);
      await go('#add-pair');
      await page.selectOption('#p0_left_table', 'customers');
      await page.selectOption('#p0_right_table', 'clients');
      await go('#pair-0 button:has-text("Load fields")');
      expect(await page.inputValue('#p0_f1_left')).toBe('email');
      await go('#pair-0 button:has-text("Add a field pair")');
      await page.selectOption('#p0_f2_left', 'active');
      await page.selectOption('#p0_f2_right', 'joined');
      await go('#check');
      expect(await page.textContent('[data-issues-for="/tables/0/fields/2"]')).toContain(
        'boolean values cannot be converted to date',
      );
      // A create without a name is refused before anything is written: shown at that table, edits kept.
      await go('#add-pair');
      await page.selectOption('#p1_left_table', 'notes');
      await page.selectOption('#p1_right_table', '+create');
      const [response] = await go('#save');
      expect(response?.status()).toBe(400);
      expect(await page.textContent('[data-issues-for="/tables/1/right_table"]')).toContain('Error:');
      expect(await page.inputValue('#p0_f2_left')).toBe('active');
      // The other pair is still checked in full: its incompatible row is not called compatible.
      expect(await page.textContent('[data-issues-for="/tables/0/fields/2"]')).toContain(
        'boolean values cannot be converted to date',
      );
      expect(await page.textContent('#pair-1')).not.toContain('Types compatible');
      // (axe-core needs JavaScript in the page: this markup is the editor's, checked in the tests above.)
      await shot(page, 'mappings-refused-save');
      const stored = await api()
        .get(`/v1/sync/syncs/${created.body.id}/mappings`)
        .set(bearer(secret))
        .expect(200);
      expect(stored.body.tables).toEqual([]);
    } finally {
      await plain.close();
    }
  });

  it('answers other accounts with 404 and refuses posts without the form token', async () => {
    const { page } = browser;
    const status = await page.evaluate(async (path) => {
      const response = await fetch(path, {
        method: 'POST',
        body: new URLSearchParams({ pairs: '0' }),
        credentials: 'same-origin',
      });
      return response.status;
    }, `/app/syncs/${syncId}/mappings/check`);
    expect(status).toBe(403);
    const stranger = await openBrowser();
    try {
      await stranger.page.goto(url(`/app/syncs/${syncId}/mappings`));
      await signIn(stranger.page, other.email);
      expect(await stranger.page.textContent('h1')).toBe('Page not found');
      const response = await stranger.page.goto(url(`/app/syncs/${syncId}/mappings`));
      expect(response?.status()).toBe(404);
      // Their own form token does not reach another account's sync either: the same 404.
      const token = await stranger.page.inputValue('input[name=_csrf] >> nth=0');
      for (const action of ['mappings', 'mappings/check']) {
        const answered = await stranger.page.evaluate(
          async ([path, csrf]) =>
            (
              await fetch(path!, {
                method: 'POST',
                body: new URLSearchParams({ _csrf: csrf!, pairs: '0', action: 'save' }),
                credentials: 'same-origin',
              })
            ).status,
          [`/app/syncs/${syncId}/${action}`, token],
        );
        expect([action, answered]).toEqual([action, 404]);
      }
    } finally {
      await stranger.close();
    }
  });
});
