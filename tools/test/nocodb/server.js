#!/usr/bin/env node
// Starts a real NocoDB (the version in ./package.json) in this process behind express, on a fresh PostgreSQL
// database of its own, signs up its first user, makes an API token, and writes what the tests need as JSON
// to the state file given as --state (url, token, email, password, database, pid). It runs until killed;
// `harness.js` starts and stops it (one per test run, shared by the NocoDB test files).
//
//   node tools/test/nocodb/server.js --state /tmp/x.json [--port 0] [--db lockstep_nocodb_x]
//
// NocoDB's metadata lives in that database (NC_DB); its bases' data goes there too (the default source).
'use strict';
const { writeFileSync, renameSync } = require('node:fs');
const { join } = require('node:path');

function arg(name, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? process.argv[index + 1] : fallback;
}

const here = __dirname;
const statePath = arg('state');
const requestedPort = Number(arg('port', '0'));
const database = arg('db', `lockstep_nocodb_${Date.now()}_${process.pid}`);
const pgHost = process.env.NOCODB_PG_HOST || '127.0.0.1';
const pgPort = process.env.NOCODB_PG_PORT || '5432';
const pgUser = process.env.NOCODB_PG_USER || 'postgres';

function writeState(state) {
  if (!statePath) return;
  writeFileSync(`${statePath}.tmp`, JSON.stringify(state));
  renameSync(`${statePath}.tmp`, statePath);
}

async function createDatabase() {
  const { Client } = require(require.resolve('pg', { paths: [join(here, '..', '..', '..')] }));
  const admin = new Client({ host: pgHost, port: Number(pgPort), user: pgUser, database: 'postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`).catch((error) => {
    if (error.code !== '42P04') throw error; // already there: a restart keeps its data
  });
  await admin.end();
}

async function json(url, method, body, headers = {}) {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url} -> ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** The first user (super admin) and an API token; a restarted server signs in instead. */
async function account(url) {
  const email = process.env.NOCODB_TEST_EMAIL || 'lockstep-tests@example.com';
  const password = process.env.NOCODB_TEST_PASSWORD || 'Lockstep-tests-1';
  let auth;
  try {
    auth = await json(`${url}/api/v1/auth/user/signup`, 'POST', { email, password });
  } catch {
    auth = await json(`${url}/api/v1/auth/user/signin`, 'POST', { email, password });
  }
  const created = await json(`${url}/api/v1/tokens`, 'POST', { description: 'lockstep tests' }, {
    'xc-auth': auth.token,
  });
  return { email, password, jwt: auth.token, token: created.token };
}

async function main() {
  process.env.NC_DISABLE_TELE = 'true';
  process.env.NC_DB = `pg://${pgHost}:${pgPort}?u=${pgUser}&p=${process.env.NOCODB_PG_PASSWORD || ''}&d=${database}`;
  // NocoDB's own outgoing webhooks call Lockstep on loopback in the tests.
  process.env.NC_ALLOW_LOCAL_HOOKS = 'true';
  await createDatabase();
  const express = require(require.resolve('express', { paths: [join(here, 'node_modules', 'nocodb')] }));
  const { Noco } = require(join(here, 'node_modules', 'nocodb'));
  const server = express();
  server.enable('trust proxy');
  const started = Date.now();
  const httpServer = server.listen(requestedPort, '127.0.0.1');
  await new Promise((resolve) => httpServer.once('listening', resolve));
  const port = httpServer.address().port;
  // Idle keep-alive sockets stay open longer than clients keep them (undici: 4 s), so a client never reuses
  // one the server is closing (a busy machine's timers are late).
  httpServer.keepAliveTimeout = 65_000;
  httpServer.headersTimeout = 66_000;
  process.env.NC_PUBLIC_URL = `http://127.0.0.1:${port}`;
  server.use(await Noco.init({}, httpServer, server));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    const ok = await fetch(`${url}/api/v1/health`).then((r) => r.ok).catch(() => false);
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const who = await account(url);
  writeState({ url, port, database, pid: process.pid, startedMs: Date.now() - started, ...who });
  process.stdout.write(`nocodb ready at ${url} in ${Date.now() - started} ms\n`);
}

/**
 * A test run's server goes with its run: when the jest process that started it (LOCKSTEP_NOCODB_PARENT) is
 * gone without stopping it (killed, crashed), it drops its database and exits, so nothing is left behind.
 */
function watchParent() {
  const parent = Number(process.env.LOCKSTEP_NOCODB_PARENT || 0);
  if (!parent) return;
  const timer = setInterval(async () => {
    try {
      process.kill(parent, 0);
      return;
    } catch {
      clearInterval(timer);
    }
    try {
      const { Client } = require(require.resolve('pg', { paths: [join(here, '..', '..', '..')] }));
      const admin = new Client({ host: pgHost, port: Number(pgPort), user: pgUser, database: 'postgres' });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    } finally {
      process.exit(0);
    }
  }, 2000);
  timer.unref();
}

watchParent();
main().catch((error) => {
  process.stderr.write(`nocodb failed to start: ${error && error.stack ? error.stack : error}\n`);
  writeState({ error: String(error && error.message ? error.message : error) });
  process.exit(1);
});
