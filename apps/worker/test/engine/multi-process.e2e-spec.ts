/**
 * Several processes on one service store and one Redis, as a scaled deployment runs them: two real API
 * processes (`dist/apps/api/src/main.js`) and two real worker processes. The API processes share one rate
 * budget per key (counted in Redis); a worker SIGKILLed while six PostgreSQL <-> MariaDB syncs are active
 * and carrying edits loses its syncs to the other worker once their leases expire, and every sync converges
 * without a duplicate. Every process runs under a queue prefix of its own, so the heartbeats and rate
 * counters of other test files are not counted.
 *
 * As in crash.e2e-spec.ts, the MariaDB tables have their own auto-increment key and a non-unique `id` column,
 * so a create repeated after the crash would show up as a second row with the same `id`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DataSource } from 'typeorm';
import {
  createStartedSync,
  MASTER_KEY,
  type My,
  type Pg,
  scratchMysql,
  scratchPg,
  store,
  waitFor,
  workerProcess,
} from '../support/fixture';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..', '..', '..');
const SYNCS = 6;
const ROWS = 2000;
const LEASE_SECONDS = 3;
const RATE_LIMIT = 10;
const PG_TABLE = `CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, qty integer);
  INSERT INTO items SELECT g, 'name ' || g, g % 100 FROM generate_series(1, ${ROWS}) AS g`;
const MY_TABLE = `CREATE TABLE items (rid INT AUTO_INCREMENT PRIMARY KEY, id INT NULL, name VARCHAR(100) NOT NULL, qty INT, KEY by_id (id))`;

interface Row {
  id: number;
  name: string;
  qty: number | null;
}

interface SyncUnderTest {
  syncId: string;
  pg: Pg;
  my: My;
  /** Rows inserted on the PostgreSQL side by the edit burst. */
  inserted: number;
}

const execFileAsync = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

