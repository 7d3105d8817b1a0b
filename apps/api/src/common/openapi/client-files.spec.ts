import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { buildClientDocument, CLIENT_GENERATE_COMMAND } from './client-files';

const ROOT = join(__dirname, '..', '..', '..', '..', '..');

/** The typed client's checked-in description and types are what the code describes now. */
describe('libs/client generated files', () => {
  it(`are current (else: ${CLIENT_GENERATE_COMMAND})`, () => {
    // The generator as built into dist/ by the test run's global setup, in check mode.
    const script = join(ROOT, 'dist/apps/api/src/common/openapi/generate-client.js');
    const result = spawnSync(process.execPath, [script, '--check'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, LOG_LEVEL: 'silent' },
    });
    if (result.status !== 0) throw new Error(result.stderr || `the check exited with ${result.status}`);
  }, 120000);

  it('builds the same description every time (the check cannot flap)', async () => {
    expect(await buildClientDocument()).toEqual(await buildClientDocument());
  }, 120000);
});
