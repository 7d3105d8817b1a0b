import { type ConnectorError, isConnectorError } from '@lockstep/connectors-core';
import {
  HttpClient,
  LocalCoordination,
  OAUTH_ERRORS,
  type OAuthToken,
  TokenKeeper,
  type TokenStore,
} from '@lockstep/connectors-http';
import { refused, useSimulator } from './simulator-kit';
import type { OAuthTokens } from './simulator-oauth';

const sim = useSimulator({ perBasePerSecond: 1000, perTokenPerSecond: 1000 });
const CLIENT_ID = 'lockstep-test-client';

/** The side's stored tokens, shared by every holder. */
class Store implements TokenStore {
  constructor(public token: OAuthToken) {}
  async load(): Promise<OAuthToken> {
    return { ...this.token };
  }
  async save(token: OAuthToken): Promise<void> {
    this.token = { ...token };
  }
}

function stored(tokens: OAuthTokens, expiresAt: number): OAuthToken {
  return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, expiresAt };
}

/** A holder of the side: its own HTTP client to the token endpoint and its own TokenKeeper. */
function holder(store: Store, shared: LocalCoordination): TokenKeeper {
  const http = new HttpClient({
    baseUrl: sim.simulator.url,
    egress: { allowPrivate: true, allowLoopback: true },
    shared,
    appErrors: OAUTH_ERRORS,
  });
  return new TokenKeeper({
    lockKey: 'airtable:account',
    store,
    shared,
    pollMs: 10,
    refresh: async (current) => {
      const { data } = await http.request<OAuthTokens>({
        method: 'POST',
        path: '/oauth2/v1/token',
        form: {
          grant_type: 'refresh_token',
          refresh_token: current.refreshToken ?? '',
          client_id: CLIENT_ID,
        },
      });
      return {
        accessToken: data.access_token,
        refreshToken: data.refresh_token,
        expiresAt: Date.now() + data.expires_in * 1000,
      };
    },
  });
}

describe('OAuth tokens', () => {
  it('an access token expires after 60 minutes; a refresh token works once', async () => {
    const tokens = sim.simulator.signIn(CLIENT_ID, ['data.records:read']);
    expect(await sim.client(tokens.access_token).get('/v0/meta/whoami')).toMatchObject({
      scopes: ['data.records:read'],
    });
    sim.simulator.advanceClock(61 * 60_000);
    expect((await refused(sim.client(tokens.access_token).get('/v0/meta/whoami'))).appCode).toBe(
      'AUTHENTICATION_REQUIRED',
    );
    const http = sim.client('unused', { appErrors: OAUTH_ERRORS });
    const form = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: CLIENT_ID };
    const { data: renewed } = await http.request<OAuthTokens>({
      method: 'POST',
      path: '/oauth2/v1/token',
      form,
    });
    expect(await sim.client(renewed.access_token).get('/v0/meta/whoami')).toMatchObject({
      scopes: ['data.records:read'],
    });
    const reused = await refused(http.request({ method: 'POST', path: '/oauth2/v1/token', form }));
    expect([reused.kind, reused.appCode]).toEqual(['auth', 'invalid_grant']);
  });

  it('holders renewing together under one lock renew once, and all use the new token', async () => {
    const shared = new LocalCoordination();
    const store = new Store(stored(sim.simulator.signIn(CLIENT_ID), Date.now() + 10_000));
    const [one, two] = [holder(store, shared), holder(store, shared)];
    const tokens = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? one : two).accessToken()));
    expect(sim.simulator.oauth.refreshes).toBe(1);
    expect(new Set(tokens)).toEqual(new Set([store.token.accessToken]));
    expect(await sim.client(tokens[0]).get('/v0/meta/whoami')).toHaveProperty('id');
  });

  it('without the shared lock, the second renewal spends a used refresh token and is refused as auth', async () => {
    const store = new Store(stored(sim.simulator.signIn(CLIENT_ID), Date.now() + 10_000));
    const [one, two] = [holder(store, new LocalCoordination()), holder(store, new LocalCoordination())];
    const results = await Promise.allSettled([one.accessToken(), two.accessToken()]);
    const failures = results.flatMap((result) =>
      result.status === 'rejected' ? [result.reason as unknown] : [],
    );
    expect(sim.simulator.oauth.refreshes).toBe(2);
    expect(failures).toHaveLength(1);
    expect(isConnectorError(failures[0]) && (failures[0] as ConnectorError).kind).toBe('auth');
    expect((failures[0] as ConnectorError).message).toContain('invalid_grant');
  });
});
