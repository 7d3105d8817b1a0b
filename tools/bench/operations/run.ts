/**
 * Operations-list benchmark (`npm run bench:operations`, see README.md): how long `GET /sync/operations` takes
 * at the server with a large change log. Seeds N operations (default 1,000,000) for one sync (plus a tenth as
 * many for a second sync of the same account) into a throw-away service store with `INSERT ... SELECT
 * generate_series`, and before them the measured sync's initial sync: one `created` operation per record, stored
 * the way the engine stores them (a batch of up to 1,000 per table pair in `operation_batches`, each record's link
 * pointing at its operation), starts the built API in this process, and times each request from the server receiving it
 * to the server finishing the response (a `request` listener placed before Express's). Target: p95 < 50 ms.
 *
 * Tools may not import apps, so the API is loaded from `dist/` (built by run.sh), like the engine benchmark
 * runs the built worker. It prints figures; it is not a test (exit 0 when the target is missed, 1 only when
 * something failed to run).
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Agent, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type AppConfig, loadConfig } from '@lockstep/config';
import { newId } from '@lockstep/domain';
import { serviceStore, type ServiceStore } from '../engine/service';

const ROOT = join(__dirname, '..', '..', '..', '..');
const MASTER_KEY = Buffer.alloc(32, 7).toString('base64');
const P95_TARGET_MS = 50;
/** Table pairs of the seeded sync; the last one is rare (about 1% of the operations). */
const PAIRS = 4;
const PAIR_NAMES = [
  ['people', 'contacts'],
  ['companies', 'orgs'],
  ['deals', 'opportunities'],
  ['audits', 'audit_log'],
] as const;

const USAGE = `usage: npm run bench:operations -- [--rows N] [--other-rows N] [--records N] [--requests N] [--warmup N] [--pg-url URL] [--keep]
  --rows N         operations of the measured sync (default 1000000)
  --other-rows N   operations of a second sync of the same account (default rows / 10)
  --records N      distinct records the operations belong to (default rows / 20)
  --requests N     measured requests per case (default 200)
  --warmup N       unmeasured requests before each case (default 20)
  --pg-url URL     PostgreSQL admin URL (default $BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --keep           keep the throw-away database (its name is printed)`;

