/**
 * Crash and outage tests against the REAL worker process (`dist/apps/worker/src/main.js`, one account only):
 * SIGKILL in the middle of a 20,000-row initial sync and in the middle of an update burst on both sides, the
 * target database going away and coming back (a TCP proxy in front of MariaDB that is stopped and restarted),
 * and concurrent edits of the same records on both sides (no echo afterwards). After each: both tables hold
 * exactly the same rows, none lost, none duplicated, one record link per row, no create intent left behind.
 *
 * The MariaDB table has its own auto-increment key and a non-unique `id` column mapped to PostgreSQL's key, so a
 * create the engine repeats after a crash would show up as a second row with the same `id` instead of failing
 * on a unique key.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { DataSource } from 'typeorm';
import {
  createStartedSync,
  MYSQL_URL,
  type My,
  phase,
  type Pg,
  scratchMysql,
  scratchPg,
  store,
  waitFor,
  workerProcess,
  killProcess,
} from '../support/fixture';

jest.setTimeout(180_000);

interface Row {
  id: number;
  name: string;
  qty: number | null;
  note: string | null;
}

const PG_TABLE = `CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, qty integer, note text)`;
const MY_TABLE = `CREATE TABLE items (rid INT AUTO_INCREMENT PRIMARY KEY, id INT NULL, name VARCHAR(100) NOT NULL, qty INT, note TEXT, KEY by_id (id))`;
const FIELDS: [string, string][] = [
  ['id', 'id'],
  ['name', 'name'],
  ['qty', 'qty'],
  ['note', 'note'],
];
const seedPg = (n: number) =>
  `INSERT INTO items SELECT g, 'name ' || g, g % 100, CASE WHEN g % 3 = 0 THEN NULL ELSE 'note ' || g END FROM generate_series(1, ${n}) AS g`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)]!;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

/** A TCP proxy (the "database" as the worker sees it): stop() closes the listener and cuts every open connection. */
class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = this.port): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const cut = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', cut).on('close', cut);
      upstream.on('error', cut).on('close', cut);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }
}

