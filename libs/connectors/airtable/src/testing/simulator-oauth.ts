/**
 * Airtable's OAuth 2 endpoints, as https://airtable.com/developers/web/api/oauth-reference describes them:
 *
 * - `GET /oauth2/v1/authorize` ("Authorization request"): `client_id`, `redirect_uri` (exactly one registered
 *   for the integration), `response_type=code`, `scope` (space separated, at least one), `state`,
 *   `code_challenge` and `code_challenge_method=S256` (PKCE is required). A bad client or redirect URI is
 *   answered on the page itself; any other problem is sent back to the redirect URI as `error` and `state`
 *   ("Error response query parameters", "Authorization error codes"). Otherwise the person sees the consent
 *   page and grants access (`POST /oauth2/v1/authorize` here, the simulator's stand-in for Airtable's page),
 *   and the browser goes back with `code` and `state` ("Successful response query parameters"). A code lasts
 *   10 minutes and works once.
 * - `POST /oauth2/v1/token` ("Token creation request", "Token expiry & refresh tokens"): a form body
 *   (`application/x-www-form-urlencoded`). A client with a secret authenticates with
 *   `Authorization: Basic base64(client_id:client_secret)`; one without sends `client_id` in the body.
 *   `grant_type=authorization_code` takes `code`, `redirect_uri` and `code_verifier` (whose SHA-256, base64url,
 *   must equal the `code_challenge`); `grant_type=refresh_token` takes `refresh_token`. The answer is
 *   `{ access_token, refresh_token, token_type, scope, expires_in, refresh_expires_in }`: an access token
 *   lasts 60 minutes, a refresh token 60 days and works once (the answer carries the next one), so two holders
 *   refreshing at once leave one with `invalid_grant`. Errors are OAuth 2's own body (RFC 6749 section 5.2,
 *   "Token creation error codes"): `{ error, error_description }`, 401 for `invalid_client`, else 400.
 */
import { createHash, randomBytes } from 'node:crypto';

export const ACCESS_TOKEN_LIFETIME_MS = 60 * 60_000;
export const REFRESH_TOKEN_LIFETIME_MS = 60 * 24 * 60 * 60_000;
export const CODE_LIFETIME_MS = 10 * 60_000;

export interface OAuthTokens {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  scope: string;
  expires_in: number;
  refresh_expires_in: number;
}

/** An integration registered with Airtable (its page at /create/oauth). */
export interface OAuthIntegration {
  clientId: string;
  /** Absent: a public integration (PKCE only). */
  clientSecret?: string;
  redirectUris: string[];
  /** The scopes selected for the integration; a request may ask for these only. */
  scopes: string[];
}

interface Grant {
  clientId: string;
  userId: string;
  scopes: string[];
}

interface PendingCode extends Grant {
  redirectUri: string;
  codeChallenge: string;
  expiresAt: number;
}

/** Thrown for a refused token request; answered as `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

/** What the authorize page does with a request: show the consent page, or send the browser somewhere. */
export type AuthorizeOutcome =
  | { kind: 'consent'; integration: OAuthIntegration; scopes: string[]; query: URLSearchParams }
  | { kind: 'redirect'; location: string }
  | { kind: 'refused'; message: string };

const random = (prefix: string): string => `${prefix}${randomBytes(24).toString('hex')}`;
const s256 = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');

function backTo(redirectUri: string, parameters: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  return url.href;
}

export class OAuthGrants {
  private readonly integrations = new Map<string, OAuthIntegration>();
  private readonly codes = new Map<string, PendingCode>();
  private readonly refreshTokens = new Map<string, Grant & { expiresAt: number }>();
  /** Refresh grants answered, refused ones included. */
  refreshes = 0;
  /** Authorization codes exchanged, refused ones included. */
  exchanges = 0;

  constructor(
    /** Registers an access token with the simulator until `expiresAt` (its clock). */
    private readonly grantAccess: (token: string, grant: Grant, expiresAt: number) => void,
    private readonly now: () => number,
  ) {}

  register(integration: OAuthIntegration): void {
    this.integrations.set(integration.clientId, integration);
  }

  integration(clientId: string): OAuthIntegration | undefined {
    return this.integrations.get(clientId);
  }

  /** Tokens as a finished sign-in gives them (tests that need tokens without a browser). */
  issue(grant: Grant): OAuthTokens {
    const access = random('oaa');
    const refresh = random('oar');
    this.grantAccess(access, grant, this.now() + ACCESS_TOKEN_LIFETIME_MS);
    this.refreshTokens.set(refresh, { ...grant, expiresAt: this.now() + REFRESH_TOKEN_LIFETIME_MS });
    return {
      access_token: access,
      refresh_token: refresh,
      token_type: 'Bearer',
      scope: grant.scopes.join(' '),
      expires_in: ACCESS_TOKEN_LIFETIME_MS / 1000,
      refresh_expires_in: REFRESH_TOKEN_LIFETIME_MS / 1000,
    };
  }

