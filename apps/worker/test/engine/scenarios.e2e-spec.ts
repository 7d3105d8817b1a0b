/**
 * Engine scenarios between real PostgreSQL and MariaDB databases: linked records (foreign keys translated
 * through record links, two passes for links to records created in the same batch), filters and the
 * sync-enabled field, the lifecycle of held deletes (closes by itself, ignore, restore, do_nothing,
 * auto_approve), the full scan as a safety net for missed change capture, rejected credentials, the
 * per-record queue, several syncs in one account and the lease between two workers.
 */
import type { INestApplicationContext } from '@nestjs/common';
import mysql from 'mysql2/promise';
import type { DataSource } from 'typeorm';
import { MysqlConnection } from '@lockstep/connector-mysql';
import { PostgresConnection } from '@lockstep/connector-postgres';
import {
  createStartedSync,
  inProcessWorker,
  type My,
  MYSQL_URL,
  phase,
  type Pg,
  type PairSpec,
  scratchMysql,
  scratchPg,
  settledCount,
  store,
  unique,
  waitFor,
} from '../support/fixture';

jest.setTimeout(120_000);

type Row = Record<string, unknown>;

describe('engine scenarios: PostgreSQL <-> MariaDB', () => {
  let db: DataSource;
  const cleanups: (() => Promise<unknown>)[] = [];
  const workers: INestApplicationContext[] = [];

  beforeAll(async () => {
    db = await store();
  });
  afterAll(async () => {
    await db.destroy();
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.close().catch(() => undefined);
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function databases(pgSetup: string, mySetup: string[]): Promise<{ pg: Pg; my: My }> {
    const pg = await scratchPg(pgSetup);
    cleanups.push(() => pg.drop());
    const my = await scratchMysql(mySetup);
    cleanups.push(() => my.drop());
    return { pg, my };
  }

  async function worker(
    accountId: string,
    extra: Record<string, string> = {},
  ): Promise<INestApplicationContext> {
    const app = await inProcessWorker(accountId, extra);
    workers.push(app);
    return app;
  }

  async function start(
    pg: Pg,
    my: My,
    pairs: PairSpec[],
    options: Partial<Parameters<typeof createStartedSync>[1]> = {},
    env: Record<string, string> = {},
  ) {
    const ids = await createStartedSync(db, {
      left: { connector: 'postgres', base: pg.schema },
      right: { connector: 'mysql', base: my.database },
      pairs,
      ...options,
    });
    const app = await worker(ids.accountId, env);
    await waitFor('initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    return { ...ids, app };
  }

  const q = <T = Row>(text: string, params: unknown[] = []) => db.query(text, params) as Promise<T[]>;
  const links = (syncId: string, pair = 0) =>
    q<Row>(`SELECT * FROM record_links WHERE sync_id = $1 AND table_pair = $2`, [syncId, pair]);
  const linkOf = async (syncId: string, side: 'left' | 'right', remoteId: string | number, pair = 0) =>
    (
      await q<Row>(
        `SELECT * FROM record_links WHERE sync_id = $1 AND table_pair = $2 AND ${side}_remote_id = $3`,
        [syncId, pair, String(remoteId)],
      )
    )[0];
  const opCount = async (syncId: string) =>
    Number(
      (await q<{ n: string }>(`SELECT count(*) AS n FROM operation_log WHERE sync_id = $1`, [syncId]))[0]!.n,
    );
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  describe('linked records', () => {
    const pgSetup = `
      CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL);
      CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL, company_id integer REFERENCES companies(id), manager_id integer REFERENCES people(id));
      INSERT INTO companies (name) VALUES ('Acme'), ('Globex');
      INSERT INTO people (name, company_id, manager_id) VALUES ('Ada', 1, NULL);
      INSERT INTO people (name, company_id, manager_id) VALUES ('Bob', 1, 1);
      INSERT INTO people (name, company_id, manager_id) VALUES ('Cy', 2, 2);
    `;
    const mySetup = [
      `CREATE TABLE orgs (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(60) NOT NULL) AUTO_INCREMENT = 1000`,
      `CREATE TABLE contacts (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(60) NOT NULL, org_id INT, manager_id INT,
         FOREIGN KEY (org_id) REFERENCES orgs(id), FOREIGN KEY (manager_id) REFERENCES contacts(id)) AUTO_INCREMENT = 1000`,
      `INSERT INTO orgs (name) VALUES ('Initech')`,
      `INSERT INTO contacts (name, org_id) VALUES ('Dee', 1000)`,
    ];
    const pairs: PairSpec[] = [
      // People first in the mappings: the engine must still create companies before people.
      {
        left: 'people',
        right: 'contacts',
        fields: [
          ['name', 'name'],
          ['company_id', 'org_id'],
          ['manager_id', 'manager_id'],
        ],
      },
      { left: 'companies', right: 'orgs', fields: [['name', 'name']] },
    ];

    /** Both sides as name-based graphs: person -> [company name, manager name]. */
    async function graphs(pg: Pg, my: My) {
      const left = await pg.sql<{ name: string; company: string | null; manager: string | null }>(
        `SELECT p.name, c.name AS company, m.name AS manager FROM people p LEFT JOIN companies c ON c.id = p.company_id LEFT JOIN people m ON m.id = p.manager_id ORDER BY p.name`,
      );
      const right = await my.sql<{ name: string; company: string | null; manager: string | null }>(
        `SELECT p.name, c.name AS company, m.name AS manager FROM contacts p LEFT JOIN orgs c ON c.id = p.org_id LEFT JOIN contacts m ON m.id = p.manager_id ORDER BY p.name`,
      );
      return { left, right };
    }

    it('the connectors report foreign keys as relations with their target table', async () => {
      const { pg, my } = await databases(pgSetup, mySetup);
      const { syncId } = await start(pg, my, pairs);
      const fields = await q<{
        side: string;
        remote_id: string;
        type_class: string;
        type_details: Row | null;
      }>(
        `SELECT t.side, f.remote_id, f.type_class, f.type_details FROM sync_fields f JOIN sync_tables t ON t.id = f.table_id WHERE t.sync_id = $1 AND f.remote_id IN ('company_id', 'org_id', 'manager_id')`,
        [syncId],
      );
      const byKey = new Map(fields.map((field) => [`${field.side}.${field.remote_id}`, field]));
      expect(byKey.get('left.company_id')).toMatchObject({
        type_class: 'relation',
        type_details: expect.objectContaining({ target_table: 'companies' }),
      });
      expect(byKey.get('left.manager_id')).toMatchObject({
        type_class: 'relation',
        type_details: expect.objectContaining({ target_table: 'people' }),
      });
      expect(byKey.get('right.org_id')).toMatchObject({
        type_class: 'relation',
        type_details: expect.objectContaining({ target_table: 'orgs' }),
      });
      expect(byKey.get('right.manager_id')).toMatchObject({
        type_class: 'relation',
        type_details: expect.objectContaining({ target_table: 'contacts' }),
      });
    });

    it('initial sync creates targets first and translates foreign keys; links within one batch arrive in a second pass; later transactions carry both records', async () => {
      const { pg, my } = await databases(pgSetup, mySetup);
      const { syncId } = await start(pg, my, pairs);
      const expected = [
        { name: 'Ada', company: 'Acme', manager: null },
        { name: 'Bob', company: 'Acme', manager: 'Ada' },
        { name: 'Cy', company: 'Globex', manager: 'Bob' },
        { name: 'Dee', company: 'Initech', manager: null },
      ];
      await waitFor('links translated on both sides', async () => {
        const { left, right } = await graphs(pg, my);
        return (
          JSON.stringify(left) === JSON.stringify(expected) &&
          JSON.stringify(right) === JSON.stringify(expected)
        );
      });
      // Different id spaces: the translation really happened.
      const ada = (
        await my.sql<{ id: number; org_id: number }>(`SELECT id, org_id FROM contacts WHERE name = 'Ada'`)
      )[0]!;
      expect(ada.id).toBeGreaterThanOrEqual(1000);
      expect(ada.org_id).toBeGreaterThanOrEqual(1000);
      expect(await links(syncId, 1)).toHaveLength(3);
      expect(await links(syncId, 0)).toHaveLength(4);

      // One transaction per side: a new company and a person pointing at it; a person and their manager created together.
      await pg.sql(
        `BEGIN; WITH c AS (INSERT INTO companies (name) VALUES ('Hooli') RETURNING id) INSERT INTO people (name, company_id) SELECT 'Erin', id FROM c; COMMIT;`,
      );
      // Two people pointing at each other, in one statement (the foreign key is checked at its end).
      await pg.sql(
        `INSERT INTO people (id, name, company_id, manager_id) VALUES (500, 'Fay', 2, 501), (501, 'Gus', 2, 500)`,
      );
      await my.sql(`START TRANSACTION`);
      await my.sql(`INSERT INTO orgs (name) VALUES ('Pied Piper')`);
      await my.sql(`INSERT INTO contacts (name, org_id) VALUES ('Hal', LAST_INSERT_ID())`);
      await my.sql(
        `INSERT INTO contacts (name, org_id, manager_id) SELECT 'Ivy', org_id, id FROM contacts WHERE name = 'Hal'`,
      );
      await my.sql(`COMMIT`);
      const later = [
        ...expected,
        { name: 'Erin', company: 'Hooli', manager: null },
        { name: 'Fay', company: 'Globex', manager: 'Gus' },
        { name: 'Gus', company: 'Globex', manager: 'Fay' },
        { name: 'Hal', company: 'Pied Piper', manager: null },
        { name: 'Ivy', company: 'Pied Piper', manager: 'Hal' },
      ].sort((a, b) => a.name.localeCompare(b.name));
      await waitFor('later inserts translated on both sides', async () => {
        const { left, right } = await graphs(pg, my);
        return (
          JSON.stringify(left) === JSON.stringify(later) && JSON.stringify(right) === JSON.stringify(later)
        );
      });
      // A relation changed later is translated too.
      await my.sql(
        `UPDATE contacts SET org_id = (SELECT id FROM orgs WHERE name = 'Hooli') WHERE name = 'Dee'`,
      );
      await waitFor(
        'changed relation carried',
        async () => (await graphs(pg, my)).left.find((p) => p.name === 'Dee')?.company === 'Hooli',
      );
      expect(
        await q(`SELECT code, message FROM sync_issues WHERE sync_id = $1 AND resolved_at IS NULL`, [syncId]),
      ).toEqual([]);
    });
  });

  it('a link to a record that cannot reach the other side yet is retried with growing delays, never dropped, and written as soon as the target exists', async () => {
    const { pg, my } = await databases(
      `CREATE TABLE companies (id integer PRIMARY KEY, name text NOT NULL, listed boolean NOT NULL);
       CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, company_id integer REFERENCES companies(id));
       INSERT INTO companies VALUES (1, 'Acme', true), (2, 'Hidden', false);
       INSERT INTO people VALUES (1, 'Ada', 1);`,
      [
        `CREATE TABLE orgs (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, listed BOOLEAN NOT NULL)`,
        `CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, org_id INT, FOREIGN KEY (org_id) REFERENCES orgs(id))`,
      ],
    );
    const listedOnly = {
      match: 'all',
      conditions: [{ side: 'left', field: 'listed', operator: 'equals', value: true }],
    };
    const { syncId } = await start(pg, my, [
      {
        left: 'people',
        right: 'contacts',
        fields: [
          ['id', 'id'],
          ['name', 'name'],
          ['company_id', 'org_id'],
        ],
      },
      {
        left: 'companies',
        right: 'orgs',
        fields: [
          ['id', 'id'],
          ['name', 'name'],
          ['listed', 'listed'],
        ],
        filter: listedOnly,
      },
    ]);
    // Zed works for a company the filter keeps off the right side: his contact is created, the link waits.
    await pg.sql(`INSERT INTO people VALUES (2, 'Zed', 2)`);
    await waitFor(
      'Zed on the right',
      async () => (await my.sql(`SELECT id FROM contacts WHERE id = 2`)).length === 1,
      15_000,
    );
    const zed = (await linkOf(syncId, 'left', 2))!;
    const entry = () =>
      q<{ attempts: number; wait: number }>(
        `SELECT attempts, extract(epoch FROM not_before - now())::float AS wait FROM record_queue WHERE record_id = $1 AND type = 'push'`,
        [zed['id']],
      );
    const later = await waitFor(
      'the push retried a few times',
      async () => ((await entry())[0]?.attempts ?? 0) >= 4 && (await entry())[0],
      30_000,
      100,
    );
    const seen = Date.now();
    // Backing off: the fourth retry waits about 8 s, not 1 s (and there is one entry, not a storm of them).
    expect(later.wait).toBeGreaterThan(5);
    expect(await entry()).toHaveLength(1);
    expect(await my.sql(`SELECT org_id FROM contacts WHERE id = 2`)).toEqual([{ org_id: null }]);
    // The company becomes listed: it reaches the right side, and its create wakes the waiting push at once (it does
    // not wait out its backoff), which writes Zed's link there.
    await pg.sql(`UPDATE companies SET listed = true WHERE id = 2`);
    await waitFor(
      'Hidden on the right',
      async () => (await my.sql(`SELECT id FROM orgs WHERE id = 2`)).length === 1,
      15_000,
    );
    await waitFor(
      "Zed's company on the right",
      async () =>
        (await my.sql<{ org_id: number | null }>(`SELECT org_id FROM contacts WHERE id = 2`))[0]?.org_id ===
        2,
      15_000,
      50,
    );
    expect((Date.now() - seen) / 1000).toBeLessThan(later.wait - 2);
    await waitFor('the queue empty', async () => (await entry()).length === 0, 10_000);
  });

  describe('filters and the sync-enabled field', () => {
    it('a filter keeps failing records on their side, syncs the update that makes a record fail, resumes when it passes again, never deletes', async () => {
      const { pg, my } = await databases(
        `CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, status text);
         INSERT INTO items VALUES (1, 'one', 'active'), (2, 'two', 'inactive');`,
        [
          `CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, status VARCHAR(20))`,
          `INSERT INTO items VALUES (3, 'three', 'active'), (4, 'four', 'archived')`,
        ],
      );
      const filter = {
        match: 'all',
        conditions: [{ side: 'left', field: 'status', operator: 'equals', value: 'active' }],
      };
      const { syncId } = await start(
        pg,
        my,
        [
          {
            left: 'items',
            right: 'items',
            fields: [
              ['id', 'id'],
              ['name', 'name'],
              ['status', 'status'],
            ],
            filter,
          },
        ],
        { deleteApproval: 'auto_approve' },
      );
      const left = () =>
        pg.sql<{ id: number; name: string; status: string }>(
          `SELECT id, name, status FROM items ORDER BY id`,
        );
      const right = () =>
        my.sql<{ id: number; name: string; status: string }>(
          `SELECT id, name, status FROM items ORDER BY id`,
        );
      expect((await left()).map((r) => r.id)).toEqual([1, 2, 3]);
      expect((await right()).map((r) => r.id)).toEqual([1, 3, 4]);
      expect(await linkOf(syncId, 'left', 2)).toMatchObject({ left_filtered: true, right_remote_id: null });
      expect(await linkOf(syncId, 'right', 4)).toMatchObject({ right_filtered: true, left_remote_id: null });
      expect(await linkOf(syncId, 'left', 1)).toMatchObject({ left_filtered: false, right_filtered: false });

      // The update that makes record 1 fail is synced; later updates are not.
      await pg.sql(`UPDATE items SET status = 'inactive', name = 'one (retired)' WHERE id = 1`);
      await waitFor(
        'failing update synced',
        async () => (await right()).find((r) => r.id === 1)?.status === 'inactive',
      );
      expect((await right()).find((r) => r.id === 1)!.name).toBe('one (retired)');
      await waitFor('flagged', async () => (await linkOf(syncId, 'left', 1))?.left_filtered === true);
      await pg.sql(`UPDATE items SET name = 'one (hidden edit)' WHERE id = 1`);
      await my.sql(`UPDATE items SET name = 'four (edited)' WHERE id = 4`);
      await pg.sql(`UPDATE items SET name = 'two (edited)' WHERE id = 2`);
      await pg.sql(`INSERT INTO items VALUES (5, 'five', 'draft')`);
      await waitFor(
        'new filtered record linked',
        async () => (await linkOf(syncId, 'left', 5))?.left_filtered === true,
      );
      await pause(1500);
      expect(await right()).toEqual([
        { id: 1, name: 'one (retired)', status: 'inactive' },
        { id: 3, name: 'three', status: 'active' },
        { id: 4, name: 'four (edited)', status: 'archived' },
      ]);
      expect((await left()).map((r) => r.id)).toEqual([1, 2, 3, 5]);

      // Passing again: it syncs again, with the edits made meanwhile.
      await pg.sql(`UPDATE items SET status = 'active' WHERE id = 1`);
      await waitFor('syncs again', async () => {
        const row = (await right()).find((r) => r.id === 1);
        return row?.status === 'active' && row.name === 'one (hidden edit)';
      });
      await waitFor('flags cleared', async () => {
        const link = await linkOf(syncId, 'left', 1);
        return link?.left_filtered === false && link.right_filtered === false;
      });
      await pg.sql(`UPDATE items SET status = 'active' WHERE id = 2`);
      await waitFor(
        'record 2 created once it passes',
        async () => (await right()).find((r) => r.id === 2)?.name === 'two (edited)',
      );
      // Nothing was deleted because of the filter.
      expect((await right()).map((r) => r.id)).toEqual([1, 2, 3, 4]);
      expect((await left()).map((r) => r.id)).toEqual([1, 2, 3, 5]);
      expect(
        await q(`SELECT * FROM operation_log WHERE sync_id = $1 AND action = 'deleted'`, [syncId]),
      ).toEqual([]);
    });

    it('the sync-enabled field: only records with it on sync; turning it off syncs that update and then stops', async () => {
      const { pg, my } = await databases(
        `CREATE TABLE tasks (id integer PRIMARY KEY, title text NOT NULL, sync_me boolean NOT NULL DEFAULT false);
         INSERT INTO tasks VALUES (1, 'one', true), (2, 'two', false);`,
        [
          `CREATE TABLE tasks (id INT PRIMARY KEY, title VARCHAR(40) NOT NULL, sync_me BOOLEAN NOT NULL DEFAULT 0)`,
          `INSERT INTO tasks VALUES (3, 'three', 1), (4, 'four', 0)`,
        ],
      );
      const advancedSettings = [
        {
          kind: 'row_level_sync',
          side: 'left',
          field: 'sync_me',
          value: 'sync_me',
          description: 'Only records with "sync_me" checked are synced.',
        },
      ];
      const { syncId } = await start(pg, my, [
        {
          left: 'tasks',
          right: 'tasks',
          fields: [
            ['id', 'id'],
            ['title', 'title'],
            ['sync_me', 'sync_me'],
          ],
          advancedSettings,
        },
      ]);
      const left = () => pg.sql<{ id: number; title: string }>(`SELECT id, title FROM tasks ORDER BY id`);
      const right = () =>
        my.sql<{ id: number; title: string; sync_me: number }>(
          `SELECT id, title, sync_me FROM tasks ORDER BY id`,
        );
      expect((await left()).map((r) => r.id)).toEqual([1, 2, 3]);
      expect((await right()).map((r) => r.id)).toEqual([1, 3, 4]);
      expect(await linkOf(syncId, 'left', 2)).toMatchObject({
        left_sync_disabled: true,
        left_filtered: false,
      });
      expect(await linkOf(syncId, 'right', 4)).toMatchObject({ right_sync_disabled: true });
      expect(await linkOf(syncId, 'left', 1)).toMatchObject({
        left_sync_disabled: false,
        right_sync_disabled: false,
      });

      await pg.sql(`UPDATE tasks SET sync_me = true WHERE id = 2`);
      await waitFor('enabled record created', async () => (await right()).some((r) => r.id === 2));
      await my.sql(`UPDATE tasks SET sync_me = 0, title = 'three (off)' WHERE id = 3`);
      await waitFor(
        'the update that disables it is synced',
        async () => (await left()).find((r) => r.id === 3)?.title === 'three (off)',
      );
      await waitFor('flagged', async () => (await linkOf(syncId, 'right', 3))?.right_sync_disabled === true);
      await my.sql(`UPDATE tasks SET title = 'three (later)' WHERE id = 3`);
      await pause(1500);
      expect((await left()).find((r) => r.id === 3)!.title).toBe('three (off)');
      expect((await left()).map((r) => r.id)).toEqual([1, 2, 3]);
    });
  });

  describe('deletes', () => {
    const pgSetup = `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL);
      INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus'), (4, 'Margaret');`;
    const mySetup = [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)`];
    const fields: PairSpec['fields'] = [
      ['id', 'id'],
      ['name', 'name'],
    ];

    it('review: a record that reappears closes its pending delete; ignore holds for good; restore re-creates the copy', async () => {
      const { pg, my } = await databases(pgSetup, mySetup);
      const { syncId } = await start(
        pg,
        my,
        [{ left: 'people', right: 'contacts', fields }],
        { deleteApproval: 'review_required' },
        { ENGINE_FULL_SCAN_SECONDS: '2' },
      );
      const ids = async () => ({
        left: (await pg.sql<{ id: number }>(`SELECT id FROM people ORDER BY id`)).map((r) => r.id),
        right: (await my.sql<{ id: number }>(`SELECT id FROM contacts ORDER BY id`)).map((r) => r.id),
      });
      expect(await ids()).toEqual({ left: [1, 2, 3, 4], right: [1, 2, 3, 4] });
      const pendingOf = async (remoteId: number) =>
        await q<Row>(
          `SELECT p.* FROM pending_deletes p JOIN record_links l ON l.id = p.record_id WHERE p.sync_id = $1 AND l.left_remote_id = $2`,
          [syncId, String(remoteId)],
        );

      // 1. Reappears before review: the pending delete closes by itself.
      await my.sql(`DELETE FROM contacts WHERE id = 1`);
      const held = await waitFor('held', async () =>
        (await pendingOf(1)).find((p) => p.state === 'awaiting_review'),
      );
      expect(held).toMatchObject({ missing_side: 'right', delete_from_side: 'left' });
      await my.sql(`INSERT INTO contacts (id, name) VALUES (1, 'Ada again')`);
      await waitFor('closed by itself', async () => (await pendingOf(1))[0]?.state === 'closed');
      expect(
        (
          await q(`SELECT kind, actor FROM pending_delete_events WHERE pending_delete_id = $1 ORDER BY id`, [
            held.id,
          ])
        ).map((e) => e.kind),
      ).toEqual(['detected', 'closed']);
      await waitFor(
        'reappeared record syncs again',
        async () =>
          (await pg.sql<{ name: string }>(`SELECT name FROM people WHERE id = 1`))[0]?.name === 'Ada again',
      );
      expect(await linkOf(syncId, 'left', 1)).toMatchObject({ right_deleted: false, left_deleted: false });

      // 2. Ignore: nothing deleted, not raised again by later full scans.
      await my.sql(`DELETE FROM contacts WHERE id = 2`);
      const second = await waitFor('held', async () =>
        (await pendingOf(2)).find((p) => p.state === 'awaiting_review'),
      );
      await q(
        `UPDATE pending_deletes SET state = 'ignored', decided_at = now(), ignored_at = now() WHERE id = $1`,
        [second.id],
      );
      await q(
        `INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor) VALUES ($1, $2, $3, 'ignored', 'cli')`,
        [second.id, syncId, second.record_id],
      );
      const scansBefore = await q<{ n: string }>(
        `SELECT count(*) AS n FROM operation_log WHERE sync_id = $1 AND action = 'deleted' AND record_id = $2`,
        [syncId, second.record_id],
      );
      // Two full scans' worth of time.
      await pause(5000);
      expect(await pendingOf(2)).toHaveLength(1);
      expect((await pendingOf(2))[0]).toMatchObject({ state: 'ignored' });
      expect(
        (
          await q(`SELECT kind FROM pending_delete_events WHERE pending_delete_id = $1 ORDER BY id`, [
            second.id,
          ])
        ).map((e) => e.kind),
      ).toEqual(['detected', 'ignored']);
      expect(
        await q(
          `SELECT count(*) AS n FROM operation_log WHERE sync_id = $1 AND action = 'deleted' AND record_id = $2`,
          [syncId, second.record_id],
        ),
      ).toEqual(scansBefore);
      expect((await ids()).left).toContain(2);

      // 3. Restore (what `pending-delete restore` records): the missing copy is created again.
      await q(
        `UPDATE pending_deletes SET state = 'closed', requested_action = 'restore', decided_at = now() WHERE id = $1`,
        [second.id],
      );
      await waitFor(
        'restored',
        async () =>
          (await my.sql<{ name: string }>(`SELECT name FROM contacts WHERE id = 2`))[0]?.name === 'Grace',
      );
      await waitFor(
        'applied',
        async () =>
          (await q(`SELECT applied_at FROM pending_deletes WHERE id = $1`, [second.id]))[0]?.applied_at !==
          null,
      );
      expect(await linkOf(syncId, 'left', 2)).toMatchObject({ right_remote_id: '2', right_deleted: false });
      // The restored record syncs normally again.
      await my.sql(`UPDATE contacts SET name = 'Grace H' WHERE id = 2`);
      await waitFor(
        'restored copy syncs',
        async () =>
          (await pg.sql<{ name: string }>(`SELECT name FROM people WHERE id = 2`))[0]?.name === 'Grace H',
      );
      expect(await ids()).toEqual({ left: [1, 2, 3, 4], right: [1, 2, 3, 4] });
    });

    it('auto_approve deletes the other copy; do_nothing on the other side leaves it alone', async () => {
      const { pg, my } = await databases(pgSetup, mySetup);
      const { syncId } = await start(
        pg,
        my,
        [{ left: 'people', right: 'contacts', fields, rightBehavior: 'do_nothing' }],
        { deleteApproval: 'auto_approve' },
      );
      // Left delete: the right side is protected (do_nothing).
      await pg.sql(`DELETE FROM people WHERE id = 3`);
      await waitFor(
        'left copy marked deleted',
        async () => (await linkOf(syncId, 'left', 3))?.left_deleted === true,
      );
      await pause(1000);
      expect((await my.sql(`SELECT id FROM contacts WHERE id = 3`)).length).toBe(1);
      expect(await q(`SELECT * FROM pending_deletes WHERE sync_id = $1`, [syncId])).toEqual([]);
      // Right delete: the left side syncs deletes, auto-approved.
      await my.sql(`DELETE FROM contacts WHERE id = 4`);
      await waitFor(
        'left copy deleted',
        async () => (await pg.sql(`SELECT id FROM people WHERE id = 4`)).length === 0,
      );
      // The app delete commits first, the links' marks right after it.
      await waitFor(
        'both copies marked deleted',
        async () => {
          const link = await linkOf(syncId, 'right', 4);
          return link?.left_deleted && link?.right_deleted ? link : null;
        },
        5_000,
      );
      expect(await q(`SELECT * FROM pending_deletes WHERE sync_id = $1`, [syncId])).toEqual([]);
      // An edit of the protected right copy is not carried back as a new left record.
      await my.sql(`UPDATE contacts SET name = 'Linus T' WHERE id = 3`);
      await pause(1500);
      expect((await pg.sql<{ id: number }>(`SELECT id FROM people ORDER BY id`)).map((r) => r.id)).toEqual([
        1, 2,
      ]);
    });
  });

  describe('full scan', () => {
    it('carries a change capture missed, and a delete capture missed is verified and held (review_required)', async () => {
      const { pg, my } = await databases(
        `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL); INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');`,
        [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)`],
      );
      const { syncId } = await start(
        pg,
        my,
        [
          {
            left: 'people',
            right: 'contacts',
            fields: [
              ['id', 'id'],
              ['name', 'name'],
            ],
          },
        ],
        { deleteApproval: 'review_required' },
        { ENGINE_FULL_SCAN_SECONDS: '2' },
      );
      await pg.sql(
        `ALTER TABLE people DISABLE TRIGGER lockstep_capture_ins, DISABLE TRIGGER lockstep_capture_upd, DISABLE TRIGGER lockstep_capture_del`,
      );
      await pg.sql(`UPDATE people SET name = 'Ada L' WHERE id = 1`);
      await waitFor(
        'full scan carried the update',
        async () =>
          (await my.sql<{ name: string }>(`SELECT name FROM contacts WHERE id = 1`))[0]?.name === 'Ada L',
        15_000,
      );
      await pg.sql(`DELETE FROM people WHERE id = 2`);
      const held = await waitFor(
        'delete verified and held',
        async () => (await q<Row>(`SELECT * FROM pending_deletes WHERE sync_id = $1`, [syncId]))[0],
        15_000,
      );
      expect(held).toMatchObject({
        state: 'awaiting_review',
        missing_side: 'left',
        delete_from_side: 'right',
      });
      expect((await my.sql(`SELECT id FROM contacts WHERE id = 2`)).length).toBe(1);
      expect(
        await q(
          `SELECT side, trigger, details FROM operation_log WHERE sync_id = $1 AND action = 'deleted'`,
          [syncId],
        ),
      ).toEqual([{ side: 'left', trigger: 'poll', details: { decision: 'hold' } }]);
      // Later scans do not raise it again.
      await pause(4500);
      expect(await q(`SELECT count(*)::int AS n FROM pending_deletes WHERE sync_id = $1`, [syncId])).toEqual([
        { n: 1 },
      ]);
      expect((await my.sql(`SELECT id FROM contacts ORDER BY id`)).length).toBe(3);
    });

    it('auto_approve: a delete capture missed is carried out only after the full scan verified it', async () => {
      const { pg, my } = await databases(
        `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL); INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace');`,
        [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)`],
      );
      const { syncId } = await start(
        pg,
        my,
        [
          {
            left: 'people',
            right: 'contacts',
            fields: [
              ['id', 'id'],
              ['name', 'name'],
            ],
          },
        ],
        { deleteApproval: 'auto_approve' },
        { ENGINE_FULL_SCAN_SECONDS: '2' },
      );
      await pg.sql(
        `ALTER TABLE people DISABLE TRIGGER lockstep_capture_ins, DISABLE TRIGGER lockstep_capture_upd, DISABLE TRIGGER lockstep_capture_del`,
      );
      await pg.sql(`DELETE FROM people WHERE id = 2`);
      await waitFor(
        'deleted on the right',
        async () => (await my.sql(`SELECT id FROM contacts WHERE id = 2`)).length === 0,
        15_000,
      );
      // The app delete commits first, the links' marks right after it.
      await waitFor(
        'both copies marked deleted',
        async () => {
          const link = await linkOf(syncId, 'left', 2);
          return link?.left_deleted && link?.right_deleted ? link : null;
        },
        5_000,
      );
      expect((await my.sql(`SELECT id FROM contacts`)).length).toBe(1);
    });
  });

  it("two syncs sharing a MariaDB table (a hub) pass each other's writes on through the change feed, not only at a full scan", async () => {
    const { pg, my } = await databases(
      `CREATE TABLE north (id serial PRIMARY KEY, name text NOT NULL); CREATE TABLE south (id serial PRIMARY KEY, name text NOT NULL);`,
      [`CREATE TABLE hub (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(60) NOT NULL)`],
    );
    // No full scan during the test: only the change feeds can carry the record on.
    const noScan = { ENGINE_FULL_SCAN_SECONDS: '3600' };
    const north = await start(
      pg,
      my,
      [{ left: 'north', right: 'hub', fields: [['name', 'name']] }],
      {},
      noScan,
    );
    const south = await start(
      pg,
      my,
      [{ left: 'south', right: 'hub', fields: [['name', 'name']] }],
      {},
      noScan,
    );
    await pg.sql(`INSERT INTO north (name) VALUES ('from the north')`);
    // North's sync writes it into the hub; south's sees that write (not its own) and creates it in south.
    await waitFor(
      'the record reached the hub',
      async () => (await my.sql(`SELECT id FROM hub WHERE name = 'from the north'`)).length === 1,
      15_000,
    );
    await waitFor(
      'the record reached the south',
      async () => (await pg.sql(`SELECT id FROM south WHERE name = 'from the north'`)).length === 1,
      15_000,
    );
    // And back: an edit in the south goes through the hub to the north.
    await pg.sql(`UPDATE south SET name = 'edited in the south' WHERE name = 'from the north'`);
    await waitFor(
      'the edit reached the north',
      async () => (await pg.sql(`SELECT id FROM north WHERE name = 'edited in the south'`)).length === 1,
      15_000,
    );
    // Nothing loops: once converged, neither sync records further operations.
    await pause(2500);
    const settled = [await opCount(north.syncId), await opCount(south.syncId)];
    await pause(3000);
    expect([await opCount(north.syncId), await opCount(south.syncId)]).toEqual(settled);
    expect(await my.sql(`SELECT name FROM hub`)).toEqual([{ name: 'edited in the south' }]);
    expect(await pg.sql(`SELECT name FROM north`)).toEqual([{ name: 'edited in the south' }]);
    expect(await pg.sql(`SELECT name FROM south`)).toEqual([{ name: 'edited in the south' }]);
  });

  describe("an app edit of the target between the engine's read and its write", () => {
    /**
     * The app edits the right copy's note the moment Lockstep is about to update it: after the engine read the row
     * (reconcile step 3), before its UPDATE reached MariaDB. Without conditional updates the write replaced the
     * app's edit and nothing recorded a conflict.
     */
    async function editUnderTheWrite(my: My) {
      const updateRecords = MysqlConnection.prototype.updateRecords;
      const calls: { expected: unknown }[] = [];
      const spy = jest.spyOn(MysqlConnection.prototype, 'updateRecords').mockImplementation(async function (
        this: MysqlConnection,
        table,
        rows,
      ) {
        const row = rows.find((candidate) => candidate.remoteId === '1');
        if (row && calls.length === 0) {
          calls.push({ expected: row.expected });
          await my.sql(`UPDATE contacts SET note = 'the app, in between' WHERE id = 1`);
        }
        return updateRecords.call(this, table, rows);
      });
      cleanups.push(async () => spy.mockRestore());
      return calls;
    }
    const setup = () =>
      databases(
        `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, note text); INSERT INTO people VALUES (1, 'Ada', 'a'), (2, 'Grace', 'g');`,
        [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, note VARCHAR(40))`],
      );
    const conflictsOf = async (syncId: string) =>
      (
        await q<{
          side: string;
          details: { conflicts?: { field: string; winner: string; reason: string }[] } | null;
        }>(
          `SELECT side, details FROM operation_log WHERE sync_id = $1 AND action = 'updated' AND trigger = 'push' ORDER BY seq, batch_position`,
          [syncId],
        )
      ).flatMap((op) => (op.details?.conflicts ?? []).map((conflict) => ({ written: op.side, ...conflict })));

    it("two-way field: the write is not made; the app's edit is the later change and wins, recorded as a conflict", async () => {
      const { pg, my } = await setup();
      const { syncId } = await start(pg, my, [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['note', 'note'],
          ],
        },
      ]);
      const calls = await editUnderTheWrite(my);
      await pg.sql(`UPDATE people SET note = 'from the left', name = 'Ada L.' WHERE id = 1`);
      // Both apps converge just before the store commit that records the operations: wait for all three.
      const settledRow = JSON.stringify([{ name: 'Ada L.', note: 'the app, in between' }]);
      await waitFor(
        "both sides hold the app's edit and the conflict is recorded",
        async () =>
          JSON.stringify(await pg.sql(`SELECT name, note FROM people WHERE id = 1`)) === settledRow &&
          JSON.stringify(await my.sql(`SELECT name, note FROM contacts WHERE id = 1`)) === settledRow &&
          (await conflictsOf(syncId)).length > 0,
        15_000,
      );
      expect(calls).toEqual([{ expected: { name: 'Ada', note: 'a' } }]);
      expect(await my.sql(`SELECT name, note FROM contacts WHERE id = 1`)).toEqual([
        { name: 'Ada L.', note: 'the app, in between' },
      ]);
      expect(await pg.sql(`SELECT name, note FROM people WHERE id = 1`)).toEqual([
        { name: 'Ada L.', note: 'the app, in between' },
      ]);
      expect(await conflictsOf(syncId)).toEqual([
        { written: 'left', field: 'note', winner: 'right', reason: 'later_change' },
      ]);
      // Settled: nothing loops.
      const settled = await settledCount(() => opCount(syncId));
      await pause(2500);
      expect(await opCount(syncId)).toBe(settled);
    });

    it("two-way field, and the sync is paused right before the merge that follows: the app's edit still wins once the sync is resumed", async () => {
      const { pg, my } = await setup();
      const { syncId } = await start(pg, my, [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['note', 'note'],
          ],
        },
      ]);
      const calls = await editUnderTheWrite(my);
      // The merge after the dropped write begins by reading the right again: the sync is paused at that moment and
      // the read fails. Its runner stops; the one that resumes starts from the stored checkpoints, which are past
      // the left's change, so the left is read by id, not seen in its change feed again.
      const readByIds = MysqlConnection.prototype.readByIds;
      let stopped = 0;
      const spy = jest.spyOn(MysqlConnection.prototype, 'readByIds').mockImplementation(async function (
        this: MysqlConnection,
        table,
        ids,
      ) {
        if (calls.length === 1 && stopped === 0) {
          stopped += 1;
          await q(`UPDATE syncs SET status = 'paused' WHERE id = $1`, [syncId]);
          throw new Error('connection lost');
        }
        return readByIds.call(this, table, ids);
      });
      cleanups.push(async () => spy.mockRestore());
      await pg.sql(`UPDATE people SET note = 'from the left', name = 'Ada L.' WHERE id = 1`);
      await waitFor('the pause', async () => stopped === 1, 15_000);
      await pause(3000);
      const held = await linkOf(syncId, 'left', 1);
      expect(held).toMatchObject({ left_shadow: { id: 1, name: 'Ada', note: 'a' } });
      expect(held!['left_changed_at']).not.toBeNull();
      await q(`UPDATE syncs SET status = 'active' WHERE id = $1`, [syncId]);
      // Both writes of that merge are in once the left holds the app's edit and the right the left's name.
      await waitFor(
        "both sides hold the app's edit",
        async () =>
          (await pg.sql<{ note: string }>(`SELECT note FROM people WHERE id = 1`))[0]?.note ===
            'the app, in between' &&
          (await my.sql<{ name: string }>(`SELECT name FROM contacts WHERE id = 1`))[0]?.name === 'Ada L.',
        20_000,
      );
      expect(await my.sql(`SELECT name, note FROM contacts WHERE id = 1`)).toEqual([
        { name: 'Ada L.', note: 'the app, in between' },
      ]);
      expect(await pg.sql(`SELECT name, note FROM people WHERE id = 1`)).toEqual([
        { name: 'Ada L.', note: 'the app, in between' },
      ]);
      // Nothing is pending once that merge is committed (its writes to the apps come before its commit).
      await waitFor('the change times cleared', async () => {
        const link = await linkOf(syncId, 'left', 1);
        return link!['left_changed_at'] === null && link!['right_changed_at'] === null;
      });
    });

    it('PostgreSQL as the target: the same, the other way round', async () => {
      const { pg, my } = await setup();
      const { syncId } = await start(pg, my, [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['note', 'note'],
          ],
        },
      ]);
      await waitFor(
        'Ada on the right',
        async () => (await my.sql(`SELECT id FROM contacts WHERE id = 1`)).length === 1,
        15_000,
      );
      const updateRecords = PostgresConnection.prototype.updateRecords;
      const calls: unknown[] = [];
      const spy = jest
        .spyOn(PostgresConnection.prototype, 'updateRecords')
        .mockImplementation(async function (this: PostgresConnection, table, rows) {
          const row = rows.find((candidate) => candidate.remoteId === '1');
          if (row && calls.length === 0) {
            calls.push(row.expected);
            await pg.sql(`UPDATE people SET note = 'the app, in between' WHERE id = 1`);
          }
          return updateRecords.call(this, table, rows);
        });
      cleanups.push(async () => spy.mockRestore());
      await my.sql(`UPDATE contacts SET note = 'from the right' WHERE id = 1`);
      // Both apps converge just before the store commit that records the operations: wait for all three.
      const settledRow = JSON.stringify([{ note: 'the app, in between' }]);
      await waitFor(
        "both sides hold the app's edit and the conflict is recorded",
        async () =>
          JSON.stringify(await my.sql(`SELECT note FROM contacts WHERE id = 1`)) === settledRow &&
          JSON.stringify(await pg.sql(`SELECT note FROM people WHERE id = 1`)) === settledRow &&
          (await conflictsOf(syncId)).length > 0,
        15_000,
      );
      expect(calls).toEqual([{ note: 'a' }]);
      expect(await pg.sql(`SELECT note FROM people WHERE id = 1`)).toEqual([{ note: 'the app, in between' }]);
      expect(await conflictsOf(syncId)).toEqual([
        { written: 'right', field: 'note', winner: 'left', reason: 'later_change' },
      ]);
    });

    it("field carried one way: the source wins against the app's edit by direction, recorded as a conflict", async () => {
      const { pg, my } = await setup();
      const { syncId } = await start(pg, my, [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['note', 'note', 'left_to_right'],
          ],
        },
      ]);
      const calls = await editUnderTheWrite(my);
      await pg.sql(`UPDATE people SET note = 'from the left' WHERE id = 1`);
      await waitFor(
        'the left value reached the right',
        async () =>
          (await my.sql<{ note: string }>(`SELECT note FROM contacts WHERE id = 1`))[0]?.note ===
          'from the left',
        15_000,
      );
      expect(calls).toHaveLength(1);
      await waitFor('a conflict recorded', async () => (await conflictsOf(syncId)).length > 0);
      expect(await conflictsOf(syncId)).toEqual([
        { written: 'right', field: 'note', winner: 'left', reason: 'direction' },
      ]);
      expect(await pg.sql(`SELECT note FROM people WHERE id = 1`)).toEqual([{ note: 'from the left' }]);
    });

    it('initial sync: the matched record is merged again from both sides as they are, and the first-sight rule (preferred side) decides', async () => {
      const { pg, my } = await databases(
        `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, note text); INSERT INTO people VALUES (1, 'Ada', 'a'), (2, 'Grace', 'g');`,
        [
          `CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, note VARCHAR(40))`,
          `INSERT INTO contacts VALUES (1, 'Ada', 'right a')`,
        ],
      );
      const calls = await editUnderTheWrite(my);
      const { syncId } = await start(pg, my, [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['note', 'note'],
          ],
        },
      ]);
      await waitFor(
        'the preferred value on both sides',
        async () =>
          (await my.sql<{ note: string }>(`SELECT note FROM contacts WHERE id = 1`))[0]?.note === 'a',
        15_000,
      );
      expect(calls).toEqual([{ expected: { note: 'right a' } }]);
      await waitFor('a conflict recorded', async () => (await conflictsOf(syncId)).length > 0);
      expect(await conflictsOf(syncId)).toEqual([
        { written: 'right', field: 'note', winner: 'left', reason: 'preferred_side' },
      ]);
      expect(await pg.sql(`SELECT note FROM people ORDER BY id`)).toEqual([{ note: 'a' }, { note: 'g' }]);
    });
  });

  it('a change the target rejected, then an edit of the same field on the target: the later edit wins, reaches the source and clears the issue', async () => {
    const { pg, my } = await databases(
      `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, note text); INSERT INTO people VALUES (1, 'Ada', 'a'), (2, 'Grace', 'g');`,
      [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, note VARCHAR(40))`],
    );
    const { syncId } = await start(pg, my, [
      {
        left: 'people',
        right: 'contacts',
        fields: [
          ['id', 'id'],
          ['name', 'name'],
          ['note', 'note'],
        ],
      },
    ]);
    await waitFor(
      'Ada on the right',
      async () => (await my.sql(`SELECT id FROM contacts WHERE id = 1`)).length === 1,
      15_000,
    );
    const open = () =>
      q<Row>(`SELECT * FROM sync_issues WHERE sync_id = $1 AND type = 'record' AND resolved_at IS NULL`, [
        syncId,
      ]);
    // Too long for the right's VARCHAR(40): the write is refused and the left keeps its change pending.
    await pg.sql(`UPDATE people SET note = '${'x'.repeat(60)}' WHERE id = 1`);
    await waitFor('a record issue', async () => (await open()).length === 1, 30_000);
    // A person answers it on the right, after the left's change: the later change.
    await pause(1100);
    await my.sql(`UPDATE contacts SET note = 'fixed on the right' WHERE id = 1`);
    await waitFor(
      "the right's edit on the left",
      async () =>
        (await pg.sql<{ note: string }>(`SELECT note FROM people WHERE id = 1`))[0]?.note ===
        'fixed on the right',
      15_000,
    );
    expect(await my.sql(`SELECT note FROM contacts WHERE id = 1`)).toEqual([{ note: 'fixed on the right' }]);
    await waitFor('the issue cleared', async () => (await open()).length === 0, 15_000);
    const settled = await settledCount(() => opCount(syncId));
    await pause(2500);
    expect(await opCount(syncId)).toBe(settled);
  });

  it("an app edit that lands right after Lockstep wrote the same record is carried, not taken for Lockstep's own write", async () => {
    const { pg, my } = await databases(
      `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, note text); INSERT INTO people VALUES (1, 'Ada', 'a'), (2, 'Grace', 'g');`,
      [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, note VARCHAR(40))`],
    );
    // The app edits the row the moment Lockstep's update to it has committed (before Lockstep could look again).
    const updateRecords = PostgresConnection.prototype.updateRecords;
    let edits = 0;
    const spy = jest.spyOn(PostgresConnection.prototype, 'updateRecords').mockImplementation(async function (
      this: PostgresConnection,
      table,
      rows,
    ) {
      const results = await updateRecords.call(this, table, rows);
      if (rows.some((row) => row.remoteId === '1') && edits === 0) {
        edits += 1;
        await pg.sql(`UPDATE people SET note = 'the app, just after' WHERE id = 1`);
      }
      return results;
    });
    cleanups.push(async () => spy.mockRestore());
    await start(pg, my, [
      {
        left: 'people',
        right: 'contacts',
        fields: [
          ['id', 'id'],
          ['name', 'name'],
          ['note', 'note'],
        ],
      },
    ]);
    await my.sql(`UPDATE contacts SET note = 'from the right' WHERE id = 1`);
    await waitFor(
      'the app edit reached the right side',
      async () =>
        (await my.sql<{ note: string }>(`SELECT note FROM contacts WHERE id = 1`))[0]?.note ===
        'the app, just after',
      15_000,
    );
    expect(edits).toBe(1);
    expect(await pg.sql(`SELECT note FROM people WHERE id = 1`)).toEqual([{ note: 'the app, just after' }]);
  });

  it('rejected credentials: auth_status error and one authentication issue; nothing is written meanwhile; new credentials catch up', async () => {
    const { pg, my } = await databases(
      `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL); INSERT INTO people VALUES (1, 'Ada');`,
      [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)`],
    );
    const user = unique('eng');
    const root = await mysql.createConnection({ uri: MYSQL_URL });
    cleanups.push(async () => {
      await root.query(`DROP USER IF EXISTS '${user}'@'%'`).catch(() => undefined);
      await root.end();
    });
    await root.query(`CREATE USER '${user}'@'%' IDENTIFIED BY 'secret-1'`);
    await root.query(`GRANT ALL PRIVILEGES ON \`${my.database}\`.* TO '${user}'@'%'`);
    const url = MYSQL_URL.replace('mysql://root@', `mysql://${user}:secret-1@`);
    const ids = await createStartedSync(db, {
      left: { connector: 'postgres', base: pg.schema },
      right: { connector: 'mysql', base: my.database, url },
      pairs: [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
          ],
        },
      ],
    });
    await worker(ids.accountId);
    await waitFor('initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    await waitFor('synced', async () => (await my.sql(`SELECT id FROM contacts`)).length === 1);

    await root.query(`ALTER USER '${user}'@'%' IDENTIFIED BY 'secret-2'`);
    // Open sessions of the old password end (as a server restart or a pool refresh would do).
    for (const row of (
      await root.query(`SELECT id FROM information_schema.processlist WHERE user = ?`, [user])
    )[0] as { id: number }[])
      await root.query(`KILL ${row.id}`).catch(() => undefined);
    await pg.sql(`INSERT INTO people VALUES (2, 'Grace')`);
    await pg.sql(`UPDATE people SET name = 'Ada L' WHERE id = 1`);
    await waitFor(
      'auth error recorded',
      async () =>
        (await q(`SELECT auth_status FROM sync_sides WHERE sync_id = $1 AND side = 'right'`, [ids.syncId]))[0]
          ?.auth_status === 'error',
      30_000,
    );
    const issues = await q<Row>(
      `SELECT * FROM sync_issues WHERE sync_id = $1 AND type = 'connection' AND code = 'authentication_error' AND resolved_at IS NULL`,
      [ids.syncId],
    );
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ side: 'right' });
    const ops = await opCount(ids.syncId);
    await pause(2500);
    expect(await my.sql(`SELECT id, name FROM contacts ORDER BY id`)).toEqual([{ id: 1, name: 'Ada' }]);
    expect(await opCount(ids.syncId)).toBe(ops);
    expect(
      await q(`SELECT auth_status FROM sync_sides WHERE sync_id = $1 AND side = 'left'`, [ids.syncId]),
    ).toEqual([{ auth_status: 'ok' }]);

    // The credentials work again (what a PATCH with new credentials records).
    await root.query(`ALTER USER '${user}'@'%' IDENTIFIED BY 'secret-1'`);
    await q(
      `UPDATE sync_sides SET auth_status = 'ok', auth_error = NULL WHERE sync_id = $1 AND side = 'right'`,
      [ids.syncId],
    );
    await q(
      `UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND side = 'right' AND type = 'connection' AND resolved_at IS NULL`,
      [ids.syncId],
    );
    await waitFor(
      'caught up',
      async () =>
        JSON.stringify(await my.sql(`SELECT id, name FROM contacts ORDER BY id`)) ===
        JSON.stringify([
          { id: 1, name: 'Ada L' },
          { id: 2, name: 'Grace' },
        ]),
    );
    expect(
      await q(
        `SELECT code FROM sync_issues WHERE sync_id = $1 AND code = 'authentication_error' AND resolved_at IS NULL`,
        [ids.syncId],
      ),
    ).toEqual([]);
  });

  describe('queue, parallel syncs, leases', () => {
    const pgSetup = `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL); INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace');`;
    const mySetup = [`CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)`];
    const pairs: PairSpec[] = [
      {
        left: 'people',
        right: 'contacts',
        fields: [
          ['id', 'id'],
          ['name', 'name'],
        ],
      },
    ];

    it('queued push and refetch of one record run in order and are removed', async () => {
      const { pg, my } = await databases(pgSetup, mySetup);
      const { syncId } = await start(pg, my, pairs);
      // Change capture misses this edit: only the queue carries it.
      await pg.sql(
        `ALTER TABLE people DISABLE TRIGGER lockstep_capture_ins, DISABLE TRIGGER lockstep_capture_upd, DISABLE TRIGGER lockstep_capture_del`,
      );
      await pg.sql(`UPDATE people SET name = 'Ada Lovelace' WHERE id = 1`);
      const link = await linkOf(syncId, 'left', 1);
      const inserted = await q<{ id: string; type: string }>(
        `INSERT INTO record_queue (sync_id, record_id, type, side) VALUES ($1, $2, 'push', NULL), ($1, $2, 'refetch', 'right') RETURNING id::text AS id, type`,
        [syncId, link!.id],
      );
      expect(inserted.map((row) => row.type)).toEqual(['push', 'refetch']);
      await waitFor(
        'queue drained',
        async () => (await q(`SELECT id FROM record_queue WHERE sync_id = $1`, [syncId])).length === 0,
      );
      expect((await my.sql<{ name: string }>(`SELECT name FROM contacts WHERE id = 1`))[0]!.name).toBe(
        'Ada Lovelace',
      );
      const ops = await q<Row>(
        `SELECT side, trigger, action, field_changes FROM operation_log WHERE sync_id = $1 AND record_id = $2 ORDER BY seq, batch_position`,
        [syncId, link!.id],
      );
      expect(ops).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            side: 'left',
            trigger: 'poll',
            action: 'updated',
            field_changes: [{ field: 'name', before: 'Ada', after: 'Ada Lovelace' }],
          }),
          expect.objectContaining({
            side: 'right',
            trigger: 'push',
            action: 'updated',
            field_changes: [{ field: 'name', before: 'Ada', after: 'Ada Lovelace' }],
          }),
        ]),
      );
      // Exactly one update pushed: the refetch behind the push found nothing left to do.
      expect(ops.filter((op) => op.trigger === 'push' && op.action === 'updated')).toHaveLength(1);
    });

    it('two syncs in one account both make progress in one worker', async () => {
      const a = await databases(pgSetup, mySetup);
      const b = await databases(pgSetup, mySetup);
      const first = await createStartedSync(db, {
        left: { connector: 'postgres', base: a.pg.schema },
        right: { connector: 'mysql', base: a.my.database },
        pairs,
      });
      const second = await createStartedSync(db, {
        left: { connector: 'postgres', base: b.pg.schema },
        right: { connector: 'mysql', base: b.my.database },
        pairs,
      });
      await q(`UPDATE syncs SET account_id = $1 WHERE id = $2`, [first.accountId, second.syncId]);
      const app = await worker(first.accountId);
      for (const { syncId } of [first, second])
        await waitFor('initial sync done', async () => (await phase(db, syncId)) === 'done');
      await a.pg.sql(`UPDATE people SET name = 'A' WHERE id = 1`);
      await b.my.sql(`UPDATE contacts SET name = 'B' WHERE id = 2`);
      await waitFor(
        'both synced',
        async () =>
          (await a.my.sql<{ name: string }>(`SELECT name FROM contacts WHERE id = 1`))[0]?.name === 'A' &&
          (await b.pg.sql<{ name: string }>(`SELECT name FROM people WHERE id = 2`))[0]?.name === 'B',
      );
      const leases = await q<{ owner: string }>(
        `SELECT owner FROM sync_leases WHERE sync_id = ANY($1::text[])`,
        [[first.syncId, second.syncId]],
      );
      expect(leases).toHaveLength(2);
      expect(new Set(leases.map((l) => l.owner)).size).toBe(1);
      void app;
    });

    it('a second worker does not take a sync another owns, and takes it over after the first is closed', async () => {
      const { pg, my } = await databases(pgSetup, mySetup);
      const { syncId, accountId, app: first } = await start(pg, my, pairs);
      const lease = (
        await q<{ owner: string; token: string }>(
          `SELECT owner, token::text AS token FROM sync_leases WHERE sync_id = $1`,
          [syncId],
        )
      )[0]!;
      const second = await worker(accountId);
      await pg.sql(`INSERT INTO people VALUES (3, 'Linus')`);
      await waitFor(
        'synced by the owner',
        async () => (await my.sql(`SELECT id FROM contacts WHERE id = 3`)).length === 1,
      );
      // Several lease periods (ENGINE_LEASE_SECONDS=3): the owner keeps renewing, the other never takes it.
      for (let i = 0; i < 5; i += 1) {
        await pause(1000);
        expect(
          await q(`SELECT owner, token::text AS token FROM sync_leases WHERE sync_id = $1`, [syncId]),
        ).toEqual([lease]);
      }
      expect(
        await q(
          `SELECT count(*)::int AS n FROM operation_log WHERE sync_id = $1 AND trigger = 'push' AND action = 'created' AND record_remote_id = '3'`,
          [syncId],
        ),
      ).toEqual([{ n: 1 }]);
      expect(
        await q(`SELECT code FROM sync_issues WHERE sync_id = $1 AND resolved_at IS NULL`, [syncId]),
      ).toEqual([]);

      await first.close();
      workers.splice(workers.indexOf(first), 1);
      const taken = await waitFor(
        'taken over',
        async () =>
          (
            await q<{ owner: string; token: string }>(
              `SELECT owner, token::text AS token FROM sync_leases WHERE sync_id = $1`,
              [syncId],
            )
          ).find((row) => row.owner !== lease.owner),
        15_000,
      );
      expect(Number(taken.token)).toBeGreaterThan(Number(lease.token));
      await my.sql(`UPDATE contacts SET name = 'Grace H' WHERE id = 2`);
      await waitFor(
        'the new owner syncs',
        async () =>
          (await pg.sql<{ name: string }>(`SELECT name FROM people WHERE id = 2`))[0]?.name === 'Grace H',
      );
      void second;
    });
  });
});
