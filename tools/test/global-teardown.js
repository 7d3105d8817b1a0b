// Drops the throw-away service database created by global-setup.js, and stops the NocoDB server the NocoDB
// tests started for this run (tools/test/nocodb/harness.js), if they did.
const { Client } = require('pg');
const { stopNocodb } = require('./nocodb/harness');

module.exports = async function globalTeardown() {
  if (process.env.LOCKSTEP_TEST_RUN) await stopNocodb(process.env.LOCKSTEP_TEST_RUN);
  const name = process.env.LOCKSTEP_TEST_DATABASE;
  if (!name || process.env.KEEP_TEST_DATABASE) return;
  const admin = new Client({ connectionString: process.env.TEST_DATABASE_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
};
