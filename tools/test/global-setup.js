// Runs once before all Jest projects: builds the code (migrations run from dist/), creates a throw-away
// service database on the real PostgreSQL, migrates it, and hands its URL to every test worker.
const { execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { join } = require('node:path');
const { Client } = require('pg');

const root = join(__dirname, '..', '..');

module.exports = async function globalSetup() {
  // Names this run for the helpers that start a server once per run (tools/test/nocodb/harness.js); that
  // server watches this process and goes with it.
  process.env.LOCKSTEP_TEST_RUN = `${Date.now()}-${randomBytes(3).toString('hex')}`;
  process.env.LOCKSTEP_TEST_RUN_PID = String(process.pid);
  // Connector-only runs (`LOCKSTEP_SKIP_SERVICE_DB=1 npx jest --selectProjects connector-postgres`) need no service store.
  if (process.env.LOCKSTEP_SKIP_SERVICE_DB) return;
  const adminUrl = process.env.TEST_DATABASE_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `lockstep_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  process.env.LOCKSTEP_TEST_DATABASE = name;
  process.env.DATABASE_URL = url.toString();
  process.env.REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  process.env.QUEUE_PREFIX = `lockstep-test-${randomBytes(4).toString('hex')}`;
  process.env.LOG_LEVEL = process.env.LOG_LEVEL || 'silent';
  execFileSync('npx', ['swc', 'apps', 'libs', 'tools/dev', '-d', 'dist', '--config-file', '.swcrc', '--quiet', '--copy-files',
    '--ignore', '**/*.spec.ts,**/*.e2e-spec.ts,**/test/**'], { cwd: root, stdio: 'inherit' });
  const { runMigrations } = require(join(root, 'dist/libs/persistence/src/migrate.js'));
  await runMigrations(process.env.DATABASE_URL);
};
