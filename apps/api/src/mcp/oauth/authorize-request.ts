import { SCOPES, type Scope } from '@lockstep/contracts';
import { type McpOAuthClient, McpOAuthClients } from './oauth-clients';

/** A checked authorization request (RFC 6749 4.1.1 with PKCE, RFC 7636). */
export interface AuthorizeRequest {
  client: McpOAuthClient;
  redirectUri: string;
  codeChallenge: string;
  state: string | undefined;
  /** The strongest scope the client asked for (`readwrite` when it named none); the person may grant less. */
  requested: Scope;
}

/** Refused before the redirect URI is trusted: shown to the person, never sent to the client. */
export class UntrustedAuthorizeRequest extends Error {}

/** Refused after: sent back to the client's redirect URI as `error` (RFC 6749 4.1.2.1). */
export class AuthorizeRequestError extends Error {
  constructor(
    readonly redirectUri: string,
    readonly state: string | undefined,
    readonly error: string,
    description: string,
  ) {
    super(description);
  }

  location(): string {
    return redirectWith(this.redirectUri, {
      error: this.error,
      error_description: this.message,
      state: this.state,
    });
  }
}

export function redirectWith(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The strongest of the scopes named in a space-separated `scope`; unknown names are ignored. */
function requestedScope(raw: string | undefined): Scope {
  const named = (raw ?? '').split(' ').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
  if (named.length === 0) return 'readwrite';
  return named.reduce((best, s) => (SCOPES.indexOf(s) > SCOPES.indexOf(best) ? s : best));
}

/** Checks the query (GET) or the consent form (POST) of an authorization request. */
export function parseAuthorizeRequest(
  params: Record<string, unknown>,
  clients: McpOAuthClients,
): AuthorizeRequest {
  const client = clients.find(params['client_id']);
  if (!client) throw new UntrustedAuthorizeRequest('This application is not registered with Lockstep.');
  const redirectUri = text(params['redirect_uri']);
  if (!redirectUri || !client.redirect_uris.includes(redirectUri))
    throw new UntrustedAuthorizeRequest('The application sent a redirect address it did not register.');
  const state = text(params['state']);
  const fail = (error: string, description: string) =>
    new AuthorizeRequestError(redirectUri, state, error, description);
  if (params['response_type'] !== 'code')
    throw fail('unsupported_response_type', 'Only `response_type=code` is supported.');
  const codeChallenge = text(params['code_challenge']);
  if (
    params['code_challenge_method'] !== 'S256' ||
    !codeChallenge ||
    !/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)
  )
    throw fail('invalid_request', 'PKCE is required: `code_challenge` with `code_challenge_method=S256`.');
  return { client, redirectUri, codeChallenge, state, requested: requestedScope(text(params['scope'])) };
}
