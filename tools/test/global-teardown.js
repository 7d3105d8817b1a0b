// Drops the throw-away service database created by global-setup.js.
const { Client } = require('pg');

module.exports = async function globalTeardown() {
  const name = process.env.LOCKSTEP_TEST_DATABASE;
  if (!name || process.env.KEEP_TEST_DATABASE) return;
  const admin = new Client({ connectionString: process.env.TEST_DATABASE_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
};
