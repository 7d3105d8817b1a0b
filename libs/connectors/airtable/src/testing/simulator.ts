/**
 * A simulator of the Airtable Web API (https://airtable.com/developers/web/api/introduction): a real HTTP
 * server on loopback that the connector reaches through `AIRTABLE_API_URL`. It keeps bases in memory and
 * answers the endpoints the connector uses (records, metadata, webhooks: see the handler files for the page
 * each follows), with Airtable's authentication, scopes, error bodies (`{ error: { type, message } }`,
 * https://airtable.com/developers/web/api/errors), rate limits (`simulator-limits.ts`) and the OAuth token
 * endpoint (`simulator-oauth.ts`; the connector's `AIRTABLE_OAUTH_URL` points at the same server). `outside`
 * writes as a person in Airtable would: no rate limit, webhook payloads with source `client`.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { findTable, type SimBase, type SimTable, simId } from './simulator-model';
import { baseSchema, createField, createTable, listBases } from './simulator-meta';
import {
  type Committed,
  createRecords,
  deleteRecords,
  getRecord,
  listRecords,
  type RecordIterator,
  type RecordWorld,
  updateRecords,
} from './simulator-records';
import { budgetBase, RateLimits } from './simulator-limits';
import { type OAuthIntegration, OAuthError, OAuthGrants, type OAuthTokens } from './simulator-oauth';
import { authorizePage, type OAuthPerson } from './simulator-consent';
import { SimError } from './simulator-values';
import {
  createWebhook,
  deleteWebhook,
  listPayloads,
  listWebhooks,
  recordPayload,
  refreshWebhook,
} from './simulator-webhooks';

/** Scopes of https://airtable.com/developers/web/api/scopes that the connector needs. */
export const AIRTABLE_SCOPES = [
  'data.records:read',
  'data.records:write',
  'schema.bases:read',
  'schema.bases:write',
  'webhook:manage',
];

export interface SimulatorOptions {
  perBasePerSecond?: number;
  perTokenPerSecond?: number;
  penaltyMs?: number;
  /** `list bases` page size (Airtable's is large; tests make it small to see paging). */
  basesPageSize?: number;
}

interface TokenGrant {
  userId: string;
  scopes: string[];
  /** OAuth access tokens report their scopes in whoami; personal access tokens do not. */
  oauth: boolean;
  /** When an OAuth access token stops working (the simulator's clock). */
  expiresAt?: number;
}

type Route = (request: Routed) => unknown;

interface Routed {
  method: string;
  parts: string[];
  query: URLSearchParams;
  body: unknown;
  token: TokenGrant;
}

export class AirtableSimulator {
  readonly bases: SimBase[] = [];
  /** Requests answered, and how many of them were 429s. */
  readonly stats = { requests: 0, rateLimited: 0 };
  /** When set to an array, every request's arrival (ms, `performance.now()`), method and path are pushed to it. */
  trace: { at: number; method: string; path: string }[] | null = null;
  private readonly tokens = new Map<string, TokenGrant>();
  private readonly limits: RateLimits;
  private readonly iterators = new Map<string, RecordIterator>();
  private clockOffset = 0;
  /** The OAuth endpoints' integrations, codes and refresh tokens; `oauth.refreshes` counts refresh grants. */
  readonly oauth = new OAuthGrants(
    (token, grant, expiresAt) => this.tokens.set(token, { ...grant, oauth: true, expiresAt }),
    () => this.now(),
  );
  private server: http.Server | null = null;
  url = '';

  private constructor(private readonly options: Required<SimulatorOptions>) {
    this.limits = new RateLimits(options);
  }

