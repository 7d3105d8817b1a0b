import { bearer, createTestApp, type TestApp } from './support/test-app';

describe('the common error shape (spec 7.1) for bad input and failures', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ MAX_BODY_BYTES: 4096 });
    key = await t.key((await t.account()).id, 'readwrite');
  });
  afterAll(() => t.close());

  const expectError = (
    res: { status: number; body: { error: Record<string, unknown> } },
    status: number,
    code: string,
  ) => {
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, doc_url: `http://lockstep.test/docs/errors/${code}` });
    expect(typeof res.body.error.message).toBe('string');
    expect(typeof res.body.error.type).toBe('string');
  };

  it('answers unknown routes and methods with 404 not_found', async () => {
    expectError(await t.http().get('/v1/no-such-thing').set(bearer(key)), 404, 'not_found');
    expectError(await t.http().get('/nothing-here'), 404, 'not_found');
    expectError(await t.http().delete('/v1/sync/connectors').set(bearer(key)), 404, 'not_found');
  });

  it('names the endpoint meant when a path misses its feature prefix, /v1 or the method', async () => {
    const message = async (method: 'get' | 'post', path: string) => {
      const res = await t.http()[method](path).set(bearer(key));
      expectError(res, 404, 'not_found');
      return res.body.error.message as string;
    };
    expect(await message('get', '/v1/syncs')).toMatch(
      /^No such endpoint: GET \/v1\/syncs\. Did you mean GET \/v1\/sync\/syncs\?/,
    );
    expect(await message('get', '/v1/connectors?limit=5')).toMatch(
      /Did you mean GET \/v1\/sync\/connectors\?/,
    );
    expect(await message('post', '/v1/syncs/sync_abc/pause')).toMatch(
      /Did you mean POST \/v1\/sync\/syncs\/sync_abc\/pause\?/,
    );
    expect(await message('get', '/v1/live-exports')).toMatch(
      /Did you mean GET \/v1\/live-export\/live-exports\?/,
    );
    expect(await message('get', '/sync/syncs')).toMatch(/Did you mean GET \/v1\/sync\/syncs\?/);
    expect(await message('get', '/v1/sync/syncs/sync_abc/validate')).toBe(
      'No such endpoint: GET /v1/sync/syncs/sync_abc/validate. /v1/sync/syncs/sync_abc/validate takes POST.',
    );
    expect(await message('get', '/v1/no-such-thing')).toBe('No such endpoint: GET /v1/no-such-thing.');
  });

  it('answers malformed JSON, a wrong content type and an oversized body with 400 invalid_request', async () => {
    const malformed = await t
      .http()
      .post('/v1/test-probe/write')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send('{"name": ');
    expectError(malformed, 400, 'invalid_request');
    expect(malformed.body.error.message).toMatch(/not valid JSON/);
    const form = await t
      .http()
      .post('/v1/test-probe/write')
      .set(bearer(key))
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send('a=b');
    expectError(form, 400, 'invalid_request');
    expect(form.body.error.message).toMatch(/application\/json/);
    const big = await t
      .http()
      .post('/v1/test-probe/write')
      .set(bearer(key))
      .send({ blob: 'x'.repeat(10000) });
    expectError(big, 400, 'invalid_request');
    expect(big.body.error.details).toEqual({ max_bytes: 4096 });
  });

  it('turns an unexpected failure into a logged 500 internal_error carrying the request id, leaking nothing', async () => {
    const res = await t
      .http()
      .get('/v1/test-probe/boom')
      .set(bearer(key))
      .set('X-Request-Id', 'req-test-123');
    expectError(res, 500, 'internal_error');
    expect(res.body.error).toMatchObject({ type: 'api_error', request_id: 'req-test-123' });
    expect(res.headers['x-request-id']).toBe('req-test-123');
    expect(JSON.stringify(res.body)).not.toContain('hunter2');
  });

  it('serves the error page every doc_url points at', async () => {
    const res = await t.http().get('/docs/errors/idempotency_key_reused');
    expect(res.status).toBe(200);
    expect(res.text).toContain('idempotency_key_reused');
    const all = await t.http().get('/docs/errors');
    expect(all.text).toContain('rate_limit_exceeded');
    expectError(await t.http().get('/docs/errors/no_such_code'), 404, 'not_found');
  });

  it('serves health, the discovery index and metrics without a key', async () => {
    const health = await t.http().get('/healthz');
    expect(health.status).toBe(200);
    // The worker part depends on the workers of other test files (health.e2e-spec.ts tests it).
    expect(health.body.checks).toMatchObject({
      database: 'ok',
      redis: 'ok',
      worker: { status: expect.any(String) },
    });
    for (const path of ['/', '/llms.txt']) {
      const index = await t.http().get(path);
      expect(index.status).toBe(200);
      expect(index.headers['content-type']).toMatch(/text\/plain/);
      expect(index.text).toContain('http://lockstep.test/v1/openapi.json');
      expect(index.text).toContain('/app/settings/api-keys');
    }
    await t.http().get('/v1/test-probe/read').set(bearer(key)).expect(200);
    const metrics = await t.http().get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(
      /lockstep_http_requests_total\{method="GET",route="\/v1\/test-probe\/read",status="200"\} \d+/,
    );
    expect(metrics.text).toContain('lockstep_http_request_duration_seconds_bucket');
    expect(metrics.text).toMatch(/lockstep_queue_jobs\{queue="maintenance",state="waiting"\} \d+/);
  });

  it('lists the connectors a side can use, with their declared credential fields', async () => {
    const res = await t.http().get('/v1/sync/connectors').set(bearer(key));
    expect(res.status).toBe(200);
    expect(res.body.has_more).toBe(false);
    const postgres = res.body.data.find((c: { type: string }) => c.type === 'postgres');
    expect(postgres).toMatchObject({ type: 'postgres', available: true, auth: { method: 'api_key' } });
    expect(postgres.auth.fields[0]).toMatchObject({ id: 'connectionString', optional: false });
    expect(Object.keys(postgres.auth.fields[0]).sort()).toEqual([
      'help',
      'id',
      'label',
      'optional',
      'options',
      'placeholder',
    ]);
    expect(Object.keys(postgres.auth).sort()).toEqual(['fields', 'method']);
    // Airtable: a pasted personal access token (spec 2.6: listed as api_key, the secret flag never sent).
    const airtable = res.body.data.find((c: { type: string }) => c.type === 'airtable');
    expect(airtable).toMatchObject({ type: 'airtable', available: true, auth: { method: 'api_key' } });
    expect(airtable.auth.fields).toEqual([
      {
        id: 'apiKey',
        label: 'Personal access token',
        optional: false,
        placeholder: 'pat...',
        options: null,
        help: { label: expect.any(String), url: 'https://airtable.com/create/tokens' },
      },
    ]);
  });

  it('sends no ETag but the mappings revision: none on lists, errors, discovery, health or the console', async () => {
    const api = ['/v1/sync/connectors', '/v1/sync/syncs', '/v1/sync/syncs/sync_nope', '/v1/no-such-thing'];
    const open = [
      '/v1/openapi.json',
      '/healthz',
      '/llms.txt',
      '/docs/errors',
      '/app/sign-in',
      '/app/assets/console.css',
    ];
    for (const path of [...api, ...open]) {
      const res = await t
        .http()
        .get(path)
        .set(api.includes(path) ? bearer(key) : {});
      expect([path, res.headers['etag']]).toEqual([path, undefined]);
    }
  });
});
