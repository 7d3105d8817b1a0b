/**
 * The OAuth 2.0 client side of a connector's browser sign-in, through `openid-client` (ESM-only: loaded with
 * a real dynamic `import()`, which the SWC build keeps as is). The provider's endpoints come from the
 * connector declaration, the client registration from `OAUTH_CLIENTS`.
 */
import type * as OpenIdClient from 'openid-client';
import type { OAuthClientSetting } from '@lockstep/config';

type OAuthDeclaration = {
  issuer?: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  scopes: string[];
};

let loaded: Promise<typeof OpenIdClient> | null = null;

/** The `openid-client` module, imported once. */
export function openIdClient(): Promise<typeof OpenIdClient> {
  loaded ??= import('openid-client');
  return loaded;
}

/** True when the declared scopes ask for an ID token (OpenID Connect), which then carries our nonce. */
export const wantsIdToken = (oauth: OAuthDeclaration): boolean => oauth.scopes.includes('openid');

/**
 * An openid-client configuration for one connector. Without a declared issuer, the authorization endpoint's
 * origin stands in (only checked against an `iss` the provider sends back). Plain-http endpoints (a provider
 * on the operator's own network, the tests) are allowed only when the declaration names them so.
 */
export async function clientConfiguration(
  oauth: OAuthDeclaration,
  client: OAuthClientSetting,
): Promise<OpenIdClient.Configuration> {
  const lib = await openIdClient();
  const server: OpenIdClient.ServerMetadata = {
    issuer: oauth.issuer ?? new URL(oauth.authorizationEndpoint).origin,
    authorization_endpoint: oauth.authorizationEndpoint,
    token_endpoint: oauth.tokenEndpoint,
  };
  const method = client.token_endpoint_auth_method ?? (client.client_secret ? 'client_secret_basic' : 'none');
  const auth =
    method === 'client_secret_post'
      ? lib.ClientSecretPost(client.client_secret)
      : method === 'client_secret_basic'
        ? lib.ClientSecretBasic(client.client_secret)
        : lib.None();
  const configuration = new lib.Configuration(
    server,
    client.client_id,
    { token_endpoint_auth_method: method },
    auth,
  );
  if ([oauth.authorizationEndpoint, oauth.tokenEndpoint].some((url) => url.startsWith('http:')))
    lib.allowInsecureRequests(configuration);
  return configuration;
}

/**
 * PKCE verifier, state and (for OpenID Connect) nonce of a new sign-in, and the authorization URL to send the
 * browser to.
 */
export async function authorizationRequest(
  oauth: OAuthDeclaration,
  client: OAuthClientSetting,
  redirectUri: string,
): Promise<{ url: URL; state: string; codeVerifier: string; nonce: string | null }> {
  const lib = await openIdClient();
  const configuration = await clientConfiguration(oauth, client);
  const codeVerifier = lib.randomPKCECodeVerifier();
  const state = lib.randomState();
  const nonce = wantsIdToken(oauth) ? lib.randomNonce() : null;
  const parameters: Record<string, string> = {
    redirect_uri: redirectUri,
    scope: oauth.scopes.join(' '),
    code_challenge: await lib.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
  };
  if (nonce) parameters['nonce'] = nonce;
  return { url: lib.buildAuthorizationUrl(configuration, parameters), state, codeVerifier, nonce };
}

export interface GrantedTokens {
  /** What is stored as the side's credentials (encrypted) and handed to the connector's `connect`. */
  credentials: Record<string, string>;
  /** Who signed in, when the provider said (`iss` and `sub` of the ID token); identifies the app account. */
  identity: { iss: string; sub: string } | null;
}

/**
 * Exchanges the authorization code (checks state, PKCE verifier, `iss`, and the ID token's nonce) and returns
 * the tokens. Throws openid-client's errors (the provider's `error` and `error_description` in the message).
 */
export async function exchangeCode(
  oauth: OAuthDeclaration,
  client: OAuthClientSetting,
  callbackUrl: URL,
  checks: { state: string; codeVerifier: string; nonce: string | null },
): Promise<GrantedTokens> {
  const lib = await openIdClient();
  const configuration = await clientConfiguration(oauth, client);
  const tokens = await lib.authorizationCodeGrant(configuration, callbackUrl, {
    pkceCodeVerifier: checks.codeVerifier,
    expectedState: checks.state,
    ...(checks.nonce ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
  });
  const credentials: Record<string, string> = {
    access_token: tokens.access_token,
    token_type: String(tokens.token_type ?? 'bearer').toLowerCase(),
  };
  if (tokens.refresh_token) credentials['refresh_token'] = tokens.refresh_token;
  if (typeof tokens.expires_in === 'number')
    credentials['expires_at'] = new Date(Date.now() + tokens.expires_in * 1000).toISOString();
  if (tokens.scope) credentials['scope'] = tokens.scope;
  const claims = tokens.claims();
  return { credentials, identity: claims ? { iss: claims.iss, sub: claims.sub } : null };
}
