// Shared Jest settings: SWC transpiles TypeScript (decorator metadata included); `tsc` type-checks separately.
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const swcrc = JSON.parse(readFileSync(join(__dirname, '.swcrc'), 'utf8'));
const paths = JSON.parse(readFileSync(join(__dirname, 'tsconfig.base.json'), 'utf8')).compilerOptions.paths;
const moduleNameMapper = Object.fromEntries(
  Object.entries(paths).map(([alias, [target]]) => [`^${alias}$`, join(__dirname, target)]),
);

module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { ...swcrc, jsc: { ...swcrc.jsc, baseUrl: undefined, paths: undefined }, module: { type: 'commonjs' }, swcrc: false }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper,
};