  /** `GET /oauth2/v1/authorize`: the request checked as the reference's parameter table says. */
  authorize(query: URLSearchParams): AuthorizeOutcome {
    const integration = this.integrations.get(query.get('client_id') ?? '');
    if (!integration) return { kind: 'refused', message: 'Invalid client_id: no such integration' };
    const redirectUri = query.get('redirect_uri') ?? '';
    if (!integration.redirectUris.includes(redirectUri))
      return { kind: 'refused', message: 'The redirect_uri is not registered for this integration' };
    const state = query.get('state') ?? '';
    const fail = (error: string, description: string): AuthorizeOutcome => ({
      kind: 'redirect',
      location: backTo(redirectUri, { error, error_description: description, ...(state ? { state } : {}) }),
    });
    if (query.get('response_type') !== 'code')
      return fail('unsupported_response_type', 'response_type must be "code"');
    if (!state) return fail('invalid_request', 'state is required');
    const challenge = query.get('code_challenge') ?? '';
    if (!/^[A-Za-z0-9_-]{43}$/.test(challenge) || query.get('code_challenge_method') !== 'S256')
      return fail('invalid_request', 'code_challenge (S256) and code_challenge_method=S256 are required');
    const scopes = (query.get('scope') ?? '').split(' ').filter((scope) => scope !== '');
    if (scopes.length === 0) return fail('invalid_scope', 'At least one scope must be requested');
    const unknown = scopes.find((scope) => !integration.scopes.includes(scope));
    if (unknown) return fail('invalid_scope', `The scope ${unknown} is not selected for this integration`);
    return { kind: 'consent', integration, scopes, query };
  }

  /** The person's answer on the consent page: a code sent back to the redirect URI, or `access_denied`. */
  decide(query: URLSearchParams, granted: boolean, userId: string): AuthorizeOutcome {
    const checked = this.authorize(query);
    if (checked.kind !== 'consent') return checked;
    const redirectUri = query.get('redirect_uri')!;
    const state = query.get('state')!;
    if (!granted)
      return {
        kind: 'redirect',
        location: backTo(redirectUri, {
          error: 'access_denied',
          error_description: 'The user denied the request',
          state,
        }),
      };
    const code = random('occ');
    this.codes.set(code, {
      clientId: checked.integration.clientId,
      userId,
      scopes: checked.scopes,
      redirectUri,
      codeChallenge: query.get('code_challenge')!,
      expiresAt: this.now() + CODE_LIFETIME_MS,
    });
    const challenge = query.get('code_challenge')!;
    return {
      kind: 'redirect',
      location: backTo(redirectUri, {
        code,
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    };
  }

  /** `POST /oauth2/v1/token`. */
  token(form: URLSearchParams, authorization: string | undefined): OAuthTokens {
    const integration = this.client(form, authorization);
    switch (form.get('grant_type')) {
      case 'authorization_code':
        this.exchanges += 1;
        return this.exchange(form, integration);
      case 'refresh_token':
        this.refreshes += 1;
        return this.refresh(form, integration);
      default:
        throw new OAuthError(
          'unsupported_grant_type',
          'grant_type must be authorization_code or refresh_token',
        );
    }
  }

  /** Client authentication: Basic for an integration with a secret, `client_id` in the body otherwise. */
  private client(form: URLSearchParams, authorization: string | undefined): OAuthIntegration {
    const basic = /^Basic (.+)$/i.exec(authorization ?? '');
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const [id, secret] = [decoded.slice(0, colon), decoded.slice(colon + 1)].map(decodeURIComponent);
      const integration = this.integrations.get(id!);
      if (!integration?.clientSecret || integration.clientSecret !== secret)
        throw new OAuthError('invalid_client', 'Client authentication failed', 401);
      return integration;
    }
    const integration = this.integrations.get(form.get('client_id') ?? '');
    if (!integration) throw new OAuthError('invalid_client', 'Unknown client_id', 401);
    if (integration.clientSecret)
      throw new OAuthError(
        'invalid_client',
        'This integration must authenticate with its client secret',
        401,
      );
    return integration;
  }

  private exchange(form: URLSearchParams, integration: OAuthIntegration): OAuthTokens {
    const code = form.get('code') ?? '';
    const pending = this.codes.get(code);
    this.codes.delete(code);
    if (!pending || pending.expiresAt <= this.now() || pending.clientId !== integration.clientId)
      throw new OAuthError('invalid_grant', 'The authorization code is invalid, expired or already used');
    if (pending.redirectUri !== form.get('redirect_uri'))
      throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    const verifier = form.get('code_verifier') ?? '';
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || s256(verifier) !== pending.codeChallenge)
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    return this.issue({ clientId: pending.clientId, userId: pending.userId, scopes: pending.scopes });
  }

  private refresh(form: URLSearchParams, integration: OAuthIntegration): OAuthTokens {
    const token = form.get('refresh_token') ?? '';
    const grant = this.refreshTokens.get(token);
    if (!grant || grant.clientId !== integration.clientId || grant.expiresAt <= this.now())
      throw new OAuthError(
        'invalid_grant',
        'The refresh token is invalid, expired, revoked or was already used',
      );
    this.refreshTokens.delete(token);
    return this.issue({ clientId: grant.clientId, userId: grant.userId, scopes: grant.scopes });
  }
}
