import { createLockstepClient, type ErrorCode, LockstepApiError } from './index';

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/** A client over a scripted fetch: records each request, answers the next scripted response. */
function scripted(...answers: Answer[]) {
  const requests: Request[] = [];
  const fetch = async (request: Request) => {
    requests.push(request);
    const answer = answers.shift();
    if (!answer) throw new Error(`unexpected request ${request.method} ${request.url}`);
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    return new Response(text, {
      status: answer.status,
      headers: { 'Content-Type': 'application/json', ...answer.headers },
    });
  };
  const client = createLockstepClient({ baseUrl: 'https://lockstep.test/v1', apiKey: 'lsk_test', fetch });
  return { client, requests };
}

const page = (ids: string[], next: string | null) => ({
  data: ids.map((id) => ({ id })),
  has_more: next !== null,
  next_cursor: next,
});

describe('createLockstepClient', () => {
  it('sends the API key and the Idempotency-Key, and answers the parsed body with the response', async () => {
    const { client, requests } = scripted({
      status: 201,
      body: { id: 'sync_1' },
      headers: { 'Idempotent-Replayed': 'false' },
    });
    const body = { name: 'n', left: { connector: 'postgres' }, right: { connector: 'postgres' } };
    const { data, response } = await client.POST('/sync/syncs', { body, idempotencyKey: 'key-1' });
    expect(data.id).toBe('sync_1');
    expect(response.headers.get('Idempotent-Replayed')).toBe('false');
    expect(requests[0]!.url).toBe('https://lockstep.test/v1/sync/syncs');
    expect(requests[0]!.headers.get('Authorization')).toBe('Bearer lsk_test');
    expect(requests[0]!.headers.get('Idempotency-Key')).toBe('key-1');
    expect(await requests[0]!.json()).toEqual(body);
  });

  it('throws LockstepApiError carrying the error object of an error answer', async () => {
    const error = {
      type: 'invalid_request_error',
      code: 'invalid_limit',
      message: 'limit must be 1-100',
      doc_url: 'https://lockstep.test/docs/errors/invalid_limit',
    };
    const { client } = scripted({ status: 400, body: { error } });
    const thrown = await client
      .GET('/sync/syncs', { params: { query: { limit: '0' } } })
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(LockstepApiError);
    expect(thrown).toMatchObject({
      status: 400,
      code: 'invalid_limit',
      type: 'invalid_request_error',
      error,
      message: 'invalid_limit: limit must be 1-100',
    });
    expect(LockstepApiError.is(thrown, 'invalid_limit')).toBe(true);
    expect(LockstepApiError.is(thrown, 'not_found')).toBe(false);
  });

  it('turns an answer without the API error body (a proxy page) into internal_error with the status', async () => {
    const { client } = scripted({ status: 502, body: '<html>Bad Gateway</html>' });
    const thrown = (await client.GET('/sync/connectors').catch((e: unknown) => e)) as LockstepApiError;
    expect(thrown).toMatchObject({ status: 502, code: 'internal_error', type: 'api_error' });
    expect(thrown.message).toContain('Bad Gateway');
  });
});

describe('paginate', () => {
  it('follows next_cursor while has_more, keeping the other query parameters', async () => {
    const { client, requests } = scripted(
      { status: 200, body: page(['iss_1', 'iss_2'], 'c1') },
      { status: 200, body: page(['iss_3', 'iss_4'], 'c2') },
      { status: 200, body: page(['iss_5'], null) },
    );
    const ids: string[] = [];
    for await (const issue of client.paginate('/sync/issues', {
      params: { query: { sync: 'sync_1', limit: '2' } },
    }))
      ids.push(issue.id);
    expect(ids).toEqual(['iss_1', 'iss_2', 'iss_3', 'iss_4', 'iss_5']);
    const queries = requests.map((request) => Object.fromEntries(new URL(request.url).searchParams));
    expect(queries).toEqual([
      { sync: 'sync_1', limit: '2' },
      { sync: 'sync_1', limit: '2', cursor: 'c1' },
      { sync: 'sync_1', limit: '2', cursor: 'c2' },
    ]);
  });

  it('stops at a page without a cursor even when has_more is true (a capped search)', async () => {
    const { client, requests } = scripted({
      status: 200,
      body: { data: [{ id: 'rec_1' }], has_more: true, next_cursor: null },
    });
    const found = [];
    for await (const hit of client.paginate('/sync/records', {
      params: { query: { sync: 'sync_1', query: 'x' } },
    }))
      found.push(hit);
    expect(found).toHaveLength(1);
    expect(requests).toHaveLength(1);
  });

  it('stops with the error of a failing page', async () => {
    const error = {
      type: 'invalid_request_error',
      code: 'invalid_cursor',
      message: 'bad cursor',
      doc_url: 'https://lockstep.test/docs/errors/invalid_cursor',
    };
    const { client } = scripted(
      { status: 200, body: page(['sync_1'], 'c1') },
      { status: 400, body: { error } },
    );
    const ids: string[] = [];
    const iterate = async () => {
      for await (const sync of client.paginate('/sync/syncs')) ids.push(sync.id);
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'invalid_cursor' });
    expect(ids).toEqual(['sync_1']);
  });
});

/** Compile-time checks (`npm run typecheck`): the types come from the OpenAPI description, not `any`. */
export function typeChecks(client: ReturnType<typeof createLockstepClient>): void {
  // @ts-expect-error: not a path of the API
  void client.GET('/sync/nothing');
  // @ts-expect-error: the path needs its `id`
  void client.GET('/sync/syncs/{id}');
  // @ts-expect-error: only paginated lists can be iterated
  void client.paginate('/sync/syncs/{id}/status', { params: { path: { id: 'sync_1' } } });
  // @ts-expect-error: not an error code of the API
  const code: ErrorCode = 'no_such_code';
  void code;
  void client.GET('/sync/syncs/{id}', { params: { path: { id: 'sync_1' } } }).then(({ data }) => {
    // @ts-expect-error: status is the union of the sync states
    const status: number = data.status;
    void status;
  });
}
