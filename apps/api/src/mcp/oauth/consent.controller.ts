import { Get, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { isScope, SCOPES, type Scope, scopeAllows } from '@lockstep/contracts';
import {
  type ConsoleSession,
  ConsoleController,
  ConsolePageError,
  ConsoleRedirect,
  csrfInput,
  Form,
  sendPage,
  Session,
} from '../../console/console-session';
import { html } from '../../console/html';
import { layout } from '../../console/layout';
import {
  type AuthorizeRequest,
  AuthorizeRequestError,
  parseAuthorizeRequest,
  redirectWith,
  UntrustedAuthorizeRequest,
} from './authorize-request';
import { McpOAuthClients } from './oauth-clients';
import { McpOAuthCodes } from './oauth-codes';

const GRANT_HELP: Record<Scope, string> = {
  read: 'Read only: list and read syncs, schema, mappings, operations, issues and records',
  operate: 'Operate: read, plus pause and activate syncs and retry issues',
  readwrite: 'Full access: everything, including creating, changing and deleting syncs and mappings',
};

/** The request's parameters, carried through the consent form unchanged. */
const CARRIED = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
];

/**
 * The consent page of MCP OAuth sign-in (`/app/oauth/authorize`, the authorization endpoint): the owner,
 * signed in to the console, lets an MCP client act for the account with a scope up to the one it asked for
 * (read only always offered). Allowing issues a one-time code to the client's registered redirect URI; the
 * token the client exchanges it for is an API key of the chosen scope.
 */
@ConsoleController('oauth/authorize')
export class McpConsentController {
  constructor(
    private readonly clients: McpOAuthClients,
    private readonly codes: McpOAuthCodes,
  ) {}

  @Get()
  page(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Query() query: Record<string, unknown>,
  ): void {
    const request = this.parse(query);
    const params = Object.fromEntries(
      CARRIED.map((name) => [name, typeof query[name] === 'string' ? query[name] : '']),
    );
    const host = new URL(request.redirectUri).host;
    const body = html`<h1>Allow ${request.client.client_name} to use Lockstep?</h1>
<p class="lead">The application <strong>${request.client.client_name}</strong> (returning to <code>${host}</code>) asks to act for your account through Lockstep's MCP server. It gets a key of the scope you choose; you can revoke it any time under API keys.</p>
<form method="post" action="/app/oauth/authorize" class="card">
  ${csrfInput(session)}
  ${Object.entries(params).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
  <fieldset>
    <legend>Access</legend>
    ${SCOPES.filter((scope) => scopeAllows(request.requested, scope)).map(
      (scope) =>
        html`<label class="choice"><input type="radio" name="grant" value="${scope}"${scope === request.requested ? html` checked` : null}> ${GRANT_HELP[scope]}</label>`,
    )}
  </fieldset>
  <div class="actions">
    <button type="submit" name="decision" value="allow">Allow</button>
    <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
  </div>
</form>`;
    sendPage(response, 200, layout({ title: 'Allow access', session, body }));
  }

  @Post()
  async decide(@Session() session: ConsoleSession, @Form() form: Record<string, string>): Promise<never> {
    const request = this.parse(form);
    if (form['decision'] !== 'allow') {
      throw new ConsoleRedirect(
        redirectWith(request.redirectUri, { error: 'access_denied', state: request.state }),
      );
    }
    const grant = form['grant'];
    if (!isScope(grant) || !scopeAllows(request.requested, grant)) {
      throw new ConsolePageError(
        400,
        'Choose the access',
        'Go back and choose one of the access levels offered.',
      );
    }
    const code = await this.codes.issue({
      accountId: session.accountId,
      scope: grant,
      clientId: request.client.client_id,
      clientName: request.client.client_name,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
    });
    throw new ConsoleRedirect(redirectWith(request.redirectUri, { code, state: request.state }));
  }

  private parse(params: Record<string, unknown>): AuthorizeRequest {
    try {
      return parseAuthorizeRequest(params, this.clients);
    } catch (error) {
      if (error instanceof UntrustedAuthorizeRequest)
        throw new ConsolePageError(400, 'Sign-in request not valid', error.message);
      if (error instanceof AuthorizeRequestError) throw new ConsoleRedirect(error.location());
      throw error;
    }
  }
}