  static async start(options: SimulatorOptions = {}): Promise<AirtableSimulator> {
    const simulator = new AirtableSimulator({
      perBasePerSecond: options.perBasePerSecond ?? 5,
      perTokenPerSecond: options.perTokenPerSecond ?? 50,
      penaltyMs: options.penaltyMs ?? 30_000,
      basesPageSize: options.basesPageSize ?? 1000,
    });
    const server = http.createServer((req, res) => void simulator.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    simulator.server = server;
    simulator.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return simulator;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The simulator's clock (webhook expiry, payload retention, record times): real time plus `advanceClock`. */
  now(): number {
    return Date.now() + this.clockOffset;
  }

  advanceClock(ms: number): void {
    this.clockOffset += ms;
  }

  addToken(token: string, grant: Partial<TokenGrant> = {}): void {
    this.tokens.set(token, {
      userId: grant.userId ?? simId('usr'),
      scopes: grant.scopes ?? AIRTABLE_SCOPES,
      oauth: grant.oauth ?? false,
    });
  }

  /**
   * The person who signs in on the authorize page (every base of the simulator is theirs), and whether they
   * grant access when the consent page is answered without a browser.
   */
  readonly person: OAuthPerson = { userId: simId('usr'), name: 'Sim Person' };

  /** Registers an OAuth integration (client id, secret or none, redirect URIs, scopes; default all five). */
  registerIntegration(integration: Omit<OAuthIntegration, 'scopes'> & { scopes?: string[] }): void {
    this.oauth.register({ ...integration, scopes: integration.scopes ?? AIRTABLE_SCOPES });
  }

  /**
   * The tokens a finished browser sign-in ends with, without the browser (registers a public integration
   * `clientId` when there is none).
   */
  signIn(clientId: string, scopes: string[] = AIRTABLE_SCOPES): OAuthTokens {
    if (!this.oauth.integration(clientId)) this.registerIntegration({ clientId, redirectUris: [] });
    return this.oauth.issue({ clientId, userId: this.person.userId, scopes });
  }

  revokeToken(token: string): void {
    this.tokens.delete(token);
  }

  addBase(name: string): SimBase {
    const base: SimBase = { id: simId('app'), name, tables: [], webhooks: new Map(), transaction: 0 };
    this.bases.push(base);
    return base;
  }

  /** Creates a table as `POST .../tables` would (same validation), without a request. */
  addTable(
    base: SimBase,
    name: string,
    fields: { name: string; type: string; options?: Record<string, unknown> }[],
  ): SimTable {
    const created = createTable(base, { name, fields });
    return findTable(base, created.id)!;
  }

  /** Writes as a person in Airtable: the same checks, no rate limit, payloads with source `client`. */
  readonly outside = {
    insert: (base: SimBase, table: string, fields: Record<string, unknown>): string => {
      const result = createRecords(this.world('client'), base, this.table(base, table), {
        records: [{ fields }],
        typecast: true,
      });
      return (result as { records: { id: string }[] }).records[0]!.id;
    },
    update: (base: SimBase, table: string, id: string, fields: Record<string, unknown>): void => {
      updateRecords(
        this.world('client'),
        base,
        this.table(base, table),
        { records: [{ id, fields }], typecast: true },
        false,
      );
    },
    delete: (base: SimBase, table: string, id: string): void => {
      deleteRecords(
        this.world('client'),
        base,
        this.table(base, table),
        new URLSearchParams([['records[]', id]]),
      );
    },
  };

  private world(source: 'publicApi' | 'client'): RecordWorld {
    return {
      now: () => this.now(),
      iterators: this.iterators,
      linkExists: (base, tableId, recordId) =>
        base.tables.find((table) => table.id === tableId)?.records.has(recordId) ?? false,
      committed: (base: SimBase, table: SimTable, change: Committed) =>
        recordPayload(base, table, change, source, this.now()),
    };
  }

  private table(base: SimBase, idOrName: string): SimTable {
    const table = findTable(base, decodeURIComponent(idOrName));
    if (!table)
      throw new SimError(404, 'TABLE_NOT_FOUND', `Could not find table ${idOrName} in base ${base.id}`);
    return table;
  }

  private base(id: string, token: TokenGrant, scope: string): SimBase {
    requireScope(token, scope);
    const base = this.bases.find((candidate) => candidate.id === id);
    if (!base) throw notPermitted();
    return base;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.stats.requests += 1;
    try {
      const url = new URL(req.url ?? '/', 'http://simulator');
      this.trace?.push({ at: performance.now(), method: req.method ?? 'GET', path: url.pathname });
      if (url.pathname === '/oauth2/v1/token' && req.method === 'POST')
        return await this.tokenEndpoint(req, res);
      if (url.pathname === '/oauth2/v1/authorize')
        return await authorizePage(req, res, url.searchParams, this.oauth, this.person);
      const token = this.authenticate(req);
      const parts = url.pathname.split('/').filter((part) => part !== '');
      this.limits.take(req.headers.authorization!, budgetBase(parts));
      const body = await readJson(req);
      const result = this.route({ method: req.method ?? 'GET', parts, query: url.searchParams, body, token });
      if (result === undefined) {
        res.writeHead(204).end();
        return;
      }
      send(res, 200, result);
    } catch (error) {
      if (error instanceof SimError) {
        if (error.status === 429) this.stats.rateLimited += 1;
        send(res, error.status, { error: { type: error.type, message: error.message } });
      } else {
        send(res, 500, { error: { type: 'SERVER_ERROR', message: 'The simulator failed' } });
      }
    }
  }

  /** https://airtable.com/developers/web/api/authentication: `Authorization: Bearer <token>`. */
  private authenticate(req: IncomingMessage): TokenGrant {
    const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const grant = match ? this.tokens.get(match[1]!) : undefined;
    if (!grant || (grant.expiresAt !== undefined && grant.expiresAt <= this.now())) {
      throw new SimError(401, 'AUTHENTICATION_REQUIRED', 'Authentication required');
    }
    return grant;
  }

  /**
   * `POST /oauth2/v1/token` (https://airtable.com/developers/web/api/oauth-reference, "Token creation
   * request" and "Token expiry & refresh tokens"): `simulator-oauth.ts`.
   */
  private async tokenEndpoint(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    try {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      send(res, 200, this.oauth.token(form, req.headers.authorization));
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      send(res, error.status, { error: error.error, error_description: error.description });
    }
  }

  private route(request: Routed): unknown {
    const { method, parts } = request;
    for (const [pattern, verb, handler] of this.routes) {
      if (
        verb === method &&
        pattern.length === parts.length &&
        pattern.every((part, i) => part === '*' || part === parts[i])
      ) {
        return handler(request);
      }
    }
    throw new SimError(404, 'NOT_FOUND', 'Could not find what you are looking for');
  }

  private readonly routes: [string[], string, Route][] = [
    [
      ['v0', 'meta', 'whoami'],
      'GET',
      ({ token }) => ({ id: token.userId, ...(token.oauth ? { scopes: token.scopes } : {}) }),
    ],
    [
      ['v0', 'meta', 'bases'],
      'GET',
      ({ query, token }) => {
        requireScope(token, 'schema.bases:read');
        return listBases(this.bases, query, this.options.basesPageSize);
      },
    ],
    [
      ['v0', 'meta', 'bases', '*', 'tables'],
      'GET',
      ({ parts, token }) => baseSchema(this.base(parts[3]!, token, 'schema.bases:read')),
    ],
    [
      ['v0', 'meta', 'bases', '*', 'tables'],
      'POST',
      ({ parts, token, body }) =>
        createTable(this.base(parts[3]!, token, 'schema.bases:write'), body as never),
    ],
    [
      ['v0', 'meta', 'bases', '*', 'tables', '*', 'fields'],
      'POST',
      ({ parts, token, body }) => {
        const base = this.base(parts[3]!, token, 'schema.bases:write');
        return createField(base, this.table(base, parts[5]!), body as never);
      },
    ],
    [
      ['v0', 'bases', '*', 'webhooks'],
      'POST',
      ({ parts, token, body }) =>
        createWebhook(this.base(parts[2]!, token, 'webhook:manage'), body as never, this.now()),
    ],
    [
      ['v0', 'bases', '*', 'webhooks'],
      'GET',
      ({ parts, token }) => listWebhooks(this.base(parts[2]!, token, 'webhook:manage'), this.now()),
    ],
    [
      ['v0', 'bases', '*', 'webhooks', '*', 'refresh'],
      'POST',
      ({ parts, token }) =>
        refreshWebhook(this.base(parts[2]!, token, 'webhook:manage'), parts[4]!, this.now()),
    ],
    [
      ['v0', 'bases', '*', 'webhooks', '*'],
      'DELETE',
      ({ parts, token }) =>
        deleteWebhook(this.base(parts[2]!, token, 'webhook:manage'), parts[4]!, this.now()),
    ],
    [
      ['v0', 'bases', '*', 'webhooks', '*', 'payloads'],
      'GET',
      ({ parts, token, query }) =>
        listPayloads(this.base(parts[2]!, token, 'webhook:manage'), parts[4]!, query, this.now()),
    ],
    ...this.recordRoutes(),
  ];

  private recordRoutes(): [string[], string, Route][] {
    const read = ({ parts, token }: Routed) =>
      this.table(this.base(parts[1]!, token, 'data.records:read'), parts[2]!);
    const write = ({ parts, token }: Routed): [SimBase, SimTable] => {
      const base = this.base(parts[1]!, token, 'data.records:write');
      return [base, this.table(base, parts[2]!)];
    };
    const api = this.world('publicApi');
    return [
      [['v0', '*', '*'], 'GET', (request) => listRecords(api, read(request), request.query)],
      [['v0', '*', '*', '*'], 'GET', (request) => getRecord(read(request), request.parts[3]!, request.query)],
      [['v0', '*', '*'], 'POST', (request) => createRecords(api, ...write(request), request.body as never)],
      [
        ['v0', '*', '*'],
        'PATCH',
        (request) => updateRecords(api, ...write(request), request.body as never, false),
      ],
      [
        ['v0', '*', '*'],
        'PUT',
        (request) => updateRecords(api, ...write(request), request.body as never, true),
      ],
      [['v0', '*', '*'], 'DELETE', (request) => deleteRecords(api, ...write(request), request.query)],
    ];
  }
}

/** Airtable answers a missing scope and a base the token cannot see alike. */
function notPermitted(): SimError {
  return new SimError(
    403,
    'INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND',
    'Invalid permissions, or the requested model was not found. Check that both your user and your token ' +
      'have the required permissions, and that the model names and/or ids are correct.',
  );
}

function requireScope(token: TokenGrant, scope: string): void {
  if (!token.scopes.includes(scope)) throw notPermitted();
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new SimError(422, 'INVALID_REQUEST_UNKNOWN', 'Invalid request: the body is not valid JSON');
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
