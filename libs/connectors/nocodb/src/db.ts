/**
 * The connection's HTTP client: `HttpClient` from `@lockstep/connectors-http` with the token's budget, NocoDB's
 * error table and the `xc-token` header. Every request passes the egress policy (the server's address is the
 * side's `baseUrl`) and waits for the budget, shared through `ConnectContext.shared`.
 */
import type { ConnectContext } from '@lockstep/connectors-core';
import { HttpClient, type HttpResponse, type RequestOptions } from '@lockstep/connectors-http';
import { type NocodbSettings, rateRules } from './credentials';
import { NOCODB_ERRORS } from './errors';

export interface NocodbApiOptions {
  timeoutMs?: number;
  lookup?: (host: string) => Promise<string[]>;
}

/** What every request helper (`sql.ts`) takes. */
export class NocodbApi {
  readonly client: HttpClient;

  constructor(
    readonly settings: NocodbSettings,
    context: ConnectContext,
    options: NocodbApiOptions = {},
  ) {
    const rules = rateRules(settings);
    this.client = new HttpClient({
      baseUrl: settings.baseUrl,
      egress: context.egress,
      shared: context.shared,
      rules,
      headers: () => ({ 'xc-token': settings.token }),
      secrets: () => [settings.token],
      appErrors: NOCODB_ERRORS,
      timeoutMs: options.timeoutMs,
      lookup: options.lookup,
    });
  }

  get secrets(): string[] {
    return [this.settings.token];
  }

  request<T>(options: RequestOptions): Promise<HttpResponse<T>> {
    return this.client.request<T>(options);
  }

  async get<T>(path: string, options: Omit<RequestOptions, 'path' | 'method'> = {}): Promise<T> {
    return (await this.client.request<T>({ ...options, path, method: 'GET' })).data;
  }
}
