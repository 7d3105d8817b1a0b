/**
 * Airtable's OAuth token endpoint (https://airtable.com/developers/web/api/oauth-reference), the refresh
 * grant: `POST /oauth2/v1/token` with a form body `grant_type=refresh_token`, `refresh_token`, `client_id`.
 * An access token lasts 60 minutes; a refresh token can be used once (the answer carries the next one), so
 * two holders refreshing at once leave one with `invalid_grant`. Errors are OAuth 2's own body
 * (RFC 6749 section 5.2): `{ error, error_description }` with status 400.
 */
import { randomBytes } from 'node:crypto';

export const ACCESS_TOKEN_LIFETIME_MS = 60 * 60_000;

export interface OAuthTokens {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  scope: string;
  expires_in: number;
}

interface RefreshGrant {
  clientId: string;
  userId: string;
  scopes: string[];
}

/** Thrown for a refused grant; answered as `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

export class OAuthGrants {
  private readonly refreshTokens = new Map<string, RefreshGrant>();
  /** Token endpoint answers given, refused ones included. */
  refreshes = 0;

  constructor(
    /** Registers an access token with the simulator until `expiresAt` (its clock). */
    private readonly grantAccess: (token: string, grant: RefreshGrant, expiresAt: number) => void,
    private readonly now: () => number,
  ) {}

  /** What the authorization-code exchange gives after a person signed in (the console's part). */
  issue(grant: RefreshGrant): OAuthTokens {
    const access = `oaa${randomBytes(24).toString('hex')}`;
    const refresh = `oar${randomBytes(24).toString('hex')}`;
    this.grantAccess(access, grant, this.now() + ACCESS_TOKEN_LIFETIME_MS);
    this.refreshTokens.set(refresh, grant);
    return {
      access_token: access,
      refresh_token: refresh,
      token_type: 'Bearer',
      scope: grant.scopes.join(' '),
      expires_in: ACCESS_TOKEN_LIFETIME_MS / 1000,
    };
  }

  /** The token endpoint: only `grant_type=refresh_token` (the authorization code is exchanged in the console). */
  token(form: URLSearchParams): OAuthTokens {
    this.refreshes += 1;
    if (form.get('grant_type') !== 'refresh_token') {
      throw new OAuthError('unsupported_grant_type', 'Only the refresh_token grant is simulated');
    }
    const grant = this.refreshTokens.get(form.get('refresh_token') ?? '');
    if (!grant || grant.clientId !== form.get('client_id')) {
      throw new OAuthError(
        'invalid_grant',
        'The refresh token is invalid, expired, revoked or was already used',
      );
    }
    this.refreshTokens.delete(form.get('refresh_token')!);
    return this.issue(grant);
  }
}