interface Options {
  rows: number;
  otherRows: number;
  records: number;
  requests: number;
  warmup: number;
  pgUrl: string;
  keep: boolean;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      rows: { type: 'string' },
      'other-rows': { type: 'string' },
      records: { type: 'string' },
      requests: { type: 'string' },
      warmup: { type: 'string' },
      'pg-url': { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const count = (name: string, raw: string | undefined, fallback: number, min = 1): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw.replace(/_/g, ''));
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} needs an integer >= ${min}\n${USAGE}`);
    return n;
  };
  const rows = count('rows', values.rows, 1_000_000, 100);
  return {
    rows,
    otherRows: count('other-rows', values['other-rows'], Math.floor(rows / 10), 0),
    records: count('records', values.records, Math.max(10, Math.floor(rows / 20))),
    requests: count('requests', values.requests, 200),
    warmup: count('warmup', values.warmup, 20, 0),
    pgUrl: values['pg-url'] ?? process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    keep: values.keep,
  };
}

const say = (line = '') => process.stdout.write(`${line}\n`);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const fixed = (n: number) => n.toFixed(2);

interface Seeded {
  accountId: string;
  syncId: string;
  /** `table_` ids per pair: [left, right]. */
  tables: [string, string][];
  rows: number;
  seconds: number;
}

/**
 * One sync with `rows` operations the way the engine writes them: each change is a `poll` operation on the
 * side where it was detected followed by a `push` on the other side, of one of `records` records (spread over
 * the table pairs, the last pair rare), 20 ms apart, the newest now; plus `otherRows` of a second sync.
 */
async function seed(store: ServiceStore, options: Options): Promise<Seeded> {
  const started = performance.now();
  const accountId = newId('account');
  await store.sql(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
    accountId,
    `${accountId}@example.com`,
  ]);
  const syncId = newId('sync');
  const otherSyncId = newId('sync');
  const tables: [string, string][] = [];
  for (const [id, name] of [
    [syncId, 'operations bench'],
    [otherSyncId, 'operations bench (other)'],
  ]) {
    await store.sql(`INSERT INTO syncs (id, account_id, name, status) VALUES ($1, $2, $3, 'active')`, [
      id,
      accountId,
      name,
    ]);
    for (const side of ['left', 'right']) {
      await store.sql(
        `INSERT INTO sync_sides (sync_id, side, connector, auth_method, auth_status) VALUES ($1, $2, $3, 'api_key', 'ok')`,
        [id, side, side === 'left' ? 'postgres' : 'mysql'],
      );
    }
    for (const [index, [left, right]] of PAIR_NAMES.slice(0, PAIRS).entries()) {
      const pair: [string, string] = [newId('table'), newId('table')];
      await store.sql(
        `INSERT INTO sync_tables (id, sync_id, side, remote_id, name, position) VALUES ($1, $3, 'left', $4, $4, $6), ($2, $3, 'right', $5, $5, $6)`,
        [pair[0], pair[1], id, left, right, index],
      );
      if (id === syncId) tables.push(pair);
    }
  }
  // Table ids per pair and side, for the SELECT below: pair p, side s -> $tables[p * 2 + s + 1].
  const insert = async (target: string, rows: number, pairs: [string, string][]) => {
    await store.sql(
      `INSERT INTO operations (id, sync_id, record_id, table_pair, side, table_id, table_name, record_remote_id, record_name, action, trigger, field_changes, details, occurred_at)
       SELECT 'op_' || substr(md5($1 || g::text), 1, 20), $1, 'rec_' || lpad(to_hex(r), 20, '0'), p, s, ($5::text[])[p * 2 + (CASE s WHEN 'left' THEN 1 ELSE 2 END)],
              ($6::text[])[p * 2 + (CASE s WHEN 'left' THEN 1 ELSE 2 END)], r::text, 'Record ' || r,
              CASE WHEN e % 97 = 0 THEN 'created' WHEN e % 211 = 0 THEN 'deleted' ELSE 'updated' END,
              CASE WHEN g % 2 = 1 THEN 'poll' ELSE 'push' END,
              jsonb_build_array(jsonb_build_object('field', 'name', 'before', 'Record ' || r || ' v' || e, 'after', 'Record ' || r || ' v' || (e + 1))),
              NULL, $4::timestamptz - make_interval(secs => ($2 - g) * 0.02)
       FROM (
         SELECT g, e, r,
                CASE WHEN r % 100 = 0 THEN ${PAIRS - 1} ELSE r % ${PAIRS - 1} END AS p,
                CASE WHEN (e % 3 = 0) = (g % 2 = 1) THEN 'right' ELSE 'left' END AS s
         FROM (SELECT g, (g - 1) / 2 AS e, ((((g - 1) / 2) * 7919) % $3) + 1 AS r FROM generate_series(1, $2::bigint) AS g) numbered
       ) v
       ORDER BY g`,
      [
        target,
        rows,
        options.records,
        new Date().toISOString(),
        pairs.flat(),
        pairs.flatMap((_, index) => [PAIR_NAMES[index]![0], PAIR_NAMES[index]![1]]),
      ],
    );
  };
  if (options.otherRows > 0) {
    const other = (
      await store.sql<{ id: string; side: string; position: number }>(
        `SELECT id, side, position FROM sync_tables WHERE sync_id = $1 ORDER BY position, side`,
        [otherSyncId],
      )
    ).map((row) => row.id);
    const otherPairs: [string, string][] = [];
    for (let index = 0; index < other.length; index += 2) otherPairs.push([other[index]!, other[index + 1]!]);
    await insert(otherSyncId, options.otherRows, otherPairs);
  }
  await insert(syncId, options.rows, tables);
  await seedInitialSync(store, syncId, tables, options.records);
  await store.sql(`VACUUM ANALYZE operations`);
  await store.sql(`VACUUM ANALYZE operation_batches`);
  await store.sql(`VACUUM ANALYZE record_links`);
  return { accountId, syncId, tables, rows: options.rows, seconds: (performance.now() - started) / 1000 };
}

/** Records per batch of the seeded initial sync (an engine page). */
const BATCH_RECORDS = 1000;

/**
 * The initial sync of `records` records, a day before the log: per table pair, batches of `BATCH_RECORDS`
 * `created` pushes on the right, half a second apart, and each record's link with its operation's id.
 */
async function seedInitialSync(
  store: ServiceStore,
  syncId: string,
  pairs: [string, string][],
  records: number,
): Promise<void> {
  const numbered = `
    SELECT r, p, (row_number() OVER (PARTITION BY p ORDER BY r) - 1) / ${BATCH_RECORDS} AS chunk,
           (row_number() OVER (PARTITION BY p ORDER BY r) - 1) % ${BATCH_RECORDS} AS pos
      FROM (SELECT r, CASE WHEN r % 100 = 0 THEN ${PAIRS - 1} ELSE r % ${PAIRS - 1} END AS p
              FROM generate_series(1, $2::bigint) AS r) x`;
  const batchId = `'op_' || substr(md5($1 || '/' || p || '/' || chunk), 1, 16)`;
  await store.sql(
    `INSERT INTO operation_batches (id, sync_id, table_pair, side, table_id, table_name, action, trigger, size,
       records, field_changes, occurred_at)
     SELECT ${batchId}, $1, p, 'right', ($3::text[])[p * 2 + 2], ($4::text[])[p * 2 + 2], 'created', 'push', count(*),
            json_agg(json_build_array('rec_' || lpad(to_hex(r), 20, '0'), r::text, 'Record ' || r) ORDER BY pos),
            json_agg(json_build_array(json_build_object('field', 'name', 'after', 'Record ' || r)) ORDER BY pos),
            now() - interval '1 day' + make_interval(secs => (p * 1000 + chunk) * 0.5)
       FROM (${numbered}) v
      GROUP BY p, chunk
      ORDER BY p, chunk`,
    [
      syncId,
      records,
      pairs.flat(),
      pairs.flatMap((_, index) => [PAIR_NAMES[index]![0], PAIR_NAMES[index]![1]]),
    ],
  );
  await store.sql(
    `INSERT INTO record_links (id, sync_id, table_pair, service_id, name, left_remote_id, right_remote_id, created_op)
     SELECT 'rec_' || lpad(to_hex(r), 20, '0'), $1, p, gen_random_uuid(), 'Record ' || r, r::text, r::text,
            operation_entry_id(${batchId}, pos)
       FROM (${numbered}) v`,
    [syncId, records],
  );
}

// ---- the API, from dist/ ----

interface Api {
  app: INestApplication;
  port: number;
  /** Server time of the last finished request, in ms. */
  lastServerMs(): number;
  key: string;
  /** A cursor of `GET /sync/operations` at an arbitrary keyset position (deep pages without walking to them). */
  cursorAt(position: { createdAt: string; id: string }): string;
}

interface CursorEncoder {
  encode(endpoint: string, accountId: string, position: { createdAt: string; id: string }): string;
}

function fromDist<T>(path: string): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(join(ROOT, 'dist', path)) as T;
}

async function startApi(store: ServiceStore, seeded: Seeded): Promise<Api> {
  const { createApp } = fromDist<{ createApp(config: AppConfig): Promise<INestApplication> }>(
    'apps/api/src/app.factory.js',
  );
  const { ApiKeysService } = fromDist<{ ApiKeysService: new (...args: never[]) => unknown }>(
    'apps/api/src/api-keys/api-keys.service.js',
  );
  const { CursorService } = fromDist<{ CursorService: new (...args: never[]) => unknown }>(
    'apps/api/src/common/pagination/cursor.service.js',
  );
  const queuePrefix = `lockstep-bench-ops-${randomBytes(4).toString('hex')}`;
  const config = loadConfig(process.env, {
    DATABASE_URL: store.url,
    LOCKSTEP_MASTER_KEY: MASTER_KEY,
    QUEUE_PREFIX: queuePrefix,
    RATE_LIMIT_PER_MINUTE: 100_000_000,
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'http://lockstep.bench',
  });
  const app = await createApp(config);
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer() as Server;
  let last = 0;
  server.prependListener('request', (_req, res) => {
    const start = performance.now();
    res.once('finish', () => {
      last = performance.now() - start;
    });
  });
  const keys = app.get(ApiKeysService) as {
    create(
      accountId: string,
      input: { name: string; scope: string; syncId: string | null },
    ): Promise<{ secret: string }>;
  };
  const key = (await keys.create(seeded.accountId, { name: 'bench', scope: 'read', syncId: null })).secret;
  const cursors = app.get(CursorService) as CursorEncoder;
  return {
    app,
    port: (server.address() as AddressInfo).port,
    lastServerMs: () => last,
    key,
    cursorAt: (position) =>
      cursors.encode(`GET /sync/operations?sync=${seeded.syncId}`, seeded.accountId, position),
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

interface Response {
  status: number;
  body: { data?: unknown[]; next_cursor?: string | null; error?: { code: string; message: string } };
  clientMs: number;
  serverMs: number;
}

function get(api: Api, path: string): Promise<Response> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: api.port, path, agent, headers: { Authorization: `Bearer ${api.key}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const clientMs = performance.now() - started;
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
              clientMs,
              serverMs: api.lastServerMs(),
            });
          } catch (error) {
            reject(error);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// ---- cases ----

interface Case {
  name: string;
  /** The path of the i-th request (i counts warm-up requests too); may depend on the previous response. */
  path(i: number, previous: Response | null): string;
  /** Rows each response must hold at least (a case that returns nothing measures nothing). */
  minRows: number;
}

interface Figures {
  name: string;
  requests: number;
  rows: number;
  server: { p50: number; p95: number; p99: number; max: number };
  client: { p50: number; p95: number };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function run(api: Api, testCase: Case, options: Options): Promise<Figures> {
  const server: number[] = [];
  const client: number[] = [];
  let rows = 0;
  let previous: Response | null = null;
  for (let i = 0; i < options.warmup + options.requests; i += 1) {
    const path = testCase.path(i, previous);
    const response = await get(api, path);
    if (response.status !== 200)
      throw new Error(
        `${testCase.name}: ${path} answered ${response.status} ${JSON.stringify(response.body.error ?? response.body)}`,
      );
    const count = response.body.data?.length ?? 0;
    if (count < testCase.minRows)
      throw new Error(
        `${testCase.name}: ${path} returned ${count} rows, expected at least ${testCase.minRows}`,
      );
    previous = response;
    if (i < options.warmup) continue;
    server.push(response.serverMs);
    client.push(response.clientMs);
    rows += count;
  }
  server.sort((a, b) => a - b);
  client.sort((a, b) => a - b);
  return {
    name: testCase.name,
    requests: options.requests,
    rows: rows / options.requests,
    server: {
      p50: percentile(server, 50),
      p95: percentile(server, 95),
      p99: percentile(server, 99),
      max: server[server.length - 1] ?? 0,
    },
    client: { p50: percentile(client, 50), p95: percentile(client, 95) },
  };
}

async function cases(store: ServiceStore, api: Api, seeded: Seeded, options: Options): Promise<Case[]> {
  const base = `/v1/sync/operations?sync=${seeded.syncId}`;
  const n = options.requests + options.warmup;
  // Deterministic spread of positions: request i picks the i-th of n evenly spaced values.
  const spread = <T>(values: T[], i: number): T => values[i % values.length]!;
  const positions = await store.sql<{ occurred_key: string; seq: string; occurred_at: string }>(
    `SELECT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_key, seq::text AS seq,
            to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_at
     FROM operations WHERE sync_id = $1 AND seq % $2 = 0 ORDER BY seq LIMIT $3`,
    [seeded.syncId, Math.max(1, Math.floor(seeded.rows / (n + 1))), n],
  );
  // Keep the deep positions away from the newest rows so that every page is full.
  const deep = positions.filter((_, index) => index < positions.length - 2);
  // Positions inside the initial sync's batches (any batch but the oldest, any position from 20 up).
  const inBatches = await store.sql<{ occurred_key: string; id: string }>(
    `SELECT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_key,
            seq::text || '.' || (20 + (seq * 7919) % greatest(1, size - 20))::text AS id
       FROM operation_batches WHERE sync_id = $1 ORDER BY occurred_at DESC, seq DESC OFFSET 0 LIMIT $2`,
    [seeded.syncId, n],
  );
  const records = (
    await store.sql<{ record_id: string }>(
      `SELECT DISTINCT record_id FROM operations WHERE sync_id = $1 AND seq % 997 = 0 LIMIT $2`,
      [seeded.syncId, n],
    )
  ).map((row) => row.record_id);
  const busyTables = seeded.tables.slice(0, PAIRS - 1).flat();
  const rareTables = seeded.tables[PAIRS - 1]!;
  const walk = (first: string) => (i: number, previous: Response | null) =>
    previous?.body.next_cursor && i % 50 !== 0
      ? `${first}&cursor=${encodeURIComponent(previous.body.next_cursor)}`
      : first;
  return [
    { name: 'first page (limit 20, the default)', minRows: 20, path: () => base },
    { name: 'first page, limit 100', minRows: 100, path: () => `${base}&limit=100` },
    { name: 'next pages via cursor (pages 2-50, repeated)', minRows: 20, path: walk(base) },
    {
      name: 'deep pages: cursor anywhere in the log',
      minRows: 20,
      path: (i) => {
        const position = spread(deep, i);
        return `${base}&cursor=${encodeURIComponent(api.cursorAt({ createdAt: position.occurred_key, id: position.seq }))}`;
      },
    },
    {
      name: 'table (a busy table, either side)',
      minRows: 20,
      path: (i) => `${base}&table=${spread(busyTables, i)}`,
    },
    {
      name: 'table (a rare table, ~1% of the log)',
      minRows: 20,
      path: (i) => `${base}&table=${spread(rareTables, i)}`,
    },
    { name: 'table by remote id, next pages via cursor', minRows: 20, path: walk(`${base}&table=contacts`) },
    { name: 'record (both sides)', minRows: 1, path: (i) => `${base}&record=${spread(records, i)}` },
    {
      name: "initial sync's creates: cursor inside a batch",
      minRows: 20,
      path: (i) => {
        const position = spread(inBatches, i);
        return `${base}&cursor=${encodeURIComponent(api.cursorAt({ createdAt: position.occurred_key, id: position.id }))}`;
      },
    },
    {
      name: "initial sync's creates: next pages via cursor, limit 100",
      minRows: 100,
      path: (i, previous) => {
        const start = spread(inBatches, 0);
        const cursor =
          previous?.body.next_cursor && i % 50 !== 0
            ? previous.body.next_cursor
            : api.cursorAt({ createdAt: start.occurred_key, id: start.id });
        return `${base}&limit=100&cursor=${encodeURIComponent(cursor)}`;
      },
    },
    {
      name: 'record, limit 100 (its whole history, the batched create included)',
      minRows: 2,
      path: (i) => `${base}&record=${spread(records, i)}&limit=100`,
    },
    {
      name: 'since (a time anywhere in the log)',
      minRows: 20,
      path: (i) => `${base}&since=${encodeURIComponent(spread(deep, i).occurred_at)}`,
    },
    {
      name: 'since + rare table + cursor anywhere',
      minRows: 0,
      path: (i) => {
        const position = spread(deep, i);
        const since = spread(deep, Math.max(0, deep.indexOf(position) - 20));
        return `${base}&table=${spread(rareTables, i)}&since=${encodeURIComponent(since.occurred_at)}&cursor=${encodeURIComponent(api.cursorAt({ createdAt: position.occurred_key, id: position.seq }))}`;
      },
    },
  ];
}

async function main(): Promise<void> {
  const options = parseOptions();
  say(
    `Operations-list benchmark: ${int(options.rows)} operations (+${int(options.otherRows)} of another sync), ${int(options.records)} records, ${options.requests} requests per case`,
  );
  const store = await serviceStore(options.pgUrl, 'lockstep_bench_ops');
  let api: Api | null = null;
  const cleanup = async () => {
    await api?.app.close().catch(() => undefined);
    agent.destroy();
    await store.teardown(options.keep);
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    say(`service store: ${store.name}${options.keep ? ' (kept)' : ' (dropped at the end)'}`);
    const seeded = await seed(store, options);
    const [{ size }] = await store.sql<{ size: string }>(
      `SELECT pg_size_pretty(pg_total_relation_size('operations')) AS size`,
    );
    say(
      `seeded ${int(seeded.rows + options.otherRows)} operations in ${seeded.seconds.toFixed(1)} s (table with indexes: ${size})`,
    );
    api = await startApi(store, seeded);
    const results: Figures[] = [];
    say();
    say(
      `| case | requests | rows/page | server p50 | server p95 | server p99 | server max | client p50 | client p95 |`,
    );
    say(`|---|---:|---:|---:|---:|---:|---:|---:|---:|`);
    for (const testCase of await cases(store, api, seeded, options)) {
      const figures = await run(api, testCase, options);
      results.push(figures);
      const s = figures.server;
      say(
        `| ${figures.name} | ${figures.requests} | ${figures.rows.toFixed(1)} | ${fixed(s.p50)} ms | ${fixed(s.p95)} ms | ${fixed(s.p99)} ms | ${fixed(s.max)} ms | ${fixed(figures.client.p50)} ms | ${fixed(figures.client.p95)} ms |`,
      );
    }
    const worst = results.reduce((max, figures) => Math.max(max, figures.server.p95), 0);
    say();
    say(
      `worst server p95: ${fixed(worst)} ms (target < ${P95_TARGET_MS} ms): ${worst < P95_TARGET_MS ? 'met' : 'MISSED'}`,
    );
    say(
      JSON.stringify({
        rows: seeded.rows,
        other_rows: options.otherRows,
        records: options.records,
        requests: options.requests,
        target_p95_ms: P95_TARGET_MS,
        worst_p95_ms: worst,
        cases: results,
      }),
    );
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench:operations failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