describe('engine crash safety (real worker process): PostgreSQL <-> MariaDB', () => {
  let db: DataSource;
  let pg: Pg | null = null;
  let my: My | null = null;
  let proxy: TcpProxy | null = null;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    db = await store();
  });
  afterAll(async () => {
    await db.destroy();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) await killProcess(child);
    await proxy?.stop();
    proxy = null;
    await pg?.drop();
    await my?.drop();
    pg = null;
    my = null;
  });

  function startWorker(accountId: string, extra: Record<string, string> = {}): ChildProcess {
    const child = workerProcess(accountId, extra);
    children.push(child);
    return child;
  }

  async function tables(setupPg: string, setupMy: string[] = []) {
    pg = await scratchPg(`${PG_TABLE}; ${setupPg}`);
    my = await scratchMysql([MY_TABLE, ...setupMy]);
  }

  const left = () => pg!.sql<Row>(`SELECT id, name, qty, note FROM items ORDER BY id`);
  const right = () => my!.sql<Row>(`SELECT id, name, qty, note FROM items ORDER BY id, rid`);
  const rightCount = async () =>
    Number((await my!.sql<{ n: number }>(`SELECT count(*) AS n FROM items`))[0]!.n);
  const operations = async (syncId: string) =>
    Number(
      (
        (await db.query(`SELECT count(*) AS n FROM operation_log WHERE sync_id = $1`, [syncId])) as {
          n: string;
        }[]
      )[0]!.n,
    );
  const progress = async (syncId: string) =>
    (
      (await db.query(`SELECT initial_sync_phase, initial_sync_progress FROM syncs WHERE id = $1`, [
        syncId,
      ])) as {
        initial_sync_phase: string;
        initial_sync_progress: {
          pairs: { stage: string; processed: { left: number; right: number } }[];
        } | null;
      }[]
    )[0]!;
  const lease = async (syncId: string) =>
    (
      (await db.query(`SELECT owner, token::int AS token FROM sync_leases WHERE sync_id = $1`, [syncId])) as {
        owner: string;
        token: number;
      }[]
    )[0];

  async function sync(
    options: { deleteApproval?: 'review_required' | 'auto_approve'; rightUrl?: string } = {},
  ) {
    return createStartedSync(db, {
      left: { connector: 'postgres', base: pg!.schema },
      right: {
        connector: 'mysql',
        base: my!.database,
        ...(options.rightUrl ? { url: options.rightUrl } : {}),
      },
      pairs: [{ left: 'items', right: 'items', fields: FIELDS }],
      deleteApproval: options.deleteApproval ?? 'review_required',
    });
  }

  /** Both tables the same, row for row (a duplicate on either side or a lost row makes them differ). */
  async function equal(): Promise<boolean> {
    const [l, r] = await Promise.all([left(), right()]);
    return JSON.stringify(l) === JSON.stringify(r);
  }

  async function waitEqual(
    what: string,
    extra: (rows: Row[]) => boolean = () => true,
    timeoutMs = 60_000,
  ): Promise<Row[]> {
    return waitFor(
      what,
      async () => {
        if (!(await equal())) return null;
        const rows = await left();
        return extra(rows) ? rows : null;
      },
      timeoutMs,
      250,
    );
  }

  /** The end state every test must reach: equal tables, `count` rows, exactly one complete link per row. */
  async function expectConsistent(syncId: string, count?: number): Promise<void> {
    const [l, r] = await Promise.all([left(), right()]);
    expect(r).toEqual(l);
    if (count !== undefined) expect(l).toHaveLength(count);
    expect(
      await my!.sql(`SELECT id, count(*) AS n FROM items GROUP BY id HAVING count(*) > 1 LIMIT 5`),
    ).toEqual([]);
    expect(await my!.sql(`SELECT rid FROM items WHERE id IS NULL LIMIT 5`)).toEqual([]);
    const [links] = (await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT left_remote_id)::int AS l, count(DISTINCT right_remote_id)::int AS r,
              count(*) FILTER (WHERE create_pending IS NOT NULL)::int AS pending,
              count(*) FILTER (WHERE left_remote_id IS NULL OR right_remote_id IS NULL)::int AS half,
              count(*) FILTER (WHERE left_deleted OR right_deleted OR dead)::int AS gone
       FROM record_links WHERE sync_id = $1 AND NOT (left_deleted AND right_deleted)`,
      [syncId],
    )) as { n: number; l: number; r: number; pending: number; half: number; gone: number }[];
    expect(links).toEqual({ n: l.length, l: l.length, r: l.length, pending: 0, half: 0, gone: 0 });
    // The links point at exactly the rows that exist, on both sides.
    const linked = (await db.query(
      `SELECT left_remote_id, right_remote_id FROM record_links WHERE sync_id = $1 AND NOT (left_deleted AND right_deleted)`,
      [syncId],
    )) as {
      left_remote_id: string;
      right_remote_id: string;
    }[];
    const rids = await my!.sql<{ rid: number; id: number }>(`SELECT rid, id FROM items`);
    const ridToId = new Map(rids.map((row) => [String(row.rid), row.id]));
    const pgIds = new Set(l.map((row) => String(row.id)));
    const mismatched = linked.filter(
      (link) =>
        !pgIds.has(link.left_remote_id) || String(ridToId.get(link.right_remote_id)) !== link.left_remote_id,
    );
    expect(mismatched.slice(0, 5)).toEqual([]);
    expect(
      await db.query(
        `SELECT code, side, message FROM sync_issues WHERE sync_id = $1 AND resolved_at IS NULL AND type IN ('record', 'connection')`,
        [syncId],
      ),
    ).toEqual([]);
  }

  it('SIGKILL in the middle of a 20,000-row initial sync: a new worker takes over after the lease expires and finishes without duplicates', async () => {
    const N = 20_000;
    await tables(seedPg(N));
    const { syncId, accountId } = await sync();
    const env = { ENGINE_PAGE_SIZE: '500', ENGINE_WRITE_BATCH: '250' };
    const first = startWorker(accountId, env);
    // Kill while pages are being written, preferably with rows on MariaDB that the committed progress does not cover yet
    // (written but not committed: the resumed run must adopt them, not create them again).
    const killedAt = await waitFor(
      'the initial sync half way',
      async () => {
        const onRight = await rightCount();
        const state = await progress(syncId);
        const committed = state.initial_sync_progress?.pairs[0]?.processed.left ?? 0;
        if (onRight < 5000 || state.initial_sync_phase !== 'running') return null;
        if (onRight > committed || onRight > 12_000) return { onRight, committed };
        return null;
      },
      90_000,
      10,
    );
    const before = await lease(syncId);
    await killProcess(first);
    const atKill = {
      onRight: await rightCount(),
      committed: (await progress(syncId)).initial_sync_progress!.pairs[0]!.processed.left,
    };
    console.log(`initial sync killed: ${JSON.stringify({ killedAt, atKill })}`);
    expect(atKill.onRight).toBeGreaterThan(0);
    expect(atKill.onRight).toBeLessThan(N);
    expect(await phase(db, syncId)).toBe('running');

    startWorker(accountId, env);
    // The lease as the new worker holds it: the fencing token only ever grows (it is never handed out again).
    const tokens: number[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const current = await lease(syncId);
        if (current && current.owner !== before!.owner && current.token !== tokens[tokens.length - 1])
          tokens.push(current.token);
        await sleep(20);
      }
    })();
    try {
      await waitFor(
        'the initial sync done after takeover',
        async () => (await phase(db, syncId)) === 'done',
        120_000,
        250,
      );
      await waitEqual('both sides equal', (rows) => rows.length === N);
      await expectConsistent(syncId, N);
      const final = await progress(syncId);
      expect(final.initial_sync_progress!.pairs[0]).toMatchObject({
        stage: 'done',
        processed: { left: N },
        failed: 0,
        // The killed worker began the pass without links to look up; the new one resumed it and looked them up
        // (the adopted copies above).
        unlinked: 'left',
        resumed: true,
        // Counted by the app (the right side is empty: nothing to match, so the left side is not paged through).
        preview: { left_records: N, right_records: 0, matched: 0, to_create_right: N, to_create_left: 0 },
      });
      await sleep(2500);
    } finally {
      watching = false;
      await watch.catch(() => undefined);
    }
    const after = await lease(syncId);
    expect(after!.owner).not.toBe(before!.owner);
    expect(after!.token).toBeGreaterThan(before!.token);
    // Tokens seen after the takeover: strictly growing, all above the dead worker's.
    expect(tokens.length).toBeGreaterThan(0);
    expect(
      tokens.every((token, index) => token > before!.token && (index === 0 || token > tokens[index - 1]!)),
    ).toBe(true);
  });

  it('SIGKILL between a page written to MariaDB and its commit, then the source row of one such copy is deleted: the copy is recognised and deleted, not copied back', async () => {
    const N = 20_000;
    await tables(seedPg(N));
    const { syncId, accountId } = await sync({ deleteApproval: 'auto_approve' });
    const env = { ENGINE_PAGE_SIZE: '500', ENGINE_WRITE_BATCH: '250' };
    const first = startWorker(accountId, env);
    // Pages are written in id order, so rows on MariaDB above the committed count are copies whose links are not stored yet.
    await waitFor(
      'rows on MariaDB that the committed progress does not cover',
      async () => {
        const state = await progress(syncId);
        const committed = state.initial_sync_progress?.pairs[0]?.processed.left ?? 0;
        return state.initial_sync_phase === 'running' && (await rightCount()) > committed + 1 ? true : null;
      },
      90_000,
      5,
    );
    await killProcess(first);
    const committed = (await progress(syncId)).initial_sync_progress!.pairs[0]!.processed.left;
    const [{ victim }] = await my!.sql<{ victim: number }>(`SELECT max(id) AS victim FROM items`);
    expect(victim).toBeGreaterThan(committed);
    expect(
      (await db.query(`SELECT 1 FROM record_links WHERE sync_id = $1 AND left_remote_id = $2`, [
        syncId,
        String(victim),
      ])) as unknown[],
    ).toEqual([]);
    await pg!.sql(`DELETE FROM items WHERE id = ${victim}`);

    startWorker(accountId, env);
    await waitFor(
      'the initial sync done after the restart',
      async () => (await phase(db, syncId)) === 'done',
      120_000,
      250,
    );
    await waitEqual('both sides equal without the deleted row', (rows) => rows.length === N - 1);
    expect(await my!.sql(`SELECT rid FROM items WHERE id = ${victim}`)).toEqual([]);
    await expectConsistent(syncId, N - 1);
    // The change log tells the story: the copy written before the crash, then its removal.
    const ops = (await db.query(
      `SELECT o.action, o.side, o.trigger, o.details FROM operation_log o JOIN record_links l ON l.id = o.record_id
       WHERE o.sync_id = $1 AND l.left_remote_id IS NULL AND l.left_deleted ORDER BY o.seq, o.batch_position`,
      [syncId],
    )) as { action: string; side: string; trigger: string; details: Record<string, unknown> | null }[];
    expect(ops.map((op) => [op.action, op.side, op.trigger])).toEqual([
      ['created', 'right', 'push'],
      ['deleted', 'left', 'poll'],
      ['deleted', 'right', 'push'],
    ]);
    expect(ops[0]!.details).toMatchObject({ recovered: true });
  });

  it('SIGKILL in the middle of an update burst on both sides: after a restart both sides converge, every last edit survives', async () => {
    await tables(seedPg(500));
    const { syncId, accountId } = await sync();
    startWorker(accountId);
    await waitFor('initial sync done', async () => (await phase(db, syncId)) === 'done', 60_000, 200);
    await waitEqual('initial sync equal', (rows) => rows.length === 500);

    // Expected final values: left edits qty of 1..200 and name of 401..450; right edits note of 201..400 and of 401..450.
    const expected = new Map<number, Partial<Row>>();
    const expect$ = (id: number, values: Partial<Row>) =>
      expected.set(id, { ...expected.get(id), ...values });
    const inserted = { left: [] as number[], right: [] as number[] };
    let running = true;
    let n = 0;
    const leftLoop = async () => {
      while (running) {
        n += 1;
        const id = pick(range(1, 200));
        await pg!.sql(`UPDATE items SET qty = $2 WHERE id = $1`, [id, 1000 + n]);
        expect$(id, { qty: 1000 + n });
        if (n % 3 === 0) {
          const shared = pick(range(401, 450));
          await pg!.sql(`UPDATE items SET name = $2 WHERE id = $1`, [shared, `left ${n}`]);
          expect$(shared, { name: `left ${n}` });
        }
        if (n % 10 === 0) {
          const id = 1000 + inserted.left.length;
          await pg!.sql(`INSERT INTO items VALUES ($1, $2, 1, NULL)`, [id, `new left ${id}`]);
          inserted.left.push(id);
        }
      }
    };
    let m = 0;
    const rightLoop = async () => {
      while (running) {
        m += 1;
        const id = pick(range(201, 400));
        await my!.sql(`UPDATE items SET note = ? WHERE id = ?`, [`right ${m}`, id]);
        expect$(id, { note: `right ${m}` });
        if (m % 3 === 0) {
          const shared = pick(range(401, 450));
          await my!.sql(`UPDATE items SET note = ? WHERE id = ?`, [`right shared ${m}`, shared]);
          expect$(shared, { note: `right shared ${m}` });
        }
        if (m % 10 === 0) {
          const id = 2000 + inserted.right.length;
          await my!.sql(`INSERT INTO items (id, name, qty, note) VALUES (?, ?, 2, 'r')`, [
            id,
            `new right ${id}`,
          ]);
          inserted.right.push(id);
        }
      }
    };
    const opsBefore = await operations(syncId);
    const burst = Promise.all([leftLoop(), rightLoop()]);
    try {
      // Kill while the worker is busy carrying the burst.
      await waitFor(
        'the worker busy with the burst',
        async () => (await operations(syncId)) > opsBefore + 100,
        30_000,
        20,
      );
      await killProcess(children[0]!);
      await sleep(1000);
      startWorker(accountId);
      await sleep(2500);
    } finally {
      running = false;
      await burst;
    }
    const total = 500 + inserted.left.length + inserted.right.length;
    console.log(
      `burst: ${n} left and ${m} right edit rounds, ${inserted.left.length} + ${inserted.right.length} inserts`,
    );
    await waitEqual(
      'converged with every last edit',
      (rows) =>
        rows.length === total &&
        rows.every((row) => {
          const want = expected.get(row.id);
          return !want || Object.entries(want).every(([key, value]) => row[key as keyof Row] === value);
        }),
      90_000,
    );
    const rows = await left();
    for (const id of [...inserted.left, ...inserted.right])
      expect(rows.some((row) => row.id === id)).toBe(true);
    await sleep(2000);
    expect(await equal()).toBe(true);
    await expectConsistent(syncId, total);
  });

  it('the target database goes away and comes back: a connection issue opens, then the sync catches up and the issue resolves', async () => {
    const target = new URL(MYSQL_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 3306));
    await proxy.start();
    const proxied = new URL(MYSQL_URL);
    proxied.port = String(proxy.port);
    await tables(seedPg(50));
    const { syncId, accountId } = await sync({
      deleteApproval: 'auto_approve',
      rightUrl: proxied.toString(),
    });
    startWorker(accountId);
    await waitFor('initial sync done', async () => (await phase(db, syncId)) === 'done', 60_000, 200);
    await waitEqual('initial sync equal', (rows) => rows.length === 50);

    await proxy.stop();
    // Changes on the source side while the target is down (and one on the target itself, behind the worker's back).
    await pg!.sql(
      `INSERT INTO items SELECT g, 'during outage ' || g, g, NULL FROM generate_series(100, 109) AS g`,
    );
    await pg!.sql(`UPDATE items SET qty = qty + 1000 WHERE id <= 5`);
    await pg!.sql(`DELETE FROM items WHERE id IN (10, 11)`);
    await my!.sql(`UPDATE items SET note = 'edited on the target during the outage' WHERE id = 20`);
    const issue = await waitFor(
      'a connection issue for the target side',
      async () =>
        (
          await db.query(
            `SELECT * FROM sync_issues WHERE sync_id = $1 AND type = 'connection' AND side = 'right' AND resolved_at IS NULL`,
            [syncId],
          )
        )[0],
      60_000,
      200,
    );
    expect(issue).toMatchObject({ code: 'connection_error', side: 'right' });
    // The worker keeps retrying (and failing) while the target is down; nothing reaches it meanwhile.
    await waitFor(
      'a failed retry during the outage',
      async () =>
        Number(
          (await db.query(`SELECT occurrence_count FROM sync_issues WHERE id = $1`, [issue.id]))[0]
            .occurrence_count,
        ) >= 2,
      30_000,
      200,
    );
    expect((await right()).some((row) => row.id >= 100)).toBe(false);

    const port = proxy.port;
    await proxy.start(port);
    const rows = await waitEqual(
      'caught up after the target came back',
      (rows) =>
        rows.length === 58 &&
        rows.filter((row) => row.id >= 100).length === 10 &&
        rows.filter((row) => row.id <= 5).every((row) => row.qty! >= 1000) &&
        rows.find((row) => row.id === 20)?.note === 'edited on the target during the outage',
      90_000,
    );
    expect(rows.some((row) => row.id === 10 || row.id === 11)).toBe(false);
    await waitFor(
      'the connection issue resolved',
      async () =>
        (await db.query(`SELECT resolved_at FROM sync_issues WHERE id = $1`, [issue.id]))[0].resolved_at !==
        null,
      30_000,
      200,
    );
    await expectConsistent(syncId, 58);
  });

  it('the worker is killed and restarted while the target is down: it still catches up and resolves the connection issue', async () => {
    const target = new URL(MYSQL_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 3306));
    await proxy.start();
    const proxied = new URL(MYSQL_URL);
    proxied.port = String(proxy.port);
    await tables(seedPg(20));
    const { syncId, accountId } = await sync({ rightUrl: proxied.toString() });
    const first = startWorker(accountId);
    await waitFor('initial sync done', async () => (await phase(db, syncId)) === 'done', 60_000, 200);
    await waitEqual('initial sync equal', (rows) => rows.length === 20);

    await proxy.stop();
    await pg!.sql(`UPDATE items SET note = 'while down' WHERE id <= 3`);
    await pg!.sql(`INSERT INTO items VALUES (50, 'inserted while down', 5, NULL)`);
    const issue = await waitFor(
      'a connection issue for the target side',
      async () =>
        (
          await db.query(
            `SELECT * FROM sync_issues WHERE sync_id = $1 AND type = 'connection' AND side = 'right' AND resolved_at IS NULL`,
            [syncId],
          )
        )[0],
      60_000,
      200,
    );
    await killProcess(first);
    await proxy.start(proxy.port);
    startWorker(accountId);
    await waitEqual(
      'caught up after the restart',
      (rows) => rows.length === 21 && rows.filter((row) => row.note === 'while down').length === 3,
      60_000,
    );
    await waitFor(
      'the connection issue resolved',
      async () =>
        (await db.query(`SELECT resolved_at FROM sync_issues WHERE id = $1`, [issue.id]))[0].resolved_at !==
        null,
      10_000,
      200,
    );
    await expectConsistent(syncId, 21);
  });

  it('concurrent edits of the same records on both sides converge, and then nothing more happens (no echo)', async () => {
    await tables(seedPg(100));
    const { syncId, accountId } = await sync();
    startWorker(accountId);
    await waitFor('initial sync done', async () => (await phase(db, syncId)) === 'done', 60_000, 200);
    await waitEqual('initial sync equal', (rows) => rows.length === 100);

    // Rows 1..15: both sides edit qty (the same field). Rows 16..30: left edits name, right edits note.
    const last = { left: new Map<number, number>(), right: new Map<number, number>() };
    const names = new Map<number, string>();
    const notes = new Map<number, string>();
    const deadline = Date.now() + 4000;
    const leftLoop = async () => {
      for (let i = 0; Date.now() < deadline; i += 1) {
        const same = pick(range(1, 15));
        await pg!.sql(`UPDATE items SET qty = $2 WHERE id = $1`, [same, 10_000 + i]);
        last.left.set(same, 10_000 + i);
        const other = pick(range(16, 30));
        await pg!.sql(`UPDATE items SET name = $2 WHERE id = $1`, [other, `left name ${i}`]);
        names.set(other, `left name ${i}`);
        await sleep(Math.random() * 20);
      }
    };
    const rightLoop = async () => {
      for (let i = 0; Date.now() < deadline; i += 1) {
        const same = pick(range(1, 15));
        await my!.sql(`UPDATE items SET qty = ? WHERE id = ?`, [20_000 + i, same]);
        last.right.set(same, 20_000 + i);
        const other = pick(range(16, 30));
        await my!.sql(`UPDATE items SET note = ? WHERE id = ?`, [`right note ${i}`, other]);
        notes.set(other, `right note ${i}`);
        await sleep(Math.random() * 20);
      }
    };
    await Promise.all([leftLoop(), rightLoop()]);
    const rows = await waitEqual(
      'converged',
      (rows) =>
        rows.length === 100 &&
        [...names].every(([id, name]) => rows.find((row) => row.id === id)?.name === name) &&
        [...notes].every(([id, note]) => rows.find((row) => row.id === id)?.note === note),
      60_000,
    );
    // The same field: one of the two sides' last values won (never an older value, never a mix).
    for (let id = 1; id <= 15; id += 1) {
      const row = rows.find((candidate) => candidate.id === id)!;
      const candidates = [last.left.get(id), last.right.get(id)].filter((value) => value !== undefined);
      if (candidates.length > 0) expect(candidates).toContain(row.qty);
    }
    // No echo, no ping-pong: once equal, the operations count stays flat.
    await sleep(1500);
    const settled = await operations(syncId);
    await sleep(3000);
    expect(await operations(syncId)).toBe(settled);
    await expectConsistent(syncId, 100);
  });
});
