/**
 * The monitoring endpoints (spec 2.10, 2.11, 4.5) read from a real sync between PostgreSQL (left) and MariaDB
 * (right), carried by the real worker process: operations of an update on both sides with their
 * before/after, the filters and the cursor, a rejected write as an issue that a retry clears once the cause is
 * fixed (the engine then really writes the record; before that, the same issue opens again), a connection issue's retry, every query-parameter error,
 * and who may see or retry what. One live sync is shared by the whole file.
 */
import { newId } from '@lockstep/domain';
import { markCredentialRejected } from '@lockstep/persistence';
import { type LiveSync, liveSync, waitUntil } from './support/live-sync';
import { bearer, createTestApp, type TestApp } from './support/test-app';

jest.setTimeout(120_000);

/** An operation as the list returns it (the single form adds `field_changes`). */
interface Op {
  id: string;
  occurred_at: string;
  side: 'left' | 'right';
  trigger: 'push' | 'poll';
  action: string;
  table: { id: string; name: string };
  record: { remote_id: string | null; name: string | null; url: string | null };
  record_id: string;
  record_url: string | null;
  details: unknown;
}

interface Issue {
  id: string;
  type: string;
  remediation: { explanation: string; suggested_action: string; links: { name: string; url: string }[] };
  record: {
    id: string;
    remote_id: string | null;
    name: string | null;
    side: string;
    url: string;
    status_url: string;
  } | null;
  first_seen_at: string;
  last_seen_at: string;
  occurrence_count: number;
}

