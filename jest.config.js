// Every test of the repository: `npx jest` (or `npm test`, which also builds, type-checks and lints first).
// Projects that talk to PostgreSQL, Redis or MariaDB share one throw-away service database per run
// (created in tools/test/global-setup.js, dropped in global-teardown.js).
const preset = require('./jest.preset.js');

const project = (displayName, rootDir, extra = {}) => ({
  ...preset,
  displayName,
  rootDir: `<rootDir>/${rootDir}`,
  testMatch: ['<rootDir>/**/*.spec.ts', '<rootDir>/**/*.e2e-spec.ts'],
  ...extra,
});

module.exports = {
  rootDir: __dirname,
  globalSetup: '<rootDir>/tools/test/global-setup.js',
  globalTeardown: '<rootDir>/tools/test/global-teardown.js',
  testTimeout: 60000,
  maxWorkers: 2,
  projects: [
    project('domain', 'libs/domain'),
    project('contracts', 'libs/contracts'),
    project('config', 'libs/config'),
    project('pg-copy', 'libs/pg-copy'),
    project('persistence', 'libs/persistence'),
    project('jobs', 'libs/jobs'),
    project('client', 'libs/client'),
    project('connectors-core', 'libs/connectors/core'),
    project('connectors-http', 'libs/connectors/http'),
    project('connector-postgres', 'libs/connectors/postgres'),
    project('connector-mysql', 'libs/connectors/mysql'),
    project('connector-airtable', 'libs/connectors/airtable'),
    project('connector-nocodb', 'libs/connectors/nocodb'),
    project('connectors-registry', 'libs/connectors/registry'),
    project('api', 'apps/api'),
    project('worker', 'apps/worker'),
    project('tools', 'tools'),
  ],
};
