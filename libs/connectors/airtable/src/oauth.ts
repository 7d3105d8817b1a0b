/**
 * A side signed in with Airtable (https://airtable.com/developers/web/api/oauth-reference): its access token
 * lasts 60 minutes and its refresh token works once, the answer carrying the next one. The connection renews
 * the access token through the http layer's `TokenKeeper`: one holder at a time under a lock shared through
 * `ConnectContext.shared` (Redis in the service), keyed by where the credentials are stored
 * (`ConnectContext.credentialStore.key`), so two workers never spend one refresh token. The holder saves the
 * renewed tokens through `credentialStore` (the service stores them encrypted as the side's credentials)
 * before anyone uses them; a waiting holder, and any process started later, reads them from there. The
 * refresh authenticates with the operator's client registration (`ConnectContext.oauthClient`, from
 * `OAUTH_CLIENTS`): HTTP Basic with a client secret, `client_id` in the body without one.
 */
import {
  type ConnectContext,
  ConnectorError,
  type Credentials,
  type OAuthClientRegistration,
} from '@lockstep/connectors-core';
import {
  budgetKeyOf,
  HttpClient,
  OAUTH_ERRORS,
  type OAuthToken,
  TokenKeeper,
  type TokenStore,
} from '@lockstep/connectors-http';
import { DEFAULT_OAUTH_URL, OAUTH_URL_SETTING, TOKEN_PATH } from './oauth-endpoints';

/** Credentials of a browser sign-in (`OAUTH_CREDENTIAL_KEYS`) hold an access token instead of `apiKey`. */
export const isSignedIn = (credentials: Credentials): boolean =>
  typeof credentials['access_token'] === 'string' && credentials['access_token'] !== '';

interface TokenAnswer {
  access_token: string;
  refresh_token?: string;
  token_type?: string;
  scope?: string;
  expires_in?: number;
}

function tokenOf(credentials: Credentials): OAuthToken {
  const accessToken = credentials['access_token'];
  if (!accessToken)
    throw new ConnectorError('auth', 'The Airtable sign-in holds no access token; sign in again');
  const expiresAt = credentials['expires_at'] ? Date.parse(credentials['expires_at']) : NaN;
  return {
    accessToken,
    refreshToken: credentials['refresh_token'] ?? null,
    expiresAt: Number.isNaN(expiresAt) ? null : expiresAt,
  };
}

function credentialsOf(token: OAuthToken, previous: Credentials, scope: string | undefined): Credentials {
  const next: Credentials = { ...previous, access_token: token.accessToken };
  if (token.refreshToken) next['refresh_token'] = token.refreshToken;
  if (token.expiresAt !== null) next['expires_at'] = new Date(token.expiresAt).toISOString();
  if (scope) next['scope'] = scope;
  return next;
}

/** The access token of a signed-in connection, renewed as the file comment says. */
export class AirtableSignIn {
  private readonly keeper: TokenKeeper;
  private readonly tokenClient: HttpClient;
  /** The credentials as this connection last read or wrote them. */
  private current: Credentials;
  /** The scope the last renewal reported (kept with the tokens). */
  private renewedScope: string | undefined;
  readonly budgetIdentity: string;

  constructor(
    credentials: Credentials,
    private readonly context: ConnectContext,
  ) {
    this.current = { ...credentials };
    const origin = context.settings?.[OAUTH_URL_SETTING]?.trim() || DEFAULT_OAUTH_URL;
    this.tokenClient = new HttpClient({
      baseUrl: origin,
      egress: context.egress,
      shared: context.shared,
      appErrors: OAUTH_ERRORS,
      secrets: () => this.secrets(),
      // A refresh token works once: a refresh whose answer was lost cannot be sent again.
      retry: { attempts: 1 },
    });
    const place =
      context.credentialStore?.key ?? credentials['refresh_token'] ?? credentials['access_token'] ?? '';
    this.budgetIdentity = place;
    const store: TokenStore = {
      load: async () => {
        if (context.credentialStore) this.current = await context.credentialStore.load();
        return tokenOf(this.current);
      },
      save: async (token) => {
        this.current = credentialsOf(token, this.current, this.renewedScope);
        await context.credentialStore?.save(this.current);
      },
    };
    this.keeper = new TokenKeeper({
      lockKey: budgetKeyOf('airtable', 'oauth', place),
      store,
      shared: context.shared,
      refresh: (token) => this.refresh(token),
    });
  }

  accessToken(): Promise<string> {
    return this.keeper.accessToken();
  }

  /** The app answered 401: renew once (another holder may have renewed already). */
  invalidate(): Promise<boolean> {
    return this.keeper.invalidate();
  }

  secrets(): string[] {
    const client = this.context.oauthClient?.clientSecret;
    return [this.current['access_token'], this.current['refresh_token'], client].filter(
      (value): value is string => typeof value === 'string' && value !== '',
    );
  }

  /** The token endpoint's `refresh_token` grant ("Token expiry & refresh tokens"). */
  private async refresh(token: OAuthToken): Promise<OAuthToken> {
    const client = this.context.oauthClient;
    if (!client)
      throw new ConnectorError(
        'auth',
        'The Airtable sign-in expired and this server has no OAuth client registration for airtable ' +
          '(OAUTH_CLIENTS) to renew it with',
      );
    const { data } = await this.tokenClient.request<TokenAnswer>({
      method: 'POST',
      path: TOKEN_PATH,
      form: { grant_type: 'refresh_token', refresh_token: token.refreshToken ?? '', ...clientForm(client) },
      headers: clientHeaders(client),
      context: 'Renewing the Airtable sign-in',
    });
    if (typeof data?.access_token !== 'string')
      throw new ConnectorError('transient', 'The Airtable token endpoint answered without an access token');
    this.renewedScope = data.scope;
    return {
      accessToken: data.access_token,
      refreshToken: data.refresh_token ?? token.refreshToken ?? null,
      expiresAt: typeof data.expires_in === 'number' ? Date.now() + data.expires_in * 1000 : null,
    };
  }
}

/** RFC 6749 section 2.3.1: the client id and secret form-encoded, then joined for HTTP Basic. */
function clientHeaders(client: OAuthClientRegistration): Record<string, string> {
  if (client.tokenEndpointAuthMethod !== 'client_secret_basic' || !client.clientSecret) return {};
  const pair = `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`;
  return { authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

function clientForm(client: OAuthClientRegistration): Record<string, string> {
  if (client.tokenEndpointAuthMethod === 'client_secret_basic' && client.clientSecret) return {};
  if (client.tokenEndpointAuthMethod === 'client_secret_post' && client.clientSecret)
    return { client_id: client.clientId, client_secret: client.clientSecret };
  return { client_id: client.clientId };
}
