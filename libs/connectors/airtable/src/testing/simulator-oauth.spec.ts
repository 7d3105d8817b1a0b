import { createHash } from 'node:crypto';
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

describe('the authorization code flow with PKCE', () => {
  const REDIRECT = 'http://127.0.0.1:9/app/oauth/callback';
  const SECRET = 'integration-secret';
  const verifier = 'v'.repeat(20) + '-._~' + 'x'.repeat(30);
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  const authorizeUrl = (overrides: Record<string, string | null> = {}) => {
    const url = new URL('/oauth2/v1/authorize', sim.simulator.url);
    const parameters: Record<string, string | null> = {
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'data.records:read schema.bases:read',
      state: 'state-123',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...overrides,
    };
    for (const [name, value] of Object.entries(parameters))
      if (value !== null) url.searchParams.set(name, value);
    return url;
  };

  /** The consent page's answer: the form it shows, sent back with the person's decision. */
  async function decide(url: URL, decision: 'grant' | 'deny'): Promise<URL> {
    const page = await fetch(url, { redirect: 'manual' });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Grant access');
    const form = new URLSearchParams(url.searchParams);
    form.set('decision', decision);
    const answer = await fetch(new URL('/oauth2/v1/authorize', sim.simulator.url), {
      method: 'POST',
      body: form,
      redirect: 'manual',
    });
    expect(answer.status).toBe(302);
    return new URL(answer.headers.get('location')!);
  }

  async function token(form: Record<string, string>, secret = SECRET) {
    return fetch(new URL('/oauth2/v1/token', sim.simulator.url), {
      method: 'POST',
      body: new URLSearchParams(form),
      headers: { authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${secret}`).toString('base64')}` },
    });
  }

  beforeEach(() =>
    sim.simulator.registerIntegration({
      clientId: CLIENT_ID,
      clientSecret: SECRET,
      redirectUris: [REDIRECT],
    }),
  );

  it('grants a code for the state, exchanged once with the verifier whose S256 is the challenge', async () => {
    const back = await decide(authorizeUrl(), 'grant');
    expect(back.origin + back.pathname).toBe(REDIRECT);
    expect(back.searchParams.get('state')).toBe('state-123');
    const code = back.searchParams.get('code')!;
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT };
    const wrong = await token({ ...exchange, code_verifier: 'w'.repeat(50) });
    expect([wrong.status, ((await wrong.json()) as { error: string }).error]).toEqual([400, 'invalid_grant']);
    // A refused exchange spends the code too.
    const back2 = await decide(authorizeUrl(), 'grant');
    const right = await token({
      ...exchange,
      code: back2.searchParams.get('code')!,
      code_verifier: verifier,
    });
    expect(right.status).toBe(200);
    const tokens = (await right.json()) as OAuthTokens;
    expect(tokens).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'data.records:read schema.bases:read',
    });
    expect(await sim.client(tokens.access_token).get('/v0/meta/whoami')).toMatchObject({
      scopes: ['data.records:read', 'schema.bases:read'],
    });
    const again = await token({
      ...exchange,
      code: back2.searchParams.get('code')!,
      code_verifier: verifier,
    });
    expect(again.status).toBe(400);
    const badClient = await token({ ...exchange, code_verifier: verifier }, 'not-the-secret');
    expect([badClient.status, ((await badClient.json()) as { error: string }).error]).toEqual([
      401,
      'invalid_client',
    ]);
  });

  it('sends refusals back to the redirect URI, and answers a bad client or redirect URI on the page', async () => {
    const denied = await decide(authorizeUrl(), 'deny');
    expect([denied.searchParams.get('error'), denied.searchParams.get('state')]).toEqual([
      'access_denied',
      'state-123',
    ]);
    for (const [overrides, error] of [
      [{ code_challenge: null }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ scope: 'data.records:read user.email:read' }, 'invalid_scope'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ] as const) {
      const answer = await fetch(authorizeUrl(overrides), { redirect: 'manual' });
      expect(answer.status).toBe(302);
      expect(new URL(answer.headers.get('location')!).searchParams.get('error')).toBe(error);
    }
    const unanswerable: Record<string, string>[] = [
      { redirect_uri: 'http://127.0.0.1:9/elsewhere' },
      { client_id: 'unknown' },
    ];
    for (const overrides of unanswerable) {
      const answer = await fetch(authorizeUrl(overrides), { redirect: 'manual' });
      expect(answer.status).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
    }
  });
});