describe('several API and worker processes on one store and one Redis', () => {
  const env: Record<string, string> = {
    QUEUE_PREFIX: `${process.env['QUEUE_PREFIX']}-multi-${randomBytes(3).toString('hex')}`,
    LOCKSTEP_MASTER_KEY: MASTER_KEY,
    RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
    // One long window, so the budget does not refill in the middle of the test (waited out below when close).
    RATE_LIMIT_WINDOW_SECONDS: '3600',
    LOG_LEVEL: 'silent',
  };
  const children: ChildProcess[] = [];
  const apis: string[] = [];
  const syncs: SyncUnderTest[] = [];
  let db: DataSource;
  let accountId: string;
  /** A read key of the account. */
  let secret: string;

  /** The operator CLI as its own process; asynchronous, so that this process's idle HTTP connections stay serviced. */
  const cli = async (...args: string[]) => {
    const { stdout } = await execFileAsync(
      process.execPath,
      [join(ROOT, 'dist/apps/api/src/cli/main.js'), ...args],
      {
        encoding: 'utf8',
        env: { ...process.env, ...env, LOCKSTEP_HOME: mkdtempSync(join(tmpdir(), 'lockstep-cli-')) },
      },
    );
    return JSON.parse(stdout);
  };

  async function startApi(): Promise<string> {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const api = spawn(process.execPath, [join(ROOT, 'dist/apps/api/src/main.js')], {
      env: { ...process.env, ...env, PORT: String(port), PUBLIC_URL: base },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(api);
    await waitFor(`the API on ${base}`, () => fetch(`${base}/healthz`).then((r) => r.ok), 60_000, 200);
    return base;
  }

  function startWorker(extra: Record<string, string>): ChildProcess {
    const child = workerProcess(accountId, {
      ...env,
      ENGINE_PAGE_SIZE: '500',
      ENGINE_WRITE_BATCH: '250',
      ...extra,
    });
    children.push(child);
    return child;
  }

  beforeAll(async () => {
    db = await store();
    const email = `multi-${randomBytes(4).toString('hex')}@example.com`;
    const account = async () => {
      accountId = (await cli('account', 'create', '--email', email, '--password', 'a long password')).id;
      const key = await cli('key', 'create', '--account', accountId, '--name', 'multi', '--scope', 'read');
      secret = key.secret;
    };
    const [, ...started] = await Promise.all([account(), startApi(), startApi()]);
    apis.push(...started);
  });

  afterAll(async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    for (const sync of syncs) await Promise.all([sync.pg.drop(), sync.my.drop()]);
    await db.destroy();
  });

  it('the two APIs share one rate budget per key: requests split across both hit rate_limit_exceeded at the shared limit', async () => {
    const windowLeftMs = 3_600_000 - (Date.now() % 3_600_000);
    if (windowLeftMs < 30_000) await sleep(windowLeftMs + 1000);
    const call = (index: number) =>
      fetch(`${apis[index % 2]}/v1/sync/connectors`, { headers: { Authorization: `Bearer ${secret}` } });
    const remaining: string[] = [];
    for (let index = 0; index < RATE_LIMIT; index += 1) {
      const res = await call(index);
      expect(res.status).toBe(200);
      remaining.push(res.headers.get('ratelimit-remaining')!);
    }
    // One counter: each API sees the requests the other one served.
    expect(remaining).toEqual(
      Array.from({ length: RATE_LIMIT }, (_, index) => String(RATE_LIMIT - 1 - index)),
    );
    for (const index of [0, 1]) {
      const refused = await call(index);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({
        code: 'rate_limit_exceeded',
      });
    }
  });

  const ownersOf = async () =>
    new Map(
      (
        (await db.query(
          `SELECT sync_id, owner FROM sync_leases WHERE sync_id = ANY($1::text[]) AND expires_at > now()`,
          [syncs.map((sync) => sync.syncId)],
        )) as { sync_id: string; owner: string }[]
      ).map((row) => [row.sync_id, row.owner]),
    );
  /** The syncs a worker process holds a live lease on (lease owners are `host:pid:random`). */
  const heldBy = async (child: ChildProcess) =>
    [...(await ownersOf())]
      .filter(([, owner]) => owner.split(':')[1] === String(child.pid))
      .map(([id]) => id);
  const workersAlive = async (base: string) =>
    ((await (await fetch(`${base}/healthz`)).json()) as { checks: { worker: { alive: number } } }).checks
      .worker.alive;

  it('a worker SIGKILLed while six syncs are active: the other worker takes its syncs within the lease time and all converge without duplicates', async () => {
    for (let index = 0; index < SYNCS; index += 1) {
      const [pg, my] = await Promise.all([scratchPg(PG_TABLE), scratchMysql([MY_TABLE])]);
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
      });
      syncs.push({ syncId, pg, my, inserted: 0 });
    }
    // A takes at most half of the syncs; B, started once A holds them, takes the rest and has room for all.
    const a = startWorker({ ENGINE_MAX_SYNCS: String(SYNCS / 2) });
    await waitFor(
      'worker A holding three syncs',
      async () => (await heldBy(a)).length === SYNCS / 2,
      60_000,
      200,
    );
    const b = startWorker({});
    await waitFor(
      'worker B holding the other three',
      async () => (await heldBy(b)).length === SYNCS / 2,
      60_000,
      200,
    );
    for (const base of apis)
      await waitFor(
        `two workers alive on ${base}`,
        async () => (await workersAlive(base)) === 2,
        30_000,
        200,
      );

    const taken = await heldBy(a);
    const before = await operationsOf(taken);
    const burst = editBurst();
    // Killed while busy: its syncs are recording operations for the burst's edits.
    await waitFor(
      'worker A carrying edits',
      async () => (await operationsOf(taken)) > before + 30,
      60_000,
      100,
    );
    const phases = await Promise.all(taken.map((id) => phaseOf(id)));
    const killedAt = Date.now();
    a.kill('SIGKILL');
    await waitFor(
      'worker B holding all six syncs',
      async () => (await heldBy(b)).length === SYNCS,
      60_000,
      100,
    );
    const takeoverMs = Date.now() - killedAt;
    console.log(
      `worker A killed with its syncs in phases ${phases.join(', ')}; worker B took them over in ${takeoverMs} ms`,
    );
    // The lease runs out at most LEASE_SECONDS after A's last renewal; B claims it at its next one-second tick
    // (slack for a loaded machine).
    expect(takeoverMs).toBeLessThan((LEASE_SECONDS + 7) * 1000);
    await sleep(1500);
    await burst.stop();

    for (const sync of syncs) {
      await waitFor(`sync ${sync.syncId} converged`, () => converged(sync), 90_000, 250);
      await expectNoDuplicates(sync);
    }
    for (const base of apis)
      await waitFor(`one worker alive on ${base}`, async () => (await workersAlive(base)) === 1, 30_000, 250);
  });

  /** Inserts and updates on every sync's PostgreSQL side and updates on its MariaDB side, until stopped. */
  function editBurst(): { stop: () => Promise<void> } {
    let running = true;
    const loop = (async () => {
      for (let round = 1; running; round += 1) {
        for (const sync of syncs) {
          sync.inserted += 1;
          await sync.pg.sql(`INSERT INTO items VALUES ($1, $2, 0)`, [
            ROWS + sync.inserted,
            `new ${sync.inserted}`,
          ]);
          await sync.pg.sql(`UPDATE items SET qty = $2 WHERE id = $1`, [1 + (round % ROWS), 1000 + round]);
          await sync.my.sql(`UPDATE items SET name = ? WHERE id = ?`, [
            `right ${round}`,
            1 + ((round * 7) % ROWS),
          ]);
        }
        await sleep(20);
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
      },
    };
  }

  const operationsOf = async (ids: string[]) =>
    Number(
      (
        (await db.query(`SELECT count(*) AS n FROM operation_log WHERE sync_id = ANY($1::text[])`, [
          ids,
        ])) as {
          n: string;
        }[]
      )[0]!.n,
    );
  const phaseOf = async (id: string) =>
    (
      (await db.query(`SELECT initial_sync_phase AS phase FROM syncs WHERE id = $1`, [id])) as {
        phase: string;
      }[]
    )[0]!.phase;

  /** Both sides equal row for row, with every row the burst inserted. */
  async function converged(sync: SyncUnderTest): Promise<boolean> {
    const [left, right] = await Promise.all([
      sync.pg.sql<Row>(`SELECT id, name, qty FROM items ORDER BY id`),
      sync.my.sql<Row>(`SELECT id, name, qty FROM items ORDER BY id, rid`),
    ]);
    return left.length === ROWS + sync.inserted && JSON.stringify(left) === JSON.stringify(right);
  }

  const linksOf = async (sync: SyncUnderTest) =>
    (
      (await db.query(
        `SELECT count(*)::int AS n, count(DISTINCT left_remote_id)::int AS l, count(DISTINCT right_remote_id)::int AS r,
                count(*) FILTER (WHERE create_pending IS NOT NULL)::int AS pending
         FROM record_links WHERE sync_id = $1 AND NOT (left_deleted AND right_deleted)`,
        [sync.syncId],
      )) as { n: number; l: number; r: number; pending: number }[]
    )[0]!;

  /**
   * No row twice on MariaDB, and exactly one complete record link per row. The store commit of a change lands
   * just after its app writes, so the links are waited for before they are compared.
   */
  async function expectNoDuplicates(sync: SyncUnderTest): Promise<void> {
    expect(
      await sync.my.sql(`SELECT id, count(*) AS n FROM items GROUP BY id HAVING count(*) > 1 LIMIT 5`),
    ).toEqual([]);
    expect(await sync.my.sql(`SELECT rid FROM items WHERE id IS NULL LIMIT 5`)).toEqual([]);
    const rows = ROWS + sync.inserted;
    const complete = { n: rows, l: rows, r: rows, pending: 0 };
    const settled = async () => JSON.stringify(await linksOf(sync)) === JSON.stringify(complete);
    await waitFor(`the links of ${sync.syncId} complete`, settled, 30_000, 250).catch(() => undefined);
    expect(await linksOf(sync)).toEqual(complete);
  }
});
