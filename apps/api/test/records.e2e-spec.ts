/**
 * Records and pending deletes (spec 2.12, 2.13, 3.2, 3.3, 4.6, 4.7) read from a real sync between PostgreSQL
 * (left) and MariaDB (right) carried by the real worker process: search, the status document, refetch behind
 * a queued push, held deletes (awaiting review and ignored), and every query-parameter error.
 */
import { cli } from './support/cli';
import { liveSync, type LiveSync, waitUntil } from './support/live-sync';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

jest.setTimeout(120_000);

const PEOPLE = [
  'Ada Lovelace',
  'Adam Smith',
  'Grace Hopper',
  'Nadal Rafael',
  'Linus Torvalds',
  'Edsger Dijkstra',
  ...Array.from({ length: 8 }, (_, i) => `Zed 0${i + 1}`),
];

describe('records and pending deletes on a live sync', () => {
  let t: TestApp;
  let live: LiveSync;
  let S: string;
  const follow = (url: string) => url.replace('http://lockstep.test', '');
  const get = (path: string, key = live.keys.read) => t.http().get(path).set(bearer(key));
  const refetch = (record: string, query = '', key = live.keys.operate) =>
    t.http().post(`/v1/sync/records/${record}/refetch${query}`).set(bearer(key));
  const errorOf = async (
    request: PromiseLike<{ status: number; body: { error: { code: string } } }>,
    status: number,
  ) => {
    const res = await request;
    expect(res.status).toBe(status);
    return res.body.error.code;
  };
  /** The `rec_` id of a person by PostgreSQL id (the only hit matched by that remote id in `people`). */
  const recordOf = async (pgId: number): Promise<string> =>
    (await get(`/v1/sync/records/${pgId}?sync=${S}&table=people`).expect(200)).body.id;
  const contact = async (id: number) =>
    (
      (await live.my.sql('SELECT id, full_name, email FROM contacts WHERE id = ?', [id])) as {
        email: string | null;
      }[]
    )[0];

  beforeAll(async () => {
    t = await createTestApp();
    live = await liveSync(t, {
      pgSetup: `
        CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, email text);
        INSERT INTO people (id, name, email) SELECT i, (ARRAY[${PEOPLE.map((name) => `'${name}'`).join(', ')}])[i], 'p' || i || '@example.com' FROM generate_series(1, ${PEOPLE.length}) i;
        CREATE TABLE companies (id integer PRIMARY KEY, title text NOT NULL);
        INSERT INTO companies VALUES (1, 'Acme'), (2, 'Globex');
      `,
      mySetup: [
        'CREATE TABLE contacts (id INT PRIMARY KEY, full_name VARCHAR(60) NOT NULL, email VARCHAR(100))',
        'CREATE TABLE orgs (id INT PRIMARY KEY, title VARCHAR(60) NOT NULL)',
      ],
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
        {
          left_table: 'companies',
          right_table: 'orgs',
          direction: 'two_way',
          fields: [
            { left_field: 'id', right_field: 'id' },
            { left_field: 'title', right_field: 'title' },
          ],
        },
      ],
    });
    S = live.id;
  });
  afterAll(async () => {
    await live?.close();
    await t?.close();
  });

  describe('search', () => {
    it('finds a remote id exactly first (both mapped tables hold id 1), then names containing it; capped with has_more, never a cursor', async () => {
      const res = await get(`/v1/sync/records?sync=${S}&query=1`).expect(200);
      expect(res.body.next_cursor).toBeNull();
      expect(res.body.has_more).toBe(false);
      const hits = res.body.data as {
        id: string;
        name: string;
        matched_by: string;
        table: { left: { name: string } };
        left: { remote_id: string };
        right: { remote_id: string };
      }[];
      expect(hits.map((hit) => [hit.matched_by, hit.name])).toEqual([
        ['remote_id', 'Ada Lovelace'],
        ['remote_id', 'Acme'],
        ['name', 'Zed 01'],
      ]);
      expect(hits[0]).toMatchObject({
        table_pair: 0,
        table: { left: { name: 'people' }, right: { name: 'contacts' } },
        left: { remote_id: '1', is_deleted: false },
        right: { remote_id: '1', is_deleted: false },
      });
      expect(hits[0]!.id).toMatch(/^rec_/);
      expect(res.body.data[0].url).toBe(`http://lockstep.test/v1/sync/records/${hits[0]!.id}?sync=${S}`);
      expect(res.body.data[0].browser_url).toBe(
        `http://lockstep.test/app/syncs/${S}/records/${hits[0]!.id}?side=left`,
      );

      // `table` narrows to one table pair, by remote id or by `table_` id of either side.
      const orgs = (await get(`/v1/sync/records?sync=${S}&query=1&table=orgs`).expect(200)).body.data;
      expect(orgs.map((hit: { name: string }) => hit.name)).toEqual(['Acme']);
      const contactsId: string = res.body.data[0].table.right.id;
      const byId = (await get(`/v1/sync/records?sync=${S}&query=1&table=${contactsId}`).expect(200)).body
        .data;
      expect(byId.map((hit: { name: string }) => hit.name)).toEqual(['Ada Lovelace', 'Zed 01']);
    });

    it('finds a rec_ id, and display text case-insensitively: prefix matches before substring matches', async () => {
      const ada = await recordOf(1);
      const byRec = (await get(`/v1/sync/records?sync=${S}&query=${ada}`).expect(200)).body;
      expect(byRec.data).toHaveLength(1);
      expect(byRec.data[0]).toMatchObject({ id: ada, matched_by: 'record_id', name: 'Ada Lovelace' });

      const byText = (await get(`/v1/sync/records?sync=${S}&query=ADA`).expect(200)).body;
      expect(byText.data.map((hit: { name: string }) => hit.name)).toEqual([
        'Ada Lovelace',
        'Adam Smith',
        'Nadal Rafael',
      ]);
      expect(byText.data.every((hit: { matched_by: string }) => hit.matched_by === 'name')).toBe(true);
      expect(byText).toMatchObject({ has_more: false, next_cursor: null });

      // `%` and `_` are literal text, not wildcards.
      expect(
        (await get(`/v1/sync/records?sync=${S}&query=${encodeURIComponent('_da')}`).expect(200)).body.data,
      ).toEqual([]);
    });

    it('says has_more when more matched than the limit (narrow the query)', async () => {
      const res = (await get(`/v1/sync/records?sync=${S}&query=zed&limit=3`).expect(200)).body;
      expect(res.data.map((hit: { name: string }) => hit.name)).toEqual(['Zed 01', 'Zed 02', 'Zed 03']);
      expect(res).toMatchObject({ has_more: true, next_cursor: null });
      expect((await get(`/v1/sync/records?sync=${S}&query=zed%2008&limit=3`).expect(200)).body).toMatchObject(
        { has_more: false, data: [{ name: 'Zed 08' }] },
      );
    });
  });

  describe('status document', () => {
    it('shows both copies, the operations of both sides and the link to the rest', async () => {
      await live.pg.sql(`UPDATE people SET email = 'ada@analytical.engine' WHERE id = 1`);
      await waitUntil(
        'the update to reach MariaDB',
        async () => (await contact(1))?.email === 'ada@analytical.engine',
      );
      const ada = await recordOf(1);
      const doc = await waitUntil('the operations to be recorded', async () => {
        const body = (await get(`/v1/sync/records/${ada}`).expect(200)).body;
        return body.operations.some(
          (op: { action: string; trigger: string }) => op.action === 'updated' && op.trigger === 'push',
        )
          ? body
          : null;
      });
      expect(doc).toMatchObject({
        id: ada,
        sync_id: S,
        name: 'Ada Lovelace',
        table_pair: 0,
        table: { left: { name: 'people' }, right: { name: 'contacts' } },
        left: {
          remote_id: '1',
          is_deleted: false,
          is_filtered: false,
          is_sync_disabled: false,
          queued_operations: [],
          browser_url: `http://lockstep.test/app/syncs/${S}/records/${ada}?side=left`,
        },
        right: {
          remote_id: '1',
          is_deleted: false,
          is_filtered: false,
          is_sync_disabled: false,
          queued_operations: [],
        },
        queued_operations: [],
        issues: [],
        pending_delete: null,
        pending_delete_events: [],
        operations_url: `http://lockstep.test/v1/sync/operations?sync=${S}&record=${ada}`,
        url: `http://lockstep.test/v1/sync/records/${ada}?sync=${S}`,
      });
      const poll = doc.operations.find(
        (op: { trigger: string; action: string }) => op.trigger === 'poll' && op.action === 'updated',
      );
      const push = doc.operations.find(
        (op: { trigger: string; action: string }) => op.trigger === 'push' && op.action === 'updated',
      );
      expect(poll).toMatchObject({
        side: 'left',
        table: { name: 'people' },
        record: { remote_id: '1', url: null },
      });
      expect(push).toMatchObject({
        side: 'right',
        table: { name: 'contacts' },
        record: { remote_id: '1', name: 'Ada Lovelace', url: null },
      });
      expect(push.id).toMatch(/^op_/);
      expect(push.url).toBe(`http://lockstep.test/v1/sync/operations/${push.id}`);
      expect(typeof doc.operations_has_more).toBe('boolean');

      // The same document by connected-app id: `table` (remote id or `table_` id of either side) settles the ambiguity.
      expect((await get(`/v1/sync/records/1?sync=${S}&table=people`).expect(200)).body.id).toBe(ada);
      expect(
        (await get(`/v1/sync/records/1?sync=${S}&table=${doc.table.right.id}`).expect(200)).body.id,
      ).toBe(ada);
      expect((await get(`/v1/sync/records/${ada}?sync=${S}&table=contacts`).expect(200)).body.id).toBe(ada);
      expect(await errorOf(get(`/v1/sync/records/${ada}?sync=${S}&table=orgs`), 404)).toBe('not_found');
    });

    it('is 400 ambiguous_record when a connected-app id exists in several tables, listing the candidates', async () => {
      const res = await get(`/v1/sync/records/2?sync=${S}`).expect(400);
      expect(res.body.error.code).toBe('ambiguous_record');
      const candidates = res.body.error.details.candidates as {
        id: string;
        table: { name: string };
        side: string;
      }[];
      expect(candidates.map((c) => [c.side, c.table.name]).sort()).toEqual([
        ['left', 'companies'],
        ['left', 'people'],
      ]);
      expect(candidates.every((c) => /^rec_/.test(c.id))).toBe(true);
      expect(await errorOf(refetch('2', `?sync=${S}`), 400)).toBe('ambiguous_record');
      expect(await errorOf(get(`/v1/sync/records/999?sync=${S}`), 404)).toBe('not_found');
    });
  });

  describe('refetch', () => {
    it("reads the copy again: a change made behind the engine's back (change capture off) reaches the other side", async () => {
      await live.pg.sql(
        `ALTER TABLE people DISABLE TRIGGER lockstep_capture_ins, DISABLE TRIGGER lockstep_capture_upd, DISABLE TRIGGER lockstep_capture_del`,
      );
      await live.pg.sql(`UPDATE people SET email = 'edsger@goto.harmful' WHERE id = 6`);
      await live.pg.sql(
        `ALTER TABLE people ENABLE TRIGGER lockstep_capture_ins, ENABLE TRIGGER lockstep_capture_upd, ENABLE TRIGGER lockstep_capture_del`,
      );
      const edsger = await recordOf(6);
      const res = await refetch(edsger).expect(202);
      expect(res.body).toEqual({
        record_id: edsger,
        sides: ['left', 'right'],
        url: `http://lockstep.test/v1/sync/records/${edsger}?sync=${S}`,
      });
      await waitUntil(
        'the refetched change to reach MariaDB',
        async () => (await contact(6))?.email === 'edsger@goto.harmful',
      );
      await waitUntil(
        'the queue to drain',
        async () => (await get(`/v1/sync/records/${edsger}`).expect(200)).body.queued_operations.length === 0,
      );
    });

    it('runs behind a push already queued for the record', async () => {
      const adam = await recordOf(2);
      await live.stopWorker();
      // A push waiting for two minutes heads the record's queue (released below); the refetch queued after it must wait too.
      const [push] = await live.db.query(
        `INSERT INTO record_queue (sync_id, record_id, type, side, not_before) VALUES ($1, $2, 'push', NULL, now() + interval '2 minutes') RETURNING id::text AS id`,
        [S, adam],
      );
      await refetch(adam)
        .send({ side: 'left' })
        .expect(202, {
          record_id: adam,
          sides: ['left'],
          url: `http://lockstep.test/v1/sync/records/${adam}?sync=${S}`,
        });
      await refetch(adam).send({ side: 'left' }).expect(202); // still waiting at the end: nothing added
      const queued = (await get(`/v1/sync/records/${adam}`).expect(200)).body;
      expect(queued.queued_operations).toEqual([
        { type: 'push', position: 1, side: null },
        { type: 'refetch', position: 2, side: 'left' },
      ]);
      expect(queued.left.queued_operations).toEqual([
        { type: 'push', position: 1 },
        { type: 'refetch', position: 2 },
      ]);
      expect(queued.right.queued_operations).toEqual([{ type: 'push', position: 1 }]);

      // Behind the engine's back, then the worker comes back.
      await live.pg.sql(
        `ALTER TABLE people DISABLE TRIGGER lockstep_capture_ins, DISABLE TRIGGER lockstep_capture_upd, DISABLE TRIGGER lockstep_capture_del`,
      );
      await live.pg.sql(`UPDATE people SET email = 'adam@wealth.nations' WHERE id = 2`);
      await live.pg.sql(
        `ALTER TABLE people ENABLE TRIGGER lockstep_capture_ins, ENABLE TRIGGER lockstep_capture_upd, ENABLE TRIGGER lockstep_capture_del`,
      );
      live.startWorker();
      await live.pg.sql(`INSERT INTO people (id, name, email) VALUES (100, 'Newcomer', 'new@example.com')`);
      await waitUntil('the worker to run again', async () => (await contact(100)) !== undefined);
      // One snapshot: while the push is not due yet, the refetch behind it has not run either.
      const [snapshot] = await live.db.query(
        `SELECT (SELECT not_before > now() FROM record_queue WHERE id = $1::bigint) AS push_waiting,
                (SELECT count(*)::int FROM record_queue WHERE record_id = $2 AND type = 'refetch') AS refetches`,
        [push.id, adam],
      );
      expect(snapshot).toEqual({ push_waiting: true, refetches: 1 });
      // The push falls due: both entries now run, in order.
      await live.db.query(`UPDATE record_queue SET not_before = now() WHERE id = $1::bigint`, [push.id]);

      await waitUntil(
        'both entries to run',
        async () => (await get(`/v1/sync/records/${adam}`).expect(200)).body.queued_operations.length === 0,
        30_000,
      );
      expect((await contact(2))?.email).toBe('adam@wealth.nations');
      const after = (await get(`/v1/sync/records/${adam}`).expect(200)).body;
      expect(
        after.operations.find(
          (op: { trigger: string; side: string; action: string }) =>
            op.trigger === 'push' && op.side === 'right' && op.action === 'updated',
        ),
      ).toBeDefined();
    });
  });

  describe('held deletes', () => {
    let grace: string;
    let nadal: string;
    let linus: string;

    beforeAll(async () => {
      [grace, nadal, linus] = [await recordOf(3), await recordOf(4), await recordOf(5)];
      await live.my.sql('DELETE FROM contacts WHERE id IN (3, 4, 5)');
      await waitUntil('three held deletes', async () => {
        const body = (await get(`/v1/sync/pending-deletes?sync=${S}`).expect(200)).body;
        return body.data.length === 3;
      });
      const ignored = cli('pending-delete', 'ignore', '--sync', S, '--record', linus);
      expect(ignored.code).toBe(0);
    });

    it('lists the ones awaiting review, newest first, with the surviving copy and the links', async () => {
      const page = (await get(`/v1/sync/pending-deletes?sync=${S}`).expect(200)).body;
      expect(page).toMatchObject({ has_more: false, next_cursor: null });
      expect(page.data.map((entry: { record_id: string }) => entry.record_id).sort()).toEqual(
        [grace, nadal].sort(),
      );
      const entry = page.data.find((item: { record_id: string }) => item.record_id === grace);
      expect(entry).toEqual({
        id: expect.stringMatching(/^pdel_/),
        state: 'awaiting_review',
        record_id: grace,
        missing_side: 'right',
        delete_from_side: 'left',
        pending_since: expect.any(String),
        ignored_at: null,
        record: {
          id: grace,
          remote_id: '3',
          name: 'Grace Hopper',
          side: 'left',
          browser_url: `http://lockstep.test/app/syncs/${S}/records/${grace}?side=left`,
        },
        record_url: `http://lockstep.test/v1/sync/records/${grace}?sync=${S}`,
        review_url: `http://lockstep.test/app/syncs/${S}/pending-deletes/${grace}`,
      });
      const times = page.data.map((item: { pending_since: string }) => item.pending_since);
      expect([...times].sort().reverse()).toEqual(times);

      // Pages of one: the cursor walks the rest; a cursor of another state is refused.
      const first = (await get(`/v1/sync/pending-deletes?sync=${S}&limit=1`).expect(200)).body;
      expect(first.has_more).toBe(true);
      const second = (
        await get(`/v1/sync/pending-deletes?sync=${S}&limit=1&cursor=${first.next_cursor}`).expect(200)
      ).body;
      expect(second).toMatchObject({ has_more: false, next_cursor: null });
      expect([first.data[0].id, second.data[0].id]).toEqual(page.data.map((item: { id: string }) => item.id));
      expect(
        await errorOf(
          get(`/v1/sync/pending-deletes?sync=${S}&state=ignored&cursor=${first.next_cursor}`),
          400,
        ),
      ).toBe('invalid_cursor');
    });

    it("shows in the record's status document with its history", async () => {
      const doc = (
        await get(
          follow(
            (await get(`/v1/sync/pending-deletes?sync=${S}`)).body.data.find(
              (e: { record_id: string }) => e.record_id === grace,
            ).record_url,
          ),
        ).expect(200)
      ).body;
      expect(doc.right).toMatchObject({ remote_id: '3', is_deleted: true });
      expect(doc.left).toMatchObject({ remote_id: '3', is_deleted: false });
      expect(doc.pending_delete).toMatchObject({
        state: 'awaiting_review',
        record_id: grace,
        missing_side: 'right',
        delete_from_side: 'left',
        record: { remote_id: '3', side: 'left' },
      });
      expect(doc.pending_delete_events).toEqual([
        {
          kind: 'detected',
          at: expect.any(String),
          actor: 'engine',
          pending_delete_id: doc.pending_delete.id,
        },
      ]);
      expect(
        doc.operations.find(
          (op: { action: string; side: string; trigger: string }) =>
            op.action === 'deleted' && op.side === 'right' && op.trigger === 'poll',
        ),
      ).toBeDefined();

      // The right copy is gone: nothing to refetch there.
      expect(await errorOf(refetch(grace).send({ side: 'right' }), 400)).toBe('no_copy_to_refetch');
      expect((await refetch(grace).expect(202)).body.sides).toEqual(['left']);
    });

    it('lists ignored ones with state=ignored, and their history says who ignored them', async () => {
      const ignored = (await get(`/v1/sync/pending-deletes?sync=${S}&state=ignored`).expect(200)).body;
      expect(ignored.data).toHaveLength(1);
      expect(ignored.data[0]).toMatchObject({
        record_id: linus,
        state: 'ignored',
        ignored_at: expect.any(String),
        record: { remote_id: '5', side: 'left' },
      });
      const doc = (await get(`/v1/sync/records/${linus}?sync=${S}`).expect(200)).body;
      expect(doc.pending_delete).toMatchObject({ state: 'ignored' });
      expect(
        doc.pending_delete_events.map((event: { kind: string; actor: string }) => [event.kind, event.actor]),
      ).toEqual([
        ['ignored', 'cli'],
        ['detected', 'engine'],
      ]);
    });
  });

  describe('errors and access', () => {
    it('answers every query-parameter error with its own code', async () => {
      const rec = await recordOf(1);
      const cases: [string, string][] = [
        ['/v1/sync/records?query=ada', 'missing_sync'],
        ['/v1/sync/records?sync=&query=ada', 'missing_sync'],
        ['/v1/sync/records?sync=nope&query=ada', 'invalid_sync'],
        [`/v1/sync/records?sync=${S}&sync=${S}&query=ada`, 'invalid_sync'],
        [`/v1/sync/records?sync=${S}`, 'missing_query'],
        [`/v1/sync/records?sync=${S}&query=`, 'missing_query'],
        [`/v1/sync/records?sync=${S}&query=ada&table=no_such_table`, 'invalid_table'],
        [`/v1/sync/records?sync=${S}&query=ada&table=table_0123456789abcdefghij`, 'invalid_table'],
        [`/v1/sync/records?sync=${S}&query=ada&limit=0`, 'invalid_limit'],
        [`/v1/sync/records?sync=${S}&query=ada&limit=26`, 'invalid_limit'],
        ['/v1/sync/records/1', 'missing_sync'],
        ['/v1/sync/records/1?sync=bad', 'invalid_sync'],
        [`/v1/sync/records/${rec}?sync=bad`, 'invalid_sync'],
        [`/v1/sync/records/1?sync=${S}&table=nope`, 'invalid_table'],
        ['/v1/sync/pending-deletes', 'missing_sync'],
        ['/v1/sync/pending-deletes?sync=x', 'invalid_sync'],
        [`/v1/sync/pending-deletes?sync=${S}&state=approved`, 'invalid_state'],
        [`/v1/sync/pending-deletes?sync=${S}&limit=101`, 'invalid_limit'],
        [`/v1/sync/pending-deletes?sync=${S}&cursor=bogus`, 'invalid_cursor'],
      ];
      for (const [path, code] of cases) expect([path, await errorOf(get(path), 400)]).toEqual([path, code]);
      expect(await errorOf(refetch(rec).send({ side: 'middle' }), 400)).toBe('invalid_side');
      expect(await errorOf(refetch(rec).send({ side: 'left', also: 1 }), 400)).toBe('invalid_request');
      expect(await errorOf(refetch('1'), 400)).toBe('missing_sync');
      expect(await errorOf(get(`/v1/sync/records/rec_0123456789abcdefghij`), 404)).toBe('not_found');
    });

    it('answers 404 not_found for a rec_ id that names no record, well-formed or not, without `sync` (spec 4.6)', async () => {
      for (const id of ['rec_0123456789abcdefghij', 'rec_unknown', 'rec_', `rec_${'x'.repeat(2000)}`]) {
        expect([id, await errorOf(get(`/v1/sync/records/${id}`), 404)]).toEqual([id, 'not_found']);
        expect([id, await errorOf(refetch(id), 404)]).toEqual([id, 'not_found']);
      }
      // A NUL is refused at the edge as bad input, before any lookup.
      expect(await errorOf(get(`/v1/sync/records/rec_%00`), 400)).toBe('invalid_request');
      // With `sync`, an id that is not a well-formed rec_ id may be a connected app's: looked up there (none here).
      expect(await errorOf(get(`/v1/sync/records/rec_unknown?sync=${S}`), 404)).toBe('not_found');
    });

    it("refuses refetch to a read key (403) and hides the sync from other accounts and other syncs' one-sync keys (404)", async () => {
      const rec = await recordOf(1);
      expect(await errorOf(refetch(rec, '', live.keys.read), 403)).toBe('insufficient_scope');

      const other = await t.key((await t.account()).id, 'readwrite');
      const oneSync = await t.key(live.accountId, 'readwrite', await t.bareSync(live.accountId));
      for (const key of [other, oneSync]) {
        expect(await errorOf(get(`/v1/sync/records?sync=${S}&query=ada`, key), 404)).toBe('not_found');
        expect(await errorOf(get(`/v1/sync/records/${rec}`, key), 404)).toBe('not_found');
        expect(await errorOf(get(`/v1/sync/records/1?sync=${S}&table=people`, key), 404)).toBe('not_found');
        expect(await errorOf(refetch(rec, '', key), 404)).toBe('not_found');
        expect(await errorOf(get(`/v1/sync/pending-deletes?sync=${S}`, key), 404)).toBe('not_found');
      }
    });
  });

  describe('delete approval chosen at start', () => {
    let pg: ScratchPg;
    let my: ScratchMysql;
    afterAll(async () => {
      await Promise.all([pg?.drop(), my?.drop()]);
    });

    it('`sync start --delete-approval auto_approve` applies deletes without review: pending-deletes is 409 delete_approval_disabled', async () => {
      pg = await scratchPg('CREATE TABLE items (id integer PRIMARY KEY, label text)');
      my = await scratchMysql(['CREATE TABLE items (id INT PRIMARY KEY, label VARCHAR(40))']);
      // Another account: the live sync's worker (limited to its account) leaves this one alone.
      const account = (await t.account()).id;
      const write = await t.key(account, 'readwrite');
      const sync = (
        await t
          .http()
          .post('/v1/sync/syncs')
          .set(bearer(write))
          .send({
            name: 'Auto',
            left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
            right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
          })
          .expect(201)
      ).body;
      const mappings = await t
        .http()
        .get(`/v1/sync/syncs/${sync.id}/mappings`)
        .set(bearer(write))
        .expect(200);
      await t
        .http()
        .put(`/v1/sync/syncs/${sync.id}/mappings`)
        .set(bearer(write))
        .set('If-Match', mappings.headers['etag'])
        .send({
          tables: [
            {
              left_table: 'items',
              right_table: 'items',
              direction: 'two_way',
              fields: [
                { left_field: 'id', right_field: 'id' },
                { left_field: 'label', right_field: 'label' },
              ],
            },
          ],
        })
        .expect(200);

      const refused = cli('sync', 'start', '--id', sync.id, '--delete-approval', 'sometimes');
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('--delete-approval takes review_required or auto_approve');

      const started = cli('sync', 'start', '--id', sync.id, '--delete-approval', 'auto_approve');
      expect(started.code).toBe(0);
      expect(started.json()).toMatchObject({
        id: sync.id,
        status: 'active',
        delete_approval: 'auto_approve',
      });
      expect(
        (await t.http().get(`/v1/sync/syncs/${sync.id}`).set(bearer(write)).expect(200)).body.delete_approval,
      ).toBe('auto_approve');
      const res = await t
        .http()
        .get(`/v1/sync/pending-deletes?sync=${sync.id}`)
        .set(bearer(write))
        .expect(409);
      expect(res.body.error).toMatchObject({
        code: 'delete_approval_disabled',
        type: 'invalid_request_error',
      });
      // Parameter errors still come first.
      expect(
        await errorOf(
          t.http().get(`/v1/sync/pending-deletes?sync=${sync.id}&state=nope`).set(bearer(write)),
          400,
        ),
      ).toBe('invalid_state');
    });
  });
});
