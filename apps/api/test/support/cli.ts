import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_MASTER_KEY } from './test-app';

const root = join(__dirname, '..', '..', '..', '..');

/** Runs the built operator CLI the way `npm run -s lockstep -- ...` does, against the test database. */
export function cli(...args: string[]) {
  return cliWithEnv({ ...process.env, LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY, LOCKSTEP_HOME: mkdtempSync(join(tmpdir(), 'lockstep-cli-')) }, ...args);
}

/** Runs the built operator CLI with exactly this environment. */
export function cliWithEnv(env: NodeJS.ProcessEnv, ...args: string[]) {
  const result = spawnSync(process.execPath, [join(root, 'dist/apps/api/src/cli/main.js'), ...args], { encoding: 'utf8', env });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, json: () => JSON.parse(result.stdout) };
}
