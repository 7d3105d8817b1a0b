/**
 * A side signed in with Airtable (`oauth.ts`): the access token renewed after it expires, the renewed tokens
 * saved through `ConnectContext.credentialStore` and used by the next connection (a worker restarted) without
 * another renewal, the spent refresh token refused, and two workers (two Redis connections, one lock) that
 * meet an expired token at once renewing it once. Needs the Redis of the test services (127.0.0.1:6379).
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import {
  type ConnectContext,
  type Connection,
  type CredentialStore,
  type Credentials,
  isConnectorError,
} from '@lockstep/connectors-core';
import { HttpClient, OAUTH_ERRORS, RedisCoordination } from '@lockstep/connectors-http';
import { airtableConnector } from './declaration';
import { AirtableSimulator } from './testing/simulator';
import type { SimBase } from './testing/simulator-model';

const CLIENT_ID = 'lockstep-airtable-test';
const CLIENT_SECRET = 'test-secret-0123456789';

/** The side's row: what the service's `SideCredentialStore` does, in memory (compare-and-set included). */
class RowStore implements CredentialStore {
  readonly key = `sync:${randomUUID()}:left`;
  saves = 0;
  constructor(public row: Credentials) {}
  async load(): Promise<Credentials> {
    return { ...this.row };
  }
  async save(credentials: Credentials): Promise<boolean> {
    this.saves += 1;
    this.row = { ...credentials };
    return true;
  }
}

let simulator: AirtableSimulator;
let base: SimBase;
const redis: Redis[] = [];
const opened: Connection[] = [];

beforeAll(async () => {
  simulator = await AirtableSimulator.start({ perBasePerSecond: 1000, perTokenPerSecond: 1000 });
  simulator.registerIntegration({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [] });
  base = simulator.addBase('Sales');
  simulator.addTable(base, 'Tasks', [{ name: 'Name', type: 'singleLineText' }]);
});

afterAll(async () => {
  await Promise.all(opened.map((connection) => connection.close()));
  for (const connection of redis) connection.disconnect();
  await simulator.close();
});

/** The credentials the console stores after a sign-in (`exchangeCode` in the API). */
function signedIn(): Credentials {
  const tokens = simulator.signIn(CLIENT_ID);
  return {
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token,
    token_type: 'bearer',
    expires_at: new Date(Date.now() + tokens.expires_in * 1000).toISOString(),
    scope: tokens.scope,
  };
}

/** One worker process: its own Redis connection (same prefix: the service's shared locks and budgets). */
function worker(prefix: string, store: CredentialStore | undefined, extra: Partial<ConnectContext> = {}) {
  const connection = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: false });
  redis.push(connection);
  const context: ConnectContext = {
    egress: { allowPrivate: true, allowLoopback: true },
    settings: { AIRTABLE_API_URL: simulator.url, AIRTABLE_OAUTH_URL: simulator.url },
    shared: new RedisCoordination(connection, prefix),
    oauthClient: {
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      tokenEndpointAuthMethod: 'client_secret_basic',
    },
    ...(store ? { credentialStore: store } : {}),
    ...extra,
  };
  return async (credentials: Credentials): Promise<Connection> => {
    const opening = await airtableConnector.connect(credentials, base.id, context);
    opened.push(opening);
    return opening;
  };
}

/** A refresh grant sent by hand (public HTTP client, Basic authentication). */
async function refreshBy(refreshToken: string): Promise<unknown> {
  const http = new HttpClient({
    baseUrl: simulator.url,
    egress: { allowPrivate: true, allowLoopback: true },
    appErrors: OAUTH_ERRORS,
    retry: { attempts: 1 },
  });
  const basic = Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64');
  return http.request({
    method: 'POST',
    path: '/oauth2/v1/token',
    form: { grant_type: 'refresh_token', refresh_token: refreshToken },
    headers: { authorization: `Basic ${basic}` },
  });
}

describe('a side signed in with Airtable', () => {
  it('renews an expired access token, saves the renewed tokens, and a restarted worker uses them', async () => {
    const store = new RowStore(signedIn());
    const first = store.row;
    const prefix = `lockstep-test-${randomUUID()}`;
    const connection = await worker(prefix, store)(first);
    expect((await connection.listTables()).map((table) => table.name)).toContain('Tasks');
    simulator.advanceClock(61 * 60_000);
    const refreshes = simulator.oauth.refreshes;
    // A read the schema cache cannot answer: the records.
    expect(await connection.readPage('Tasks', { after: null, pageSize: 10 })).toMatchObject({ next: null });
    expect(simulator.oauth.refreshes).toBe(refreshes + 1);
    expect(store.saves).toBe(1);
    expect(store.row['access_token']).not.toBe(first['access_token']);
    expect(store.row['refresh_token']).not.toBe(first['refresh_token']);
    expect(Date.parse(store.row['expires_at']!)).toBeGreaterThan(Date.now() + 50 * 60_000);
    await connection.close();

    // The worker restarts: it opens the side with what is stored now, and renews nothing.
    const restarted = await worker(prefix, store)(await store.load());
    await restarted.checkCredentials();
    expect(simulator.oauth.refreshes).toBe(refreshes + 1);
    // The refresh token the first renewal spent is refused (Airtable's refresh tokens work once).
    const reused = await refreshBy(first['refresh_token']!).catch((error: unknown) => error);
    expect(isConnectorError(reused) && [reused.kind, reused.appCode]).toEqual(['auth', 'invalid_grant']);
  });

  it('two workers meeting an expired token at once renew it once, and both go on', async () => {
    const store = new RowStore(signedIn());
    const prefix = `lockstep-test-${randomUUID()}`;
    const credentials = store.row;
    const [one, two] = await Promise.all([
      worker(prefix, store)(credentials),
      worker(prefix, store)(credentials),
    ]);
    await Promise.all([one.listBases(), two.listBases()]);
    simulator.advanceClock(61 * 60_000);
    const refreshes = simulator.oauth.refreshes;
    const results = await Promise.all([one.listBases(), two.listBases(), one.listBases(), two.listBases()]);
    expect(results.every((bases) => bases.some((candidate) => candidate.id === base.id))).toBe(true);
    expect(simulator.oauth.refreshes).toBe(refreshes + 1);
    expect(store.saves).toBe(1);
  });

  it('an expired sign-in without the operator client registration is auth, saying what is missing', async () => {
    const store = new RowStore(signedIn());
    const connection = await worker(`lockstep-test-${randomUUID()}`, store, { oauthClient: undefined })(
      store.row,
    );
    simulator.advanceClock(61 * 60_000);
    const error = await connection.listBases().catch((caught: unknown) => caught);
    expect(isConnectorError(error) && error.kind).toBe('auth');
    expect((error as Error).message).toContain('OAUTH_CLIENTS');
    expect((error as Error).message).not.toContain(store.row['refresh_token']!);
  });

  it('an access token without a needed scope is auth naming the scope', async () => {
    const tokens = simulator.signIn(CLIENT_ID, ['data.records:read', 'schema.bases:read']);
    const connection = await worker(
      `lockstep-test-${randomUUID()}`,
      undefined,
    )({
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const error = await connection.checkCredentials().catch((caught: unknown) => caught);
    expect(isConnectorError(error) && error.kind).toBe('auth');
    expect((error as Error).message).toContain('data.records:write');
  });
});
