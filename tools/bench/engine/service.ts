/**
 * The service side of the engine benchmark: a throw-away service store (a migrated PostgreSQL database),
 * syncs written to it the way the API leaves them (as in apps/worker/test/support/fixture.ts, which
 * tools may not import), the real worker process (`dist/apps/worker/src/main.js`) limited to the benchmark's
 * account, and a sampler of that process's resident set size and CPU time from /proc.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Bull from 'bull';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { loadConfig } from '@lockstep/config';
import type { Connection } from '@lockstep/connectors-core';
import { newId } from '@lockstep/domain';
import { DEFAULT_JOB_OPTIONS, QUEUES, SYNC_JOBS } from '@lockstep/jobs';
import { CredentialCipher, runMigrations, sideOwner } from '@lockstep/persistence';
import { type AppSide, uniqueName } from './apps';

export const ROOT = join(__dirname, '..', '..', '..', '..');
export const MASTER_KEY = Buffer.alloc(32, 7).toString('base64');

export interface ServiceStore {
  url: string;
  name: string;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  teardown(keep?: boolean): Promise<void>;
}

/** A throw-away, migrated service store; `teardown(true)` keeps it for inspection. */
export async function serviceStore(adminUrl: string, prefix = 'lockstep_bench'): Promise<ServiceStore> {
  const name = uniqueName(prefix);
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await runMigrations(url.toString());
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  return {
    url: url.toString(),
    name,
    sql: async <T>(text: string, params: unknown[] = []) => (await client.query(text, params)).rows as T[],
    async teardown(keep = false) {
      await client.end().catch(() => undefined);
      if (!keep) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    },
  };
}

export interface SyncSide {
  /** The side's connector (`kind`), base and credentials (an app of `apps.ts`, or the Airtable simulator's). */
  app: Pick<AppSide, 'base' | 'credentials'> & { kind: string };
  /** An open connector connection to the side (for prepareTable and listFields). */
  connection: Connection;
}

export interface PairSpec {
  left: string;
  right: string;
  fields: [string, string][];
}

/** An account for the benchmark's syncs (the worker runs only this account's syncs). */
export async function createAccount(store: ServiceStore): Promise<string> {
  const accountId = newId('account');
  await store.sql(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
    accountId,
    `${accountId}@example.com`,
  ]);
  return accountId;
}

const cipher = () =>
  new CredentialCipher(
    loadConfig({ DATABASE_URL: 'postgres://unused/unused', LOCKSTEP_MASTER_KEY: MASTER_KEY }),
  );

/**
 * Writes a sync with connected sides, cached schema and mappings, still a draft (so that the worker can be
 * started first and the clock starts at `startSyncs`). The default match is the primary field pair (`id`).
 */
