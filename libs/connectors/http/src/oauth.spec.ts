import type Redis from 'ioredis';
import { ConnectorError } from '@lockstep/connectors-core';
import { RedisCoordination } from './budget';
import { HttpClient } from './client';
import { type OAuthToken, TokenKeeper, type TokenStore } from './oauth';
import {
  dropPrefix,
  json,
  type Loopback,
  redisConnection,
  startLoopback,
  uniquePrefix,
} from './test/loopback';

const EGRESS = { allowPrivate: true, allowLoopback: true };

/** The side's stored credentials, shared by every process (the service keeps them encrypted in its store). */
class SharedStore implements TokenStore {
  constructor(public token: OAuthToken) {}
  async load(): Promise<OAuthToken> {
    return { ...this.token };
  }
  async save(token: OAuthToken): Promise<void> {
    this.token = { ...token };
  }
}

const connections: Redis[] = [redisConnection(), redisConnection()];
const prefixes: string[] = [];
let server: Loopback;
let issued = 0;

beforeAll(async () => {
  // The app's token endpoint: a slow refresh, so that concurrent callers overlap with it.
  server = await startLoopback((_req, res, arrival) => {
    const grant = new URLSearchParams(arrival.body);
    const refresh = grant.get('refresh_token') ?? '';
    if (refresh.startsWith('revoked'))
      return json(res, 400, `invalid_grant: refresh token ${refresh} was revoked`);
    issued += 1;
    setTimeout(
      () =>
        json(res, 200, {
          access_token: `access-${issued}`,
          refresh_token: `refresh-${issued}`,
          expires_in: 3600,
        }),
      200,
    );
  });
});

afterAll(async () => {
  await server.close();
  for (const prefix of prefixes) await dropPrefix(connections[0]!, prefix);
  for (const connection of connections) connection.disconnect();
});

/** A keeper per "process": its own Redis connection and its own HTTP client to the token endpoint. */
function keeper(redis: Redis, prefix: string, store: SharedStore): TokenKeeper {
  const client = new HttpClient({
    baseUrl: server.url,
    egress: EGRESS,
    secrets: () => [store.token.refreshToken ?? ''],
  });
  return new TokenKeeper({
    lockKey: 'app:account-1',
    store,
    shared: new RedisCoordination(redis, prefix),
    pollMs: 20,
    refresh: async (current) => {
      const response = await client.request<{
        access_token: string;
        refresh_token: string;
        expires_in: number;
      }>({
        method: 'POST',
        path: '/oauth2/v1/token',
        form: { grant_type: 'refresh_token', refresh_token: current.refreshToken ?? '' },
      });
      return {
        accessToken: response.data.access_token,
        refreshToken: response.data.refresh_token,
        expiresAt: Date.now() + response.data.expires_in * 1000,
      };
    },
  });
}

function setup(token: OAuthToken): [TokenKeeper, TokenKeeper, SharedStore] {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  const store = new SharedStore(token);
  return [keeper(connections[0]!, prefix, store), keeper(connections[1]!, prefix, store), store];
}

describe('OAuth token renewal', () => {
  it('an expiring token is renewed once, by one holder, however many callers in two processes ask', async () => {
    const before = issued;
    const [one, two, store] = setup({
      accessToken: 'stale',
      refreshToken: 'refresh-0',
      expiresAt: Date.now() + 1000,
    });
    const tokens = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two).accessToken()));
    expect(issued - before).toBe(1);
    expect(new Set(tokens)).toEqual(new Set([`access-${issued}`]));
    expect(store.token.accessToken).toBe(`access-${issued}`);
    expect(store.token.refreshToken).toBe(`refresh-${issued}`);
  });

  it('a fresh token is used as it is', async () => {
    const before = issued;
    const [one] = setup({ accessToken: 'fresh', refreshToken: 'r', expiresAt: Date.now() + 3_600_000 });
    expect(await one.authorization()).toEqual({ authorization: 'Bearer fresh' });
    expect(issued).toBe(before);
  });

  it('a token the app answered 401 to is renewed once; the other process reuses the new one', async () => {
    const before = issued;
    const [one, two, store] = setup({
      accessToken: 'rejected',
      refreshToken: 'r',
      expiresAt: Date.now() + 3_600_000,
    });
    await one.accessToken();
    await two.accessToken();
    expect(await one.invalidate()).toBe(true);
    expect(issued - before).toBe(1);
    await two.invalidate();
    expect(await two.accessToken()).toBe(store.token.accessToken);
    expect(issued - before).toBe(1);
  });

  it('a renewal the app refuses is kind auth, naming the reconnect', async () => {
    const [one] = setup({
      accessToken: 'old',
      refreshToken: 'revoked-0123456789',
      expiresAt: Date.now() - 1,
    });
    const error = await one.accessToken().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).kind).toBe('auth');
    expect((error as ConnectorError).message).toContain('reconnect in the console');
    expect((error as ConnectorError).message).toContain('invalid_grant');
    expect((error as ConnectorError).message).not.toContain('revoked-0123456789');
  });
});
