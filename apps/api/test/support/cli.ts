import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_MASTER_KEY } from './test-app';

const root = join(__dirname, '..', '..', '..', '..');

/** Runs the built operator CLI the way `npm run -s lockstep -- ...` does, against the test database. */
export function cli(...args: string[]) {
  return cliWithEnv({}, ...args);
}

/** `cli` with extra environment (for example another master key). */
export function cliWithEnv(env: Record<string, string>, ...args: string[]) {
  const home = mkdtempSync(join(tmpdir(), 'lockstep-cli-'));
  return cliWithExactEnv(
    { ...process.env, LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY, LOCKSTEP_HOME: home, ...env },
    ...args,
  );
}

/** Runs the built operator CLI with exactly this environment (nothing of the test's own). */
export function cliWithExactEnv(env: NodeJS.ProcessEnv, ...args: string[]) {
  const result = spawnSync(process.execPath, [join(root, 'dist/apps/api/src/cli/main.js'), ...args], {
    encoding: 'utf8',
    env,
  });
  return {
    code: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    json: () => JSON.parse(result.stdout),
  };
}