describe('monitoring: operations and issues of a live sync', () => {
  let t: TestApp;
  let live: LiveSync;
  let tables: { people: string; contacts: string; leftNotes: string; rightNotes: string };

  beforeAll(async () => {
    t = await createTestApp();
    live = await liveSync(t, {
      pgSetup: `
        CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, email text);
        CREATE TABLE notes (id integer PRIMARY KEY, body text);
        INSERT INTO people VALUES (1, 'Ada', 'ada@example.com'), (2, 'Grace', 'grace@example.com');
        INSERT INTO notes VALUES (1, 'first note');
      `,
      mySetup: [
        `CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, email VARCHAR(100))`,
        // A constraint the left side does not have: a duplicate email is refused by MariaDB only.
        `CREATE UNIQUE INDEX contacts_email ON contacts (email)`,
        `CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(200))`,
      ],
      tables: [
        {
          left_table: 'people',
          right_table: 'contacts',
          direction: 'two_way',
          fields: [
            { left_field: 'id', right_field: 'id' },
            { left_field: 'name', right_field: 'name' },
            { left_field: 'email', right_field: 'email' },
          ],
        },
        {
          left_table: 'notes',
          right_table: 'notes',
          direction: 'two_way',
          fields: [
            { left_field: 'id', right_field: 'id' },
            { left_field: 'body', right_field: 'body' },
          ],
        },
      ],
    });
    const rows: { id: string; side: string; remote_id: string }[] = await live.db.query(
      `SELECT id, side, remote_id FROM sync_tables WHERE sync_id = $1`,
      [live.id],
    );
    const table = (side: string, remoteId: string) =>
      rows.find((row) => row.side === side && row.remote_id === remoteId)!.id;
    tables = {
      people: table('left', 'people'),
      contacts: table('right', 'contacts'),
      leftNotes: table('left', 'notes'),
      rightNotes: table('right', 'notes'),
    };
  });

  afterAll(async () => {
    await live?.close();
    await t?.close();
  });

  const get = (path: string, key = live.keys.read) => t.http().get(path).set(bearer(key));
  const retry = (issueId: string, key = live.keys.operate) =>
    t.http().post(`/v1/sync/issues/${issueId}/retry`).set(bearer(key));
  const contacts = async () =>
    (await live.my.sql(`SELECT id, name, email FROM contacts ORDER BY id`)) as {
      id: number;
      name: string;
      email: string | null;
    }[];

  async function operations(query = ''): Promise<Op[]> {
    const res = await get(`/v1/sync/operations?sync=${live.id}&limit=100${query}`);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  async function openIssues(query = ''): Promise<Issue[]> {
    const res = await get(`/v1/sync/issues?sync=${live.id}${query}`);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  /** The newest operation matching `match`, once the engine has written it. */
  const operation = (what: string, match: (op: Op) => boolean) =>
    waitUntil(what, async () => (await operations()).find(match));

  it('an update shows as a poll operation on its side and a push operation on the other, with the right before/after', async () => {
    await live.pg.sql(`UPDATE people SET name = 'Ada Lovelace' WHERE id = 1`);
    const updated = (side: string, trigger: string) => (op: Op) =>
      op.side === side &&
      op.trigger === trigger &&
      op.action === 'updated' &&
      op.record.remote_id === '1' &&
      op.table.id === (side === 'left' ? tables.people : tables.contacts);
    const poll = await operation('the poll operation on the left', updated('left', 'poll'));
    const push = await operation('the push operation on the right', updated('right', 'push'));
    expect((await contacts()).find((row) => row.id === 1)?.name).toBe('Ada Lovelace');

    // The list form: no field_changes, record.url null.
    for (const [op, side, table] of [
      [poll, 'left', { id: tables.people, name: 'people' }],
      [push, 'right', { id: tables.contacts, name: 'contacts' }],
    ] as const) {
      expect(op).toEqual({
        id: expect.stringMatching(/^op_/),
        occurred_at: expect.any(String),
        sync_id: live.id,
        action: 'updated',
        trigger: side === 'left' ? 'poll' : 'push',
        side,
        table,
        record: { remote_id: '1', name: 'Ada Lovelace', url: null },
        record_id: expect.stringMatching(/^rec_/),
        record_url: `http://lockstep.test/v1/sync/records/${op.record_id}?sync=${live.id}`,
        details: null,
      });
      expect(op).not.toHaveProperty('field_changes');
    }
    expect(push.record_id).toBe(poll.record_id);
    expect(Date.parse(push.occurred_at)).toBeGreaterThanOrEqual(Date.parse(poll.occurred_at));

    // The single form: field_changes with before/after on each side, and record.url.
    for (const [op, side] of [
      [poll, 'left'],
      [push, 'right'],
    ] as const) {
      const res = await get(`/v1/sync/operations/${op.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ...op,
        record: {
          remote_id: '1',
          name: 'Ada Lovelace',
          url: `http://lockstep.test/app/syncs/${live.id}/records/${op.record_id}?side=${side}`,
        },
        field_changes: [{ field: 'name', before: 'Ada', after: 'Ada Lovelace' }],
      });
    }

    // The other way round: a MariaDB edit is polled on the right and pushed to the left.
    await live.my.sql(`UPDATE contacts SET email = 'grace@navy.mil' WHERE id = 2`);
    const rightPoll = await operation(
      'the poll operation on the right',
      (op) => op.side === 'right' && op.trigger === 'poll' && op.record.remote_id === '2',
    );
    const leftPush = await operation(
      'the push operation on the left',
      (op) =>
        op.side === 'left' && op.trigger === 'push' && op.action === 'updated' && op.record.remote_id === '2',
    );
    expect((await get(`/v1/sync/operations/${rightPoll.id}`)).body.field_changes).toEqual([
      { field: 'email', before: 'grace@example.com', after: 'grace@navy.mil' },
    ]);
    expect((await get(`/v1/sync/operations/${leftPush.id}`)).body.field_changes).toEqual([
      { field: 'email', before: 'grace@example.com', after: 'grace@navy.mil' },
    ]);
    expect((await live.pg.sql(`SELECT email FROM people WHERE id = 2`))[0]).toEqual({
      email: 'grace@navy.mil',
    });
  });

  it('filters by table (either side, by id or remote id), record (both sides) and since; pages with a cursor', async () => {
    // The initial sync's three creates on the right, then two updates with a poll and a push each.
    const all = await operations();
    expect(all.length).toBeGreaterThanOrEqual(7);
    // Newest first.
    const times = all.map((op) => Date.parse(op.occurred_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const byLeftId = await operations(`&table=${tables.people}`);
    expect(byLeftId.length).toBeGreaterThan(0);
    expect(byLeftId).toEqual(all.filter((op) => op.table.id === tables.people));
    const byRemoteId = await operations('&table=contacts');
    expect(byRemoteId.length).toBeGreaterThan(0);
    expect(byRemoteId).toEqual(all.filter((op) => op.table.id === tables.contacts));
    expect(byRemoteId.every((op) => op.side === 'right' && op.table.name === 'contacts')).toBe(true);
    expect(await operations(`&table=${tables.rightNotes}`)).toEqual(
      all.filter((op) => op.table.id === tables.rightNotes),
    );
    const ambiguous = await get(`/v1/sync/operations?sync=${live.id}&table=notes`);
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.error.code).toBe('table_ambiguous');

    const ada = all.find((op) => op.record.remote_id === '1' && op.side === 'left')!.record_id;
    const byRecord = await operations(`&record=${ada}`);
    expect(byRecord).toEqual(all.filter((op) => op.record_id === ada));
    expect(new Set(byRecord.map((op) => op.side))).toEqual(new Set(['left', 'right']));
    expect(await operations(`&record=${newId('record')}`)).toEqual([]);
    expect(await operations(`&record=${ada}&table=${tables.contacts}`)).toEqual(
      all.filter((op) => op.record_id === ada && op.table.id === tables.contacts),
    );

    // `since` is inclusive: the update of Ada and everything after it, not the initial sync's creates.
    const poll = all.find((op) => op.record_id === ada && op.trigger === 'poll')!;
    const since = await operations(`&since=${encodeURIComponent(poll.occurred_at)}`);
    expect(since).toEqual(all.filter((op) => Date.parse(op.occurred_at) >= Date.parse(poll.occurred_at)));
    expect(since).toContainEqual(poll);
    expect(since.some((op) => op.action === 'created')).toBe(false);
    expect(await operations(`&since=2999-01-01`)).toEqual([]);

    // Pages of 3 walk the whole list in order, each operation once.
    const walked: Op[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(
        `/v1/sync/operations?sync=${live.id}&limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(3);
      walked.push(...res.body.data);
      cursor = res.body.next_cursor;
      expect(res.body.has_more).toBe(cursor !== null);
      pages += 1;
    } while (cursor);
    expect(pages).toBe(Math.ceil(all.length / 3));
    expect(walked).toEqual(all);
    // The initial sync's creates are stored a page at a time (operation_batches), and read back one by one:
    // pages of 1 step through a batch by position.
    const batches: { size: number }[] = await live.db.query(
      `SELECT size FROM operation_batches WHERE sync_id = $1`,
      [live.id],
    );
    expect(batches.reduce((sum, batch) => sum + batch.size, 0)).toBe(
      all.filter((op) => op.action === 'created').length,
    );
    const byOne: Op[] = [];
    cursor = null;
    do {
      const res = await get(
        `/v1/sync/operations?sync=${live.id}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      byOne.push(...res.body.data);
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(byOne).toEqual(all);
    // A cursor with a filter keeps filtering.
    const first = await get(`/v1/sync/operations?sync=${live.id}&record=${ada}&limit=1`);
    const second = await get(
      `/v1/sync/operations?sync=${live.id}&record=${ada}&limit=1&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    );
    expect([...first.body.data, ...second.body.data]).toEqual(byRecord.slice(0, 2));
    // The default page size is 20.
    const defaultPage = await get(`/v1/sync/operations?sync=${live.id}`);
    expect(defaultPage.body.data).toEqual(all.slice(0, 20));
  });

  it('a rejected write is a record issue; a retry clears it, the engine writes the record once the cause is fixed; retry is safe to repeat', async () => {
    // MariaDB refuses a duplicate email.
    await live.pg.sql(`INSERT INTO people VALUES (3, 'Dup', 'ada@example.com')`);
    const [issue] = await waitUntil('the record issue', async () => {
      const found = await openIssues('&type=record');
      return found.length > 0 ? found : null;
    });
    expect(issue).toEqual({
      id: expect.stringMatching(/^iss_/),
      type: 'record',
      code: 'record_error',
      sync_id: live.id,
      side: 'right',
      connector: 'mysql',
      message: expect.stringMatching(/rejected/),
      remediation: {
        explanation: expect.any(String),
        suggested_action: expect.any(String),
        links: expect.any(Array),
      },
      table: { id: tables.contacts, name: 'contacts' },
      record: {
        id: expect.stringMatching(/^rec_/),
        remote_id: '3',
        name: 'Dup',
        side: 'left',
        url: expect.stringMatching(
          new RegExp(`^http://lockstep\\.test/app/syncs/${live.id}/records/rec_\\w+\\?side=left$`),
        ),
        status_url: expect.stringMatching(
          new RegExp(`^http://lockstep\\.test/v1/sync/records/rec_\\w+\\?sync=${live.id}$`),
        ),
      },
      first_seen_at: expect.any(String),
      last_seen_at: expect.any(String),
      occurrence_count: expect.any(Number),
      resolved_at: null,
      retry_url: `http://lockstep.test/v1/sync/issues/${issue.id}/retry`,
    });
    const single = await get(`/v1/sync/issues/${issue.id}`);
    expect(single.status).toBe(200);
    expect(single.body).toMatchObject({ id: issue.id, remediation: issue.remediation, record: issue.record });
    expect(await openIssues('&type=connection')).toEqual([]);
    const recordId = issue.record!.id;
    const queued = async () =>
      (await live.db.query(`SELECT type, side FROM record_queue WHERE record_id = $1`, [recordId])) as {
        type: string;
        side: string;
      }[];

    // Read scope cannot retry.
    const refused = await retry(issue.id, live.keys.read);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('insufficient_scope');

    // A retry while the cause persists: the engine really tries again and the same issue opens again.
    const early = await retry(issue.id);
    expect(early.status).toBe(202);
    expect(early.body).toEqual({
      issue_id: issue.id,
      resolved_at: expect.any(String),
      already_resolved: false,
      records_queued: 1,
      record_url: issue.record!.status_url,
      issues_url: `http://lockstep.test/v1/sync/issues?sync=${live.id}`,
    });
    const [again] = await waitUntil('the issue raised again', async () => {
      const found = (await openIssues('&type=record')).filter((open) => open.record?.id === recordId);
      return found.length > 0 ? found : null;
    });
    // The recurrence is the issue the agent retried: the same id, open again, one occurrence more, seen later.
    expect(again.id).toBe(issue.id);
    expect(again.occurrence_count).toBeGreaterThan(issue.occurrence_count);
    expect(Date.parse(again.last_seen_at)).toBeGreaterThan(Date.parse(early.body.resolved_at));
    expect(again.first_seen_at).toBe(issue.first_seen_at);
    expect((await get(`/v1/sync/issues/${issue.id}`)).body).toMatchObject({
      id: issue.id,
      resolved_at: null,
      occurrence_count: again.occurrence_count,
    });
    expect(await queued()).toEqual([]);

    // The cause is fixed; the retry clears the issue and re-queues the record.
    await live.my.sql(`DROP INDEX contacts_email ON contacts`);
    const cleared = await retry(again.id);
    expect(cleared.status).toBe(202);
    expect(cleared.body).toMatchObject({ issue_id: again.id, already_resolved: false, records_queued: 1 });
    expect((await openIssues()).map((open) => open.id)).not.toContain(again.id);
    // A cleared issue stays readable.
    expect((await get(`/v1/sync/issues/${again.id}`)).body).toMatchObject({
      id: again.id,
      resolved_at: cleared.body.resolved_at,
    });
    // Safe to repeat: 202 again, nothing queued twice.
    const repeated = await retry(again.id);
    expect(repeated.status).toBe(202);
    expect(repeated.body).toEqual({ ...cleared.body, already_resolved: true, records_queued: 0 });
    expect((await queued()).length).toBeLessThanOrEqual(1);

    await waitUntil('the record written to MariaDB', async () =>
      (await contacts()).some((row) => row.id === 3 && row.name === 'Dup'),
    );
    const created = await operation(
      'the push operation of the create',
      (op) =>
        op.record_id === recordId && op.side === 'right' && op.trigger === 'push' && op.action === 'created',
    );
    expect((await get(`/v1/sync/operations/${created.id}`)).body.field_changes).toEqual(
      expect.arrayContaining([
        { field: 'name', before: null, after: 'Dup' },
        { field: 'email', before: null, after: 'ada@example.com' },
      ]),
    );
    await waitUntil('the queue drained', async () => (await queued()).length === 0);
    expect((await openIssues()).filter((open) => open.record?.id === recordId)).toEqual([]);
  });

  it('a connection issue: retry tries the rejected credentials again at once and the sync catches up', async () => {
    await markCredentialRejected(live.db, {
      syncId: live.id,
      side: 'right',
      connector: 'mysql',
      connectorName: 'MySQL',
      reason: 'Access denied',
      reconnectUrl: `http://lockstep.test/app/syncs/${live.id}/connect/right`,
    });
    const [issue] = await openIssues('&type=connection');
    expect(issue).toMatchObject({
      type: 'connection',
      code: 'authentication_error',
      side: 'right',
      table: null,
      record: null,
    });
    expect(issue.remediation.links).toEqual([
      { name: 'Reconnect the right side', url: `http://lockstep.test/app/syncs/${live.id}/connect/right` },
    ]);
    // While the side is marked broken the engine leaves the sync alone.
    await live.pg.sql(`UPDATE people SET name = 'Grace Hopper' WHERE id = 2`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await contacts()).find((row) => row.id === 2)?.name).toBe('Grace');

    const res = await retry(issue.id);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      issue_id: issue.id,
      already_resolved: false,
      records_queued: 0,
      record_url: null,
    });
    expect(await openIssues('&type=connection')).toEqual([]);
    expect((await get(`/v1/sync/syncs/${live.id}`)).body.right).toMatchObject({
      auth_status: 'ok',
      auth_error: null,
    });
    await waitUntil(
      'the sync caught up',
      async () => (await contacts()).find((row) => row.id === 2)?.name === 'Grace Hopper',
    );
    // The owning worker picked up the wake-up request.
    await waitUntil(
      'the wake-up consumed',
      async () =>
        (
          (await live.db.query(`SELECT wake_requested_at FROM sync_leases WHERE sync_id = $1`, [
            live.id,
          ])) as { wake_requested_at: Date | null }[]
        )[0]?.wake_requested_at === null,
    );
    expect(await openIssues('&type=connection')).toEqual([]);
  });

  describe('query-parameter errors', () => {
    it.each([
      ['', 'missing_sync'],
      ['sync=', 'missing_sync'],
      ['sync=abc', 'invalid_sync'],
      ['sync=SYNC&sync=SYNC', 'invalid_sync'],
      ['sync=SYNC&table=table_00000000000000000000', 'invalid_table'],
      ['sync=SYNC&table=no_such_table', 'invalid_table'],
      ['sync=SYNC&table=', 'invalid_table'],
      ['sync=SYNC&since=yesterday', 'invalid_since'],
      ['sync=SYNC&since=2026-13-45', 'invalid_since'],
      ['sync=SYNC&limit=0', 'invalid_limit'],
      ['sync=SYNC&limit=101', 'invalid_limit'],
      ['sync=SYNC&limit=ten', 'invalid_limit'],
      ['sync=SYNC&cursor=not-a-cursor', 'invalid_cursor'],
      ['sync=SYNC&record=42', 'invalid_request'],
    ])('GET /sync/operations?%s: 400 %s', async (query, code) => {
      const res = await get(`/v1/sync/operations?${query.replaceAll('SYNC', live.id)}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code });
    });

    it.each([
      ['', 'missing_sync'],
      ['sync=abc', 'invalid_sync'],
      ['sync=SYNC&type=bogus', 'invalid_type'],
      ['sync=SYNC&type=Record', 'invalid_type'],
      ['sync=SYNC&limit=0', 'invalid_limit'],
      ['sync=SYNC&limit=101', 'invalid_limit'],
      ['sync=SYNC&cursor=not-a-cursor', 'invalid_cursor'],
    ])('GET /sync/issues?%s: 400 %s', async (query, code) => {
      const res = await get(`/v1/sync/issues?${query.replaceAll('SYNC', live.id)}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code });
    });

    it('a cursor works only on the endpoint and sync that issued it', async () => {
      const page = await get(`/v1/sync/operations?sync=${live.id}&limit=1`);
      const cursor = encodeURIComponent(page.body.next_cursor);
      expect((await get(`/v1/sync/issues?sync=${live.id}&cursor=${cursor}`)).body.error.code).toBe(
        'invalid_cursor',
      );
      const other = await t.bareSync(live.accountId);
      expect((await get(`/v1/sync/operations?sync=${other}&cursor=${cursor}`)).body.error.code).toBe(
        'invalid_cursor',
      );
    });
  });

  describe('access', () => {
    it("a one-sync key gets 404 for other syncs' operations and issues; another account sees nothing; unknown ids are 404", async () => {
      const op = (await operations())[0]!;
      const [issueRow] = (await live.db.query(`SELECT id FROM sync_issues WHERE sync_id = $1 LIMIT 1`, [
        live.id,
      ])) as { id: string }[];
      const other = await t.bareSync(live.accountId);
      const oneSyncRead = await t.key(live.accountId, 'read', other);
      const oneSyncOperate = await t.key(live.accountId, 'operate', other);
      const stranger = await t.account();
      const strangerKey = await t.key(stranger.id, 'operate');

      for (const key of [oneSyncRead, strangerKey]) {
        for (const path of [
          `/v1/sync/operations?sync=${live.id}`,
          `/v1/sync/operations/${op.id}`,
          `/v1/sync/issues?sync=${live.id}`,
          `/v1/sync/issues/${issueRow!.id}`,
        ]) {
          const res = await get(path, key);
          expect({ path, status: res.status, code: res.body.error?.code }).toEqual({
            path,
            status: 404,
            code: 'not_found',
          });
        }
      }
      for (const key of [oneSyncOperate, strangerKey]) {
        const res = await retry(issueRow!.id, key);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      // The one-sync key's own sync: empty lists.
      expect((await get(`/v1/sync/operations?sync=${other}`, oneSyncRead)).body).toEqual({
        data: [],
        has_more: false,
        next_cursor: null,
      });
      expect((await get(`/v1/sync/issues?sync=${other}`, oneSyncRead)).body).toEqual({
        data: [],
        has_more: false,
        next_cursor: null,
      });
      // A sync id of the right shape that does not exist, and unknown or malformed ids.
      expect((await get(`/v1/sync/operations?sync=${newId('sync')}`)).status).toBe(404);
      for (const path of [
        `/v1/sync/operations/${newId('operation')}`,
        '/v1/sync/operations/nope',
        `/v1/sync/issues/${newId('issue')}`,
        '/v1/sync/issues/nope',
      ]) {
        expect((await get(path)).status).toBe(404);
      }
      expect((await retry(newId('issue'))).status).toBe(404);
    });
  });
});
