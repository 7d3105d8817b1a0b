/**
 * The one HTTP client of the app connectors. Every request: waits for the rate budget of its keys (shared
 * through `ConnectContext.shared`), passes the egress policy and connects to the checked address, carries a
 * deadline and `User-Agent: Lockstep/<version>`, and is retried as `retry.ts` says. A 429 pauses its budget
 * keys for everyone. What stays failing is a `ConnectorError` (`errors.ts`); no header, token or body is
 * logged, and messages pass through `redactSecrets()` with the connection's secrets.
 */
import {
  assertHostAllowed,
  type ConnectorCoordination,
  ConnectorError,
  type EgressPolicy,
  type RateRule,
} from '@lockstep/connectors-core';
import { localCoordination, requestWindows, sleep, waitForBudget } from './budget';
import { type AppErrorTable, networkKind, translateHttpFailure, translateThrown } from './errors';
import {
  backoffDelay,
  DEFAULT_RETRY,
  isIdempotent,
  isRetryableStatus,
  retryAfterMs,
  type RetryPolicy,
} from './retry';
import { exchange, type ExchangeResponse } from './transport';

export const LOCKSTEP_VERSION = '0.1.0';

export interface HttpClientOptions {
  /** The app's API origin (and path prefix): the connector's base-URL setting (`AIRTABLE_API_URL`). */
  baseUrl: string;
  egress: EgressPolicy;
  /** `ConnectContext.shared`; without it, budgets and locks are this process' own. */
  shared?: ConnectorCoordination;
  /** The budget every request takes from, unless a request names its own. */
  rules?: readonly RateRule[];
  /**
   * Headers of every request (the `Authorization` header); called per attempt, so a refreshed token is used.
   */
  headers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** Values that must never appear in a message (the token, the client secret). */
  secrets?: () => Iterable<string>;
  /** The app's own error codes, looked up before the status. */
  appErrors?: AppErrorTable;
  /**
   * Called on a 401: true when it refreshed the credentials (`TokenKeeper.invalidate()`), and the request is
   * sent once more (an app that answers 401 did not act on the request).
   */
  onUnauthorized?: () => Promise<boolean>;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  maxBodyBytes?: number;
  /** Resolves a host name (tests); default: the system resolver. */
  lookup?: (host: string) => Promise<string[]>;
}

