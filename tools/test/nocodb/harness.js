// One real NocoDB server per test run, shared by the NocoDB test files (jest runs them in parallel workers):
// the first file that asks starts `server.js` detached (a directory made with mkdir is the lock, so only one
// worker starts it), the others wait for its state file. `tools/test/global-teardown.js` stops it and drops
// its database. Each test file then works in a base of its own, so files never share state.
//
// - NOCODB_TEST_STATE=<file>: use the server whose state file that is (`tools/test/nocodb/start.sh` writes
//   one and leaves it running between runs); it is not stopped at the end.
// - Not installed (`tools/test/nocodb/install.sh` not run): with CI=true the tests fail with that message;
//   otherwise they are skipped and say why.
'use strict';
const { spawn } = require('node:child_process');
const { existsSync, mkdirSync, openSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const here = __dirname;
const START_TIMEOUT_MS = 300_000;

function installed() {
  return existsSync(join(here, 'node_modules', 'nocodb', 'package.json'));
}

function runId() {
  return process.env.LOCKSTEP_TEST_RUN || `manual-${process.ppid}`;
}

function statePath(id = runId()) {
  return join(tmpdir(), `lockstep-nocodb-${id}.json`);
}

function readState(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Why the NocoDB tests cannot run here, or null when they can. */
function unavailableReason() {
  if (process.env.NOCODB_TEST_STATE) return null;
  if (!installed())
    return 'NocoDB is not installed: run tools/test/nocodb/install.sh (about 3 minutes; .ci/run does it)';
  return null;
}

function startDetached(path) {
  const log = openSync(`${path}.log`, 'w');
  const child = spawn(process.execPath, ['--max-old-space-size=1024', join(here, 'server.js'), '--state', path], {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...process.env, NODE_OPTIONS: '', LOCKSTEP_NOCODB_PARENT: process.env.LOCKSTEP_TEST_RUN_PID || '' },
  });
  child.unref();
  return child.pid;
}

/** The shared server's state ({url, token, jwt, ...}), starting it when this run has none yet. */
async function ensureNocodb() {
  if (process.env.NOCODB_TEST_STATE) {
    const state = readState(process.env.NOCODB_TEST_STATE);
    if (!state || !state.url) throw new Error(`NOCODB_TEST_STATE ${process.env.NOCODB_TEST_STATE} has no server`);
    return state;
  }
  const reason = unavailableReason();
  if (reason) throw new Error(reason);
  const path = statePath();
  try {
    mkdirSync(`${path}.lock`);
    startDetached(path);
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
  }
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const state = readState(path);
    if (state && state.error) throw new Error(`NocoDB failed to start: ${state.error} (log: ${path}.log)`);
    if (state && state.url) return state;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`NocoDB did not start within ${START_TIMEOUT_MS / 1000} s (log: ${path}.log)`);
}

/** Stops the server this run started (if any) and drops its database. */
async function stopNocodb(id = runId()) {
  const path = statePath(id);
  const state = readState(path);
  if (state && state.pid && alive(state.pid)) {
    process.kill(state.pid, 'SIGTERM');
    for (let i = 0; i < 50 && alive(state.pid); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    if (alive(state.pid)) process.kill(state.pid, 'SIGKILL');
  }
  if (state && state.database) {
    const { Client } = require('pg');
    const admin = new Client({
      connectionString: process.env.TEST_DATABASE_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
    });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${state.database}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
  rmSync(`${path}.lock`, { recursive: true, force: true });
  rmSync(path, { force: true });
  return Boolean(state);
}

async function dropDatabase(database) {
  const { Client } = require('pg');
  const admin = new Client({
    connectionString: process.env.TEST_DATABASE_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch(() => undefined);
  await admin.end();
}

/**
 * A NocoDB of the caller's own (not the run's shared one), a child of this process, for a test that kills and
 * restarts it: `start()` boots `server.js` on `database` (created when missing, kept otherwise) and `port`
 * (0: any free one, remembered for the next start), `kill()` SIGKILLs it, `stop()` kills it and drops its
 * database. Should the test process die, the server drops its database and exits (LOCKSTEP_NOCODB_PARENT).
 */
function ownNocodb(database) {
  const path = join(tmpdir(), `lockstep-nocodb-own-${database}.json`);
  let child = null;
  let port = 0;
  let retried = false;
  const own = {
    async start() {
      const reason = unavailableReason();
      if (reason) throw new Error(reason);
      rmSync(path, { force: true });
      const log = openSync(`${path}.log`, 'a');
      const args = ['--max-old-space-size=1024', join(here, 'server.js'), '--state', path];
      child = spawn(process.execPath, [...args, '--port', String(port), '--db', database], {
        stdio: ['ignore', log, log],
        env: { ...process.env, NODE_OPTIONS: '', LOCKSTEP_NOCODB_PARENT: String(process.pid) },
      });
      const deadline = Date.now() + START_TIMEOUT_MS;
      while (Date.now() < deadline) {
        const state = readState(path);
        if (state && state.error) throw new Error(`NocoDB failed to start: ${state.error} (log: ${path}.log)`);
        if (state && state.url) {
          port = state.port;
          return state;
        }
        if (child.exitCode !== null) {
          // Seen once with two NocoDBs booting at once on a busy machine: NocoDB's own first-boot seeding failed
          // (duplicate key in nc_plugins_v2). A first boot is tried once more; a restart is not.
          if (port === 0 && !retried) {
            retried = true;
            await dropDatabase(database);
            return own.start();
          }
          throw new Error(`NocoDB exited with ${child.exitCode} (log: ${path}.log)`);
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      throw new Error(`NocoDB did not start within ${START_TIMEOUT_MS / 1000} s (log: ${path}.log)`);
    },
    async kill() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      await own.kill();
      await dropDatabase(database);
      rmSync(path, { force: true }); // the log stays in the temporary folder: why a boot failed
    },
  };
  return own;
}

module.exports = { ensureNocodb, stopNocodb, ownNocodb, unavailableReason, installed, statePath };
