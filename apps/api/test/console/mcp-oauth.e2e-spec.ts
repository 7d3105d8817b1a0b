import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  type Browser,
  type ConsoleServer,
  expectAccessible,
  openBrowser,
  shot,
  signIn,
  startConsoleServer,
} from './console-harness';

/** The client's redirect URI: a local server that records where the browser was sent (set in beforeAll). */
let CALLBACK = '';
let lastCallback: URL | undefined;

/** An MCP client's OAuth state kept in memory, as a desktop client would keep it on disk. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly redirectUrl = CALLBACK;
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: 'E2E agent',
    redirect_uris: [CALLBACK],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** MCP OAuth sign-in: discovery from the 401, registration, consent in the console (headless Chromium), token. */
describe('MCP OAuth: an MCP client signs in instead of pasting a key', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let owner: { id: string; email: string };
  let callbackServer: Server;

  beforeAll(async () => {
    callbackServer = createServer((request, response) => {
      const url = new URL(request.url ?? '/', CALLBACK);
      if (url.pathname === '/callback') lastCallback = url; // not the browser's favicon request
      response.end('done');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    CALLBACK = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
    server = await startConsoleServer();
    owner = (await server.t.account()) as { id: string; email: string };
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((resolve) => callbackServer?.close(resolve));
  });

  /** Opens the authorization URL, signs in, picks `grant`, presses `button`; answers the callback URL. */
  async function consent(authorizationUrl: URL, grant: string, button: 'Allow' | 'Deny'): Promise<URL> {
    const { page } = browser;
    lastCallback = undefined;
    await page.goto(authorizationUrl.toString());
    if (new URL(page.url()).pathname === '/app/sign-in') await signIn(page, owner.email);
    expect(new URL(page.url()).pathname).toBe('/app/oauth/authorize');
    expect(await page.textContent('h1')).toContain('E2E agent');
    await shot(page, 'mcp-oauth-consent');
    await expectAccessible(page);
    await page.check(`input[name=grant][value=${grant}]`);
    await Promise.all([page.waitForURL(`${CALLBACK}**`), page.click(`button:has-text("${button}")`)]);
    return lastCallback!;
  }

  it('discovers, registers, gets consent for read only, and calls tools with the token as a read key', async () => {
    const mcpUrl = new URL(`${server.base}/mcp`);
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'e2e', version: '1' }).connect(first)).rejects.toThrow(/Unauthorized/);
    expect(provider.info?.client_id).toMatch(/^mcpc_/);
    expect(provider.authorizationUrl!.toString()).toContain(`${server.base}/app/oauth/authorize?`);
    expect(await browser.page.isVisible('body')).toBe(true);

    const callback = await consent(provider.authorizationUrl!, 'read', 'Allow');
    const code = callback.searchParams.get('code')!;
    expect(code).toBeTruthy();
    await first.finishAuth(code);
    expect(provider.saved).toMatchObject({ token_type: 'Bearer', scope: 'read' });

    const client = new Client({ name: 'e2e', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const connectors = (await client.callTool({
      name: 'sync_list_connectors',
      arguments: {},
    })) as CallToolResult;
    expect(connectors.isError).toBeFalsy();
    const create = (await client.callTool({
      name: 'sync_create',
      arguments: { name: 'x', left: { connector: 'postgres' }, right: { connector: 'mysql' } },
    })) as CallToolResult;
    expect(create.structuredContent).toMatchObject({ error: { code: 'insufficient_scope' } });
    await client.close();

    const keys = await server.t.keys.list(owner.id);
    expect(keys).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'MCP: E2E agent', scope: 'read', revoked_at: null }),
      ]),
    );
    // A code is taken once.
    const again = await server.t.http().post('/oauth/token').type('form').send({
      grant_type: 'authorization_code',
      code,
      code_verifier: provider.verifier,
      client_id: provider.info!.client_id,
      redirect_uri: CALLBACK,
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  });

  it('sends the client back with access_denied when the owner denies', async () => {
    const provider = new MemoryProvider();
    const transport = new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), {
      authProvider: provider,
    });
    await expect(new Client({ name: 'e2e', version: '1' }).connect(transport)).rejects.toThrow(
      /Unauthorized/,
    );
    const callback = await consent(provider.authorizationUrl!, 'readwrite', 'Deny');
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('code')).toBeNull();
  });

  it('publishes the metadata the MCP authorization spec asks for and refuses what it does not support', async () => {
    const { t, base } = server;
    const resource = await t.http().get('/.well-known/oauth-protected-resource/mcp').expect(200);
    expect(resource.body).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    const metadata = await t.http().get('/.well-known/oauth-authorization-server').expect(200);
    expect(metadata.body).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/app/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
    });
    const badRedirect = await t
      .http()
      .post('/oauth/register')
      .send({ redirect_uris: ['http://evil.example/cb'] });
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.body.error).toBe('invalid_redirect_uri');
    const grant = await t.http().post('/oauth/token').type('form').send({ grant_type: 'password' });
    expect(grant.body.error).toBe('unsupported_grant_type');
    const forged = await t
      .http()
      .get('/app/oauth/authorize')
      .query({ client_id: 'mcpc_e30.forged', redirect_uri: CALLBACK, response_type: 'code' });
    expect(forged.status).toBe(303); // signed out: to the sign-in page first
  });
});
