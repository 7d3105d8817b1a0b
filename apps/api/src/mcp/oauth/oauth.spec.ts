import { createHash } from 'node:crypto';
import { loadConfig } from '@lockstep/config';
import { AuthorizeRequestError, parseAuthorizeRequest, UntrustedAuthorizeRequest } from './authorize-request';
import { McpOAuthClients, OAuthError } from './oauth-clients';
import { pkceMatches } from './oauth-codes';

const config = (key: string, previous?: string) =>
  loadConfig(
    {},
    {
      DATABASE_URL: 'postgres://localhost/unused',
      LOCKSTEP_MASTER_KEY: key,
      ...(previous ? { LOCKSTEP_MASTER_KEY_PREVIOUS: previous } : {}),
    },
  );
const KEY_A = Buffer.alloc(32, 1).toString('base64');
const KEY_B = Buffer.alloc(32, 2).toString('base64');
const CALLBACK = 'http://127.0.0.1:4567/callback';

describe('MCP OAuth clients and authorization requests', () => {
  const clients = new McpOAuthClients(config(KEY_A));
  const client = clients.register({ client_name: 'Agent', redirect_uris: [CALLBACK] });

  it('recognises its own client ids, after a key rotation too, and no forged or foreign one', () => {
    expect(clients.find(client.client_id)).toEqual(client);
    expect(new McpOAuthClients(config(KEY_B, KEY_A)).find(client.client_id)).toEqual(client);
    expect(new McpOAuthClients(config(KEY_B)).find(client.client_id)).toBeNull();
    const [payload] = client.client_id.split('.');
    expect(clients.find(`${payload}.forged`)).toBeNull();
    expect(clients.find('mcpc_x')).toBeNull();
    expect(clients.find(42)).toBeNull();
  });

  it('registers https and loopback http redirect URIs only', () => {
    for (const uri of ['https://app.example/cb', 'http://localhost:8080/cb', 'http://127.0.0.1/cb']) {
      expect(clients.register({ redirect_uris: [uri] }).redirect_uris).toEqual([uri]);
    }
    for (const uris of [
      [],
      ['http://evil.example/cb'],
      ['https://a.example/cb#frag'],
      ['javascript:alert(1)'],
    ]) {
      expect(() => clients.register({ redirect_uris: uris })).toThrow(OAuthError);
    }
    expect(() =>
      clients.register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'client_secret_basic' }),
    ).toThrow(/public clients/);
  });

  it('checks an authorization request: client and redirect first (not redirected), then the rest (redirected)', () => {
    const challenge = createHash('sha256').update('v'.repeat(50)).digest('base64url');
    const good = {
      client_id: client.client_id,
      redirect_uri: CALLBACK,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's1',
      scope: 'read operate',
    };
    expect(parseAuthorizeRequest(good, clients)).toMatchObject({ requested: 'operate', state: 's1' });
    expect(parseAuthorizeRequest({ ...good, scope: undefined }, clients).requested).toBe('readwrite');
    expect(() => parseAuthorizeRequest({ ...good, client_id: 'mcpc_no.pe' }, clients)).toThrow(
      UntrustedAuthorizeRequest,
    );
    expect(() =>
      parseAuthorizeRequest({ ...good, redirect_uri: 'https://other.example/cb' }, clients),
    ).toThrow(UntrustedAuthorizeRequest);
    try {
      parseAuthorizeRequest({ ...good, code_challenge_method: 'plain' }, clients);
      throw new Error('not refused');
    } catch (error) {
      expect(error).toBeInstanceOf(AuthorizeRequestError);
      const location = new URL((error as AuthorizeRequestError).location());
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('state')).toBe('s1');
    }
  });

  it('matches a PKCE verifier against its S256 challenge only', () => {
    const verifier = 'a'.repeat(64);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    expect(pkceMatches(verifier, challenge)).toBe(true);
    expect(pkceMatches('b'.repeat(64), challenge)).toBe(false);
    expect(pkceMatches(verifier, verifier)).toBe(false);
  });
});
