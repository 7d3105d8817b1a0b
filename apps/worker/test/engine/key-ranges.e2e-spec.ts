/**
 * A large pair's initial sync split by key range (issue 30, "Workers") across two REAL worker processes
 * (`dist/apps/worker/src/main.js`) on one store: both take ranges of the one pair and the result converges with
 * no row lost or duplicated; a worker SIGKILLed in the middle of a range loses it to the other worker once the
 * range's lease expires, and the pass still ends with every row exactly once. The thresholds are lowered
 * (`ENGINE_RANGE_MIN_ROWS`) so a 24,000-row table is split.
 *
 * As in crash.e2e-spec.ts, the MariaDB table has its own auto-increment key and a non-unique `id` column, so a
 * create repeated after the crash would show up as a second row with the same `id`.
 */
import type { ChildProcess } from 'node:child_process';
import type { DataSource } from 'typeorm';
import { newId } from '@lockstep/domain';
import {
  createStartedSync,
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

jest.setTimeout(240_000);

const N = 24_000;
const PG_TABLE = `CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, qty integer);
  INSERT INTO items SELECT g, 'name ' || g, g % 100 FROM generate_series(1, ${N}) AS g`;
const MY_TABLE = `CREATE TABLE items (rid INT AUTO_INCREMENT PRIMARY KEY, id INT NULL, name VARCHAR(100) NOT NULL, qty INT, KEY by_id (id))`;
const WORKER_ENV = {
  ENGINE_PAGE_SIZE: '500',
  ENGINE_WRITE_BATCH: '250',
  ENGINE_RANGE_MIN_ROWS: '5000',
  ENGINE_RANGES: '6',
};

interface Row {
  id: number;
  name: string;
  qty: number | null;
}

interface RangeRow {
  range_index: number;
  owner: string | null;
  token: number;
  done: number;
  finished: boolean;
}

/** A range's claim as seen in the store: which range, the taker's pid, the claim's token. */
interface Claim {
  range: number;
  pid: string;
  token: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pidOf = (owner: string) => owner.split(':')[1];

describe('initial sync by key range on two worker processes: PostgreSQL -> MariaDB', () => {
  let db: DataSource;
  let pg: Pg | null = null;
  let my: My | null = null;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    db = await store();
  });
  afterAll(async () => {
    await db.destroy();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) await killProcess(child);
    await pg?.drop();
    await my?.drop();
    pg = null;
    my = null;
  });

  /** A started sync of the 24,000-row table into the empty MariaDB one, and two workers on its account. */
  async function start(): Promise<{ syncId: string; workers: ChildProcess[] }> {
    pg = await scratchPg(PG_TABLE);
    my = await scratchMysql([MY_TABLE]);
    const accountId = newId('account');
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
    const workers = [workerProcess(accountId, WORKER_ENV), workerProcess(accountId, WORKER_ENV)];
    children.push(...workers);
    const { syncId } = await createStartedSync(db, {
      accountId,
      left: { connector: 'postgres', base: pg.schema },
      right: { connector: 'mysql', base: my.database },
      pairs: [
        {
          left: 'items',
          right: 'items',
          fields: [
            ['id', 'id'],
            ['name', 'name'],
            ['qty', 'qty'],
          ],
        },
      ],
      deleteApproval: 'auto_approve',
    });
    return { syncId, workers };
  }

  const ranges = async (syncId: string) =>
    (await db.query(
      `SELECT range_index, owner, token::int AS token, done, finished_at IS NOT NULL AS finished
       FROM initial_sync_ranges WHERE sync_id = $1 AND side = 'left' ORDER BY range_index`,
      [syncId],
    )) as RangeRow[];

  /** Every claim of a range seen until stopped: the pid of its taker and its token. */
  function watchRanges(syncId: string): { stop: () => Promise<Claim[]> } {
    const seen = new Map<string, Claim>();
    let watching = true;
    const loop = (async () => {
      while (watching) {
        for (const row of await ranges(syncId))
          if (row.owner)
            seen.set(`${row.range_index}:${row.token}`, {
              range: row.range_index,
              pid: pidOf(row.owner)!,
              token: row.token,
            });
        await sleep(50);
      }
    })();
    return {
      stop: async () => {
        watching = false;
        await loop;
        return [...seen.values()];
      },
    };
  }

  const progress = async (syncId: string) =>
    (
      (await db.query(`SELECT initial_sync_progress AS p FROM syncs WHERE id = $1`, [syncId])) as {
        p: { pairs: Record<string, unknown>[] };
      }[]
    )[0]!.p.pairs[0]!;

  /** Equal tables with N rows, no row twice on MariaDB, exactly one complete link per row, no open issue. */
  async function expectConsistent(syncId: string): Promise<void> {
    const left = await pg!.sql<Row>(`SELECT id, name, qty FROM items ORDER BY id`);
    const right = await my!.sql<Row>(`SELECT id, name, qty FROM items ORDER BY id, rid`);
    expect(left).toHaveLength(N);
    expect(right).toEqual(left);
    expect(
      await my!.sql(`SELECT id, count(*) AS n FROM items GROUP BY id HAVING count(*) > 1 LIMIT 5`),
    ).toEqual([]);
    const [links] = (await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT left_remote_id)::int AS l, count(DISTINCT right_remote_id)::int AS r,
              count(*) FILTER (WHERE create_pending IS NOT NULL)::int AS pending
       FROM record_links WHERE sync_id = $1`,
      [syncId],
    )) as { n: number; l: number; r: number; pending: number }[];
    expect(links).toEqual({ n: N, l: N, r: N, pending: 0 });
    expect(
      await db.query(`SELECT code, message FROM sync_issues WHERE sync_id = $1 AND resolved_at IS NULL`, [
        syncId,
      ]),
    ).toEqual([]);
    // The run's ranges go with it.
    expect(await ranges(syncId)).toEqual([]);
  }

  it('two workers share the ranges of one pair: both take at least one, and the result has every row once', async () => {
    const { syncId, workers } = await start();
    const watch = watchRanges(syncId);
    await waitFor('the initial sync done', async () => (await phase(db, syncId)) === 'done', 180_000, 250);
    const claims = await watch.stop();
    const pids = new Set(claims.map((claim) => claim.pid));
    console.log(`range claims: ${JSON.stringify(claims)}`);
    expect(pids).toEqual(new Set(workers.map((worker) => String(worker.pid))));
    await expectConsistent(syncId);
    // The pair's progress is the ranges' sum; nothing was taken over, so the empty right side is not read.
    expect(await progress(syncId)).toMatchObject({
      stage: 'done',
      processed: { left: N, right: 0 },
      created: { left: 0, right: N },
      failed: 0,
    });
    expect(await progress(syncId)).not.toHaveProperty('resumed');
  });

  it('a worker SIGKILLed in the middle of a range: the other takes the range over after its lease, no row lost or duplicated', async () => {
    const { syncId, workers } = await start();
    const [a, b] = workers as [ChildProcess, ChildProcess];
    const watch = watchRanges(syncId);
    // A range of A's under way: some pages committed, more to come.
    const victim = await waitFor(
      'worker A in the middle of a range',
      async () =>
        (await ranges(syncId)).find(
          (row) => row.owner !== null && pidOf(row.owner) === String(a.pid) && row.done > 0 && !row.finished,
        ),
      180_000,
      10,
    );
    await killProcess(a);
    await waitFor('the initial sync done', async () => (await phase(db, syncId)) === 'done', 180_000, 250);
    const claims = await watch.stop();
    console.log(`killed in range ${JSON.stringify(victim)}; claims: ${JSON.stringify(claims)}`);
    // The range A held was claimed again, by B, with a higher token.
    expect(claims).toContainEqual({ range: victim.range_index, pid: String(b.pid), token: victim.token + 1 });
    await expectConsistent(syncId);
    expect(await progress(syncId)).toMatchObject({
      stage: 'done',
      processed: { left: N },
      failed: 0,
      resumed: true,
    });
  });
});
