import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, type TestApp } from './support/test-app';

describe('OpenAPI 3.1 description', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({}, []); // the real app only, without test-only endpoints
  });
  afterAll(() => t.close());

  it('is served without a key at /v1/openapi.json and passes `redocly lint` with no errors', async () => {
    const res = await t.http().get('/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: 'http://lockstep.test/v1' }]);
    expect(Object.keys(doc.paths)).toContain('/sync/connectors');
    const op = doc.paths['/sync/connectors'].get;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '429', '500']));
    expect(op.responses['429'].headers['Retry-After']).toBeDefined();
    expect(op.responses['200'].headers['RateLimit-Remaining']).toBeDefined();
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toContain('idempotency_key_in_use');
    expect(doc.paths['/test-probe/read']).toBeUndefined();
    // The initial sync's per-pair progress is described field by field (the worker writes it; the status shows it).
    const pairProgress = doc.components.schemas.InitialSyncPairProgressDto;
    expect(Object.keys(pairProgress.properties)).toEqual(expect.arrayContaining(['table_pair', 'stage', 'preview', 'processed', 'created', 'updated', 'failed', 'resumed', 'unlinked']));
    expect(pairProgress.required).not.toContain('unlinked');

    const dir = join(__dirname, '..', '..', '..', 'tmp');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const lint = spawnSync('npx', ['redocly', 'lint', file, '--format', 'stylish'], { encoding: 'utf8', env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    if (lint.status !== 0) process.stderr.write(lint.stdout + lint.stderr);
    expect(lint.status).toBe(0);
  }, 120000);
});
