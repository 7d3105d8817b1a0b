/**
 * The connection's HTTP client: `HttpClient` from `@lockstep/connectors-http` with Airtable's budgets, its
 * error table and the bearer token. Every request passes the egress policy and waits for the budget of the
 * token and, when it concerns a base, of that base (shared through `ConnectContext.shared`).
 */
import type { ConnectContext, RateRule } from '@lockstep/connectors-core';
import { HttpClient, type HttpResponse, type RequestOptions } from '@lockstep/connectors-http';
import type { AirtableSettings } from './credentials';
import { rateRules } from './credentials';
import { AIRTABLE_ERRORS } from './errors';

export interface AirtableRequest extends Omit<RequestOptions, 'rules'> {
  /** The base the request concerns (its budget is taken too). */
  baseId?: string | null;
}

export interface AirtableApiOptions {
  timeoutMs?: number;
  lookup?: (host: string) => Promise<string[]>;
  /** The clock webhook expiry is judged by (tests: the simulator's); default `Date.now`. */
  now?: () => number;
}

/** What every request helper (`sql.ts`) takes: one call, budgets chosen by base. */
export class AirtableApi {
  readonly client: HttpClient;
  readonly now: () => number;
  private readonly rulesByBase = new Map<string, RateRule[]>();
  /** What the token's budget is keyed by (`rateRules`). */
  private readonly budgetIdentity: string;

  constructor(
    private readonly settings: AirtableSettings,
    context: ConnectContext,
    options: AirtableApiOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    const { auth } = settings;
    this.budgetIdentity = auth.kind === 'token' ? auth.token : auth.signIn.budgetIdentity;
    this.client = new HttpClient({
      baseUrl: settings.apiUrl,
      egress: context.egress,
      shared: context.shared,
      rules: rateRules(this.budgetIdentity, null),
      headers:
        auth.kind === 'token'
          ? () => ({ authorization: `Bearer ${auth.token}` })
          : async () => ({ authorization: `Bearer ${await auth.signIn.accessToken()}` }),
      secrets: () => this.secrets,
      ...(auth.kind === 'signed_in' ? { onUnauthorized: () => auth.signIn.invalidate() } : {}),
      appErrors: AIRTABLE_ERRORS,
      timeoutMs: options.timeoutMs,
      lookup: options.lookup,
    });
  }

  get secrets(): string[] {
    const { auth } = this.settings;
    return auth.kind === 'token' ? [auth.token] : auth.signIn.secrets();
  }

  async request<T>(options: AirtableRequest): Promise<HttpResponse<T>> {
    const { baseId, ...rest } = options;
    return this.client.request<T>({ ...rest, rules: this.rules(baseId ?? null) });
  }

  async get<T>(path: string, options: Omit<AirtableRequest, 'path' | 'method'> = {}): Promise<T> {
    return (await this.request<T>({ ...options, path, method: 'GET' })).data;
  }

  private rules(baseId: string | null): RateRule[] {
    const key = baseId ?? '';
    let rules = this.rulesByBase.get(key);
    if (!rules) {
      rules = rateRules(this.budgetIdentity, baseId);
      this.rulesByBase.set(key, rules);
    }
    return rules;
  }
}
