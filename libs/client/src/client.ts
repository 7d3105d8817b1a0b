import createClient, {
  type Client,
  type ClientPathsWithMethod,
  type HeadersOptions,
  type MaybeOptionalInit,
  mergeHeaders,
  type MethodResponse,
} from 'openapi-fetch';
import { LockstepApiError } from './errors';
import type { paths } from './generated/schema';

type RawClient = Client<paths>;
type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** The init argument: optional when nothing in it is required (no path parameter, no required body). */
type InitArgs<Init> =
  RequiredKeys<NonNullable<Init>> extends never ? [init?: NonNullable<Init>] : [init: NonNullable<Init>];

/**
 * On writes: `Idempotency-Key` (accepted by `POST /sync/syncs`, the sync mappings PUT, `POST
 * /live-export/live-exports`).
 */
export interface WriteOptions {
  idempotencyKey?: string;
}

/**
 * A successful answer: the parsed body and the response (for `ETag`, `Idempotent-Replayed`, `RateLimit-*`).
 */
export interface LockstepResult<T> {
  data: T;
  response: Response;
}

/**
 * One HTTP method over the API's paths, typed from the OpenAPI description; throws `LockstepApiError` unless
 * 2xx.
 */
export type LockstepMethod<M extends Method, Extra = object> = <
  P extends ClientPathsWithMethod<RawClient, M>,
>(
  url: P,
  ...init: InitArgs<MaybeOptionalInit<paths[P], M> & Extra>
) => Promise<LockstepResult<MethodResponse<RawClient, M, P>>>;

/** A GET path whose answer is a page `{data, has_more, next_cursor}`. */
export type PaginatedPath = {
  [P in ClientPathsWithMethod<RawClient, 'get'>]: MethodResponse<RawClient, 'get', P> extends {
    data: unknown[];
    next_cursor?: string | null;
  }
    ? P
    : never;
}[ClientPathsWithMethod<RawClient, 'get'>];

/** The item type of a paginated path's `data`. */
export type PageItem<P extends PaginatedPath> =
  MethodResponse<RawClient, 'get', P> extends { data: (infer Item)[] } ? Item : never;

export interface LockstepClient {
  GET: LockstepMethod<'get'>;
  POST: LockstepMethod<'post', WriteOptions>;
  PUT: LockstepMethod<'put', WriteOptions>;
  PATCH: LockstepMethod<'patch', WriteOptions>;
  DELETE: LockstepMethod<'delete'>;
  /**
   * Every item of a cursor-paginated list, page after page: follows `next_cursor` (passed back as `cursor`)
   * while `has_more` is true. Query parameters (`limit`, filters) apply to every page.
   */
  paginate<P extends PaginatedPath>(
    url: P,
    ...init: InitArgs<MaybeOptionalInit<paths[P], 'get'>>
  ): AsyncGenerator<PageItem<P>, void, undefined>;
  /**
   * The underlying openapi-fetch client (answers `{data, error, response}`, never throws on an error status).
   */
  raw: RawClient;
}

export interface LockstepClientOptions {
  /** The install's API root, ending in `/v1` (for example `https://lockstep.example.com/v1`). */
  baseUrl: string;
  /** An API key created in the console; sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** A fetch implementation (default: the global `fetch`). */
  fetch?: (input: Request) => Promise<Response>;
  /** Headers sent with every request. */
  headers?: HeadersOptions;
}

type UntypedInit = {
  params?: { query?: Record<string, unknown> };
  headers?: HeadersOptions;
  idempotencyKey?: string;
};
type Untyped = (url: string, init?: UntypedInit) => Promise<LockstepResult<unknown>>;
type UntypedRequest = (
  method: Method,
  url: string,
  init?: object,
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

function method(raw: RawClient, name: Method): Untyped {
  // The typed signatures live on LockstepClient; inside, one untyped path serves every method.
  const request = raw.request as unknown as UntypedRequest;
  return async (url, init = {}) => {
    const { idempotencyKey, ...rest } = init;
    const headers =
      idempotencyKey === undefined
        ? rest.headers
        : mergeHeaders(rest.headers, { 'Idempotency-Key': idempotencyKey });
    const { data, error, response } = await request(name, url, { ...rest, headers });
    if (!response.ok) throw new LockstepApiError(response, error);
    return { data, response };
  };
}

async function* pages(
  get: Untyped,
  url: string,
  init: UntypedInit = {},
): AsyncGenerator<unknown, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const query = cursor === undefined ? init.params?.query : { ...init.params?.query, cursor };
    const { data } = await get(url, { ...init, params: { ...init.params, query } });
    const page = data as { data: unknown[]; has_more?: boolean; next_cursor?: string | null };
    yield* page.data;
    if (!page.has_more || !page.next_cursor) return;
    cursor = page.next_cursor;
  }
}

/** A client for one Lockstep install and API key. */
export function createLockstepClient(options: LockstepClientOptions): LockstepClient {
  const raw = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    headers: mergeHeaders(options.headers, { Authorization: `Bearer ${options.apiKey}` }),
  });
  const get = method(raw, 'get');
  return {
    GET: get as LockstepMethod<'get'>,
    POST: method(raw, 'post') as LockstepMethod<'post', WriteOptions>,
    PUT: method(raw, 'put') as LockstepMethod<'put', WriteOptions>,
    PATCH: method(raw, 'patch') as LockstepMethod<'patch', WriteOptions>,
    DELETE: method(raw, 'delete') as LockstepMethod<'delete'>,
    paginate: ((url: string, init?: UntypedInit) => pages(get, url, init)) as LockstepClient['paginate'],
    raw,
  };
}