export async function createDraftSync(
  store: ServiceStore,
  accountId: string,
  left: SyncSide,
  right: SyncSide,
  pairs: PairSpec[],
  name = 'engine bench',
): Promise<string> {
  const sealer = cipher();
  const syncId = newId('sync');
  await store.sql(
    `INSERT INTO syncs (id, account_id, name, delete_approval) VALUES ($1, $2, $3, 'review_required')`,
    [syncId, accountId, name],
  );
  const ids: Record<'left' | 'right', Map<string, { id: string; fields: Map<string, string> }>> = {
    left: new Map(),
    right: new Map(),
  };
  for (const [sideName, side] of [
    ['left', left],
    ['right', right],
  ] as const) {
    await store.sql(
      `INSERT INTO sync_sides (sync_id, side, connector, auth_method, base_id, base_name, credentials, credential_fingerprint, auth_status, connected_via, connected_at)
       VALUES ($1, $2, $3, 'api_key', $4, $4, $5, $6, 'ok', 'api', now())`,
      [
        syncId,
        sideName,
        side.app.kind,
        side.app.base,
        sealer.encrypt(side.app.credentials, sideOwner(syncId, sideName)),
        sealer.fingerprint(side.app.kind, side.app.credentials),
      ],
    );
    for (const table of new Set(pairs.map((pair) => pair[sideName]))) {
      await side.connection.prepareTable(table, { changeCapture: false, serviceIdColumn: true });
      const tableId = newId('table');
      await store.sql(
        `INSERT INTO sync_tables (id, sync_id, side, remote_id, name, fields_fetched_at) VALUES ($1, $2, $3, $4, $4, now())`,
        [tableId, syncId, sideName, table],
      );
      const fields = new Map<string, string>();
      for (const [position, field] of (await side.connection.listFields(table)).entries()) {
        const fieldId = newId('field');
        fields.set(field.remoteId, fieldId);
        await store.sql(
          `INSERT INTO sync_fields (id, table_id, remote_id, name, type, type_class, read, write, required, is_primary, type_details, position)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
          [
            fieldId,
            tableId,
            field.remoteId,
            field.name,
            field.type,
            field.typeClass,
            field.read,
            field.write,
            field.required,
            field.primary,
            field.typeDetails ? JSON.stringify(field.typeDetails) : null,
            position,
          ],
        );
      }
      ids[sideName].set(table, { id: tableId, fields });
    }
  }
  const field = (side: 'left' | 'right', table: string, fieldName: string) => {
    const id = ids[side].get(table)?.fields.get(fieldName);
    if (!id) throw new Error(`bench: no field ${side}.${table}.${fieldName}`);
    return id;
  };
  const mappings = {
    tables: pairs.map((pair) => ({
      left_table: ids.left.get(pair.left)!.id,
      right_table: ids.right.get(pair.right)!.id,
      direction: 'two_way',
      left: { record_delete_behavior: 'sync' },
      right: { record_delete_behavior: 'sync' },
      fields: pair.fields.map(([l, r]) => ({
        left_field: field('left', pair.left, l),
        right_field: field('right', pair.right, r),
      })),
    })),
  };
  await store.sql(
    `UPDATE syncs SET mappings = $2, reviewed_revision = mappings_revision, start_options = $3 WHERE id = $1`,
    [syncId, JSON.stringify(mappings), JSON.stringify({ prefer: 'left', match: [] })],
  );
  return syncId;
}

/**
 * Starts the drafts the way the API does when a person starts them: draft to active with the initial sync
 * preparing, then an `activate` job on the worker's queues, which makes the worker look for syncs to run at once.
 */
export async function startSyncs(store: ServiceStore, worker: Worker, syncIds: string[]): Promise<void> {
  await store.sql(
    `UPDATE syncs SET status = 'active', initial_sync_phase = 'preparing', initial_sync_started_at = now(), started_at = now() WHERE id = ANY($1::text[])`,
    [syncIds],
  );
  const queue = new Bull(QUEUES.syncs, process.env['REDIS_URL'] || 'redis://127.0.0.1:6379', {
    prefix: worker.queuePrefix,
  });
  try {
    for (const syncId of syncIds) await queue.add(SYNC_JOBS.activate, { syncId }, DEFAULT_JOB_OPTIONS);
  } finally {
    await queue.close();
  }
}

export interface Worker {
  child: ChildProcess;
  pid: number;
  logFile: string;
  queuePrefix: string;
  exited(): boolean;
  stop(): Promise<void>;
}

/** The real worker process, limited to one account, its output appended to a log file. */
export function startWorker(
  store: ServiceStore,
  accountId: string,
  logLevel: string,
  extra: Record<string, string> = {},
): Worker {
  const queuePrefix = `lockstep-bench-${randomBytes(4).toString('hex')}`;
  const logFile = join(tmpdir(), `${queuePrefix}-worker.log`);
  const fd = openSync(logFile, 'a');
  // BENCH_WORKER_NODE_ARGS: extra node flags for the worker, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
  const nodeArgs = (process.env['BENCH_WORKER_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
  // Started the way `npm start` and the worker's Dockerfile start it (tools/dev/start.ts NODE_FLAGS).
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=64', ...nodeArgs, join(ROOT, 'dist/apps/worker/src/main.js')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: store.url,
        REDIS_URL: process.env['REDIS_URL'] || 'redis://127.0.0.1:6379',
        LOCKSTEP_MASTER_KEY: MASTER_KEY,
        QUEUE_PREFIX: queuePrefix,
        ENGINE_ACCOUNT_ID: accountId,
        LOG_LEVEL: logLevel,
        ...extra,
      },
      stdio: ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  let exitedFlag = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exitedFlag = true), resolve())));
  if (child.pid === undefined) throw new Error('the worker process did not start');
  return {
    child,
    pid: child.pid,
    logFile,
    queuePrefix,
    exited: () => exitedFlag,
    async stop() {
      if (!exitedFlag) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exit;
        clearTimeout(timer);
      }
      await deleteRedisKeys(queuePrefix);
    },
  };
}

async function deleteRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(process.env['REDIS_URL'] || 'redis://127.0.0.1:6379', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Best effort: the keys of a benchmark's queue prefix are small.
  } finally {
    redis.disconnect();
  }
}

let clockTicks: number | null = null;
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface ProcStats {
  rssBytes: number;
  /** VmHWM: the kernel's peak resident set size of the process. */
  hwmBytes: number;
  cpuSeconds: number;
}

/** A process's name, CPU seconds (utime + stime) and start time, from the text of its /proc/<pid>/stat. */
function parseStat(stat: string): { name: string; cpuSeconds: number; startTime: string } {
  // Fields 14 and 15 (utime, stime) and 22 (start time); the slice after the name starts at field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond(),
    startTime: fields[19]!,
  };
}

export function procStats(pid: number): ProcStats | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) =>
      Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    const { cpuSeconds } = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return { rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM'), cpuSeconds };
  } catch {
    return null;
  }
}

/** Samples a process's VmRSS every `intervalMs`; `peak` is the largest sample. */
export class RssSampler {
  peak = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pid: number,
    private readonly intervalMs = 200,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  sample(): void {
    const stats = procStats(this.pid);
    if (stats && stats.rssBytes > this.peak) this.peak = stats.rssBytes;
  }

  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    return this.peak;
  }
}

/**
 * CPU time the database servers on this machine spend while a benchmark runs: every `postgres` and
 * `mariadbd`/`mysqld` process is sampled every `intervalMs` (utime + stime from /proc), and each process counts
 * from its first to its last sample (a connection opened and closed between two samples is missed). Where the
 * servers run elsewhere this reads 0.
 */
export class ServerCpuSampler {
  private readonly seen = new Map<string, { server: 'postgres' | 'mariadb'; first: number; last: number }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs = 250) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  private sample(): void {
    let pids: string[];
    try {
      pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
    } catch {
      return;
    }
    for (const pid of pids) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        continue;
      }
      const { name, cpuSeconds: seconds, startTime } = parseStat(stat);
      const server = name.startsWith('postgres')
        ? 'postgres'
        : name === 'mariadbd' || name === 'mysqld'
          ? 'mariadb'
          : null;
      if (!server) continue;
      // The pid and the process's start time identify it (a pid can be reused).
      const key = `${pid}:${startTime}`;
      const entry = this.seen.get(key);
      if (entry) entry.last = seconds;
      else this.seen.set(key, { server, first: seconds, last: seconds });
    }
  }

  stop(): { postgres: number; mariadb: number } {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    const totals = { postgres: 0, mariadb: 0 };
    for (const entry of this.seen.values()) totals[entry.server] += entry.last - entry.first;
    return totals;
  }
}
