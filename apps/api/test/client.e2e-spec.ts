import type { AddressInfo } from 'node:net';
import {
  createLockstepClient,
  type ErrorCode,
  LockstepApiError,
  type LockstepClient,
} from '@lockstep/client';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The typed client (@lockstep/client) against the real API over HTTP: the generated types, the error
 * mapping, the cursor iteration and the Idempotency-Key option stay true to what the server does.
 */
describe('typed client (libs/client) on syncs', () => {
  let t: TestApp;
  let baseUrl: string;
  let client: LockstepClient;
  let requests: string[];
  // Both sides deferred to a person: a draft sync needs no connected app.
  const syncBody = (name: string) => ({
    name,
    left: { connector: 'postgres' },
    right: { connector: 'postgres' },
  });

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/v1`;
  });
  afterAll(() => t.close());

  beforeEach(async () => {
    const apiKey = await t.key((await t.account()).id, 'readwrite');
    requests = [];
    const counting = (request: Request) => {
      requests.push(`${request.method} ${new URL(request.url).pathname}${new URL(request.url).search}`);
      return fetch(request);
    };
    client = createLockstepClient({ baseUrl, apiKey, fetch: counting });
  });

  it('creates a sync and reads it back, typed', async () => {
    const { data: created, response } = await client.POST('/sync/syncs', { body: syncBody('Typed') });
    expect(response.status).toBe(201);
    expect(created.id).toMatch(/^sync_/);
    const { data: sync } = await client.GET('/sync/syncs/{id}', { params: { path: { id: created.id } } });
    const status: 'draft' | 'active' | 'paused' = sync.status;
    expect(status).toBe('draft');
    expect(sync.pending_actions.map((action) => action.type)).toContain('user_confirmation');
  });

  it('repeats a POST with the same Idempotency-Key: the first answer is replayed, no second sync', async () => {
    const first = await client.POST('/sync/syncs', {
      body: syncBody('Once'),
      idempotencyKey: 'client-e2e-once',
    });
    const again = await client.POST('/sync/syncs', {
      body: syncBody('Once'),
      idempotencyKey: 'client-e2e-once',
    });
    expect(first.response.headers.get('Idempotent-Replayed')).toBe('false');
    expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.data.id).toBe(first.data.id);
    const all = [];
    for await (const sync of client.paginate('/sync/syncs')) all.push(sync.id);
    expect(all).toEqual([first.data.id]);
  });

  it('iterates every sync across pages with paginate, following next_cursor', async () => {
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c', 'd', 'e'])
      ids.unshift((await client.POST('/sync/syncs', { body: syncBody(name) })).data.id);
    requests = [];
    const seen: string[] = [];
    for await (const sync of client.paginate('/sync/syncs', { params: { query: { limit: '2' } } }))
      seen.push(sync.id);
    expect(seen).toEqual(ids); // newest first, each once
    expect(requests).toHaveLength(3);
    expect(requests.slice(1).every((line) => /limit=2/.test(line) && /cursor=/.test(line))).toBe(true);
  });

  it('throws LockstepApiError with the typed code, status and error object', async () => {
    const missing = await client
      .GET('/sync/syncs/{id}', { params: { path: { id: 'sync_00000000000000000000' } } })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(LockstepApiError);
    const error = missing as LockstepApiError;
    const code: ErrorCode = error.code;
    expect({ status: error.status, code, type: error.type }).toEqual({
      status: 404,
      code: 'not_found',
      type: 'invalid_request_error',
    });
    expect(error.error.doc_url).toMatch(/\/docs\/errors\/not_found$/);
    expect(LockstepApiError.is(missing, 'not_found')).toBe(true);

    const anonymous = createLockstepClient({ baseUrl, apiKey: 'lsk_not_a_key' });
    const refused = (await anonymous.GET('/sync/syncs').catch((e: unknown) => e)) as LockstepApiError;
    expect(refused.code).toBe('invalid_api_key');
    expect(refused.error.required_action?.type).toBe('user_api_key');
  });
});