export interface RequestOptions {
  method?: string;
  /** Path below `baseUrl` (`/v0/meta/bases`). */
  path: string;
  query?: Record<string, string | number | boolean | readonly string[] | null | undefined>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded` (an OAuth token endpoint), instead of `json`. */
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /**
   * Overrides the method's default (GET, HEAD, PUT, DELETE are idempotent): a create carrying a service id.
   */
  idempotent?: boolean;
  /** The budget of this request instead of the client's. */
  rules?: readonly RateRule[];
  /** What the call is doing (`Reading records of "Tasks"`): prefixes error messages. */
  context?: string;
  signal?: AbortSignal;
}

export interface HttpResponse<T> {
  status: number;
  headers: ExchangeResponse['headers'];
  /** The body parsed as JSON when it is JSON, else its text ('' when empty). */
  data: T;
}

/** Counters for benchmarks and tests: requests sent and 429s received by this client. */
export interface ClientStats {
  requests: number;
  rateLimited: number;
  retries: number;
}

export class HttpClient {
  readonly stats: ClientStats = { requests: 0, rateLimited: 0, retries: 0 };
  private readonly shared: ConnectorCoordination;
  private readonly retry: RetryPolicy;
  private readonly base: URL;

  constructor(private readonly options: HttpClientOptions) {
    this.shared = options.shared ?? localCoordination();
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.base = new URL(options.baseUrl);
    if (this.base.protocol !== 'https:' && this.base.protocol !== 'http:') {
      throw new ConnectorError('unsupported', `The API URL must be http or https, not ${this.base.protocol}`);
    }
  }

  async get<T>(path: string, options: Omit<RequestOptions, 'path' | 'method'> = {}): Promise<T> {
    return (await this.request<T>({ ...options, method: 'GET', path })).data;
  }

  async request<T>(options: RequestOptions): Promise<HttpResponse<T>> {
    const method = (options.method ?? 'GET').toUpperCase();
    const rules = options.rules ?? this.options.rules ?? [];
    const url = this.url(options);
    const idempotent = isIdempotent(method, options.idempotent);
    let failures = 0;
    let limited = 0;
    let reauthorized = false;
    for (;;) {
      // The rules' windows (this process' requests of a key, each counted until `ms` after its answer), then
      // the shared rate budget: the request leaves when both allow it.
      const leave = await requestWindows().enter(rules, options.signal);
      try {
        await this.waitForBudget(rules, options.signal);
      } catch (error) {
        leave();
        throw error;
      }
      let response: ExchangeResponse;
      try {
        response = await this.send(url, method, options);
      } catch (error) {
        leave();
        failures += 1;
        if (!mayRetry(error) || !idempotent || failures >= this.retry.attempts) {
          throw translateThrown(error, this.translateOptions(options));
        }
        await this.backoff(failures, undefined, options.signal);
        continue;
      }
      leave();
      const { status } = response;
      if (status >= 200 && status < 300)
        return { status, headers: response.headers, data: parseBody(response) as T };
      const after = retryAfterMs(response.headers['retry-after']);
      if (status === 429) {
        this.stats.rateLimited += 1;
        limited += 1;
        await this.pause(rules, after);
        if (limited < this.retry.rateLimitedAttempts) {
          // With budget keys the next budget wait covers the pause; without, this request waits alone.
          if (rules.length === 0) await sleep(after ?? 1000, options.signal);
          this.stats.retries += 1;
          continue;
        }
      } else if (
        status === 401 &&
        !reauthorized &&
        this.options.onUnauthorized &&
        (await this.options.onUnauthorized())
      ) {
        reauthorized = true;
        continue;
      } else if (isRetryableStatus(status) && idempotent && failures + 1 < this.retry.attempts) {
        failures += 1;
        await this.backoff(failures, after, options.signal);
        continue;
      }
      const body = parseBody(response);
      throw translateHttpFailure(
        { status, body, retryAfterSeconds: after === undefined ? undefined : Math.ceil(after / 1000) },
        this.translateOptions(options),
      );
    }
  }

  private async send(url: URL, method: string, options: RequestOptions): Promise<ExchangeResponse> {
    const [address] = await assertHostAllowed(url.hostname, this.options.egress, {
      lookup: this.options.lookup,
    });
    const [body, type] = encodeBody(options);
    const headers: Record<string, string> = {
      'user-agent': `Lockstep/${LOCKSTEP_VERSION}`,
      accept: 'application/json',
      ...(type ? { 'content-type': type } : {}),
      ...(await this.options.headers?.()),
      ...options.headers,
    };
    this.stats.requests += 1;
    return exchange({
      url,
      method,
      headers,
      body,
      address: address!,
      timeoutMs: this.options.timeoutMs ?? 30_000,
      maxBodyBytes: this.options.maxBodyBytes ?? 64 * 1024 * 1024,
      signal: options.signal,
    });
  }

  /** A budget that cannot be read (Redis down) fails the request as `transient`: never send past it. */
  private async waitForBudget(rules: readonly RateRule[], signal?: AbortSignal): Promise<void> {
    try {
      await waitForBudget(this.shared.budget, rules, signal);
    } catch (error) {
      if (error instanceof ConnectorError || signal?.aborted) throw error;
      throw new ConnectorError(
        'transient',
        'The shared rate budget cannot be read (Redis unavailable); try again',
        {
          appCode: 'BUDGET_UNAVAILABLE',
        },
      );
    }
  }

  /** Every key of the request waits: the app did not say which of its budgets ran out. */
  private async pause(rules: readonly RateRule[], afterMs: number | undefined): Promise<void> {
    for (const rule of rules) {
      const ms = afterMs ?? rule.penaltyMs ?? 1000;
      // Best effort: when Redis cannot take the pause, the next budget read fails the request instead.
      await this.shared.budget.pause(rule.key, ms).catch(() => undefined);
    }
  }

  private async backoff(failures: number, afterMs: number | undefined, signal?: AbortSignal): Promise<void> {
    this.stats.retries += 1;
    await sleep(Math.max(backoffDelay(failures, this.retry), afterMs ?? 0), signal);
  }

  private url(options: RequestOptions): URL {
    const url = new URL(this.base.href.replace(/\/$/, '') + options.path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value === null || value === undefined) continue;
      if (Array.isArray(value)) for (const item of value) url.searchParams.append(name, item);
      else url.searchParams.set(name, String(value));
    }
    return url;
  }

  private translateOptions(options: RequestOptions) {
    return {
      context: options.context ?? `${(options.method ?? 'GET').toUpperCase()} ${options.path}`,
      secrets: this.options.secrets?.() ?? [],
      app: this.options.appErrors,
    };
  }
}

/** A failure without an answer that a later attempt may not meet (not an egress refusal, not a huge body). */
function mayRetry(error: unknown): boolean {
  if (error instanceof ConnectorError) return false;
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
  return networkKind(code) === 'transient';
}

function encodeBody(options: RequestOptions): [Buffer | undefined, string | undefined] {
  if (options.form)
    return [Buffer.from(new URLSearchParams(options.form).toString()), 'application/x-www-form-urlencoded'];
  if (options.json !== undefined) return [Buffer.from(JSON.stringify(options.json)), 'application/json'];
  return [undefined, undefined];
}

function parseBody(response: ExchangeResponse): unknown {
  const text = response.body.toString('utf8');
  if (text === '') return '';
  const type = String(response.headers['content-type'] ?? '');
  if (type.includes('json') || /^[[{]/.test(text.trimStart())) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}
