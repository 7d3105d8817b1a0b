/**
 * A real OAuth 2.0 / OpenID Connect authorization server (oidc-provider) standing in for an app's sign-in in
 * the console OAuth tests. Run as its own process (oidc-provider is ESM-only; Jest runs CommonJS):
 *
 *   REDIRECT_URI=... CLIENT_ID=... CLIENT_SECRET=... node oauth-provider.mjs
 *
 * It listens on 127.0.0.1 (a free port) with the issuer http://localhost:<port> and prints
 * `READY <issuer>` once it serves. Its own login and consent pages check a password and let the user allow
 * or deny. Users: `ada` (one workspace) and `ben` (two workspaces), password `open sesame`.
 */
import http from 'node:http';
import Provider from 'oidc-provider';

const { REDIRECT_URI, CLIENT_ID, CLIENT_SECRET } = process.env;
if (!REDIRECT_URI || !CLIENT_ID || !CLIENT_SECRET) throw new Error('REDIRECT_URI, CLIENT_ID and CLIENT_SECRET are required');

const PASSWORD = 'open sesame';
const USERS = {
  ada: { name: 'Ada Lovelace', workspaces: [{ id: 'ws_engine', name: 'Analytical Engine' }] },
  ben: { name: 'Ben Franklin', workspaces: [{ id: 'ws_press', name: 'Printing Press' }, { id: 'ws_post', name: 'Post Office' }] },
};

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function page(res, title, body) {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)} - Stand-in App</title>
<style>body{font:16px system-ui,sans-serif;background:#fdf6e3;color:#222;display:grid;place-items:center;min-height:90vh}
main{background:#fff;border:1px solid #ddd;border-radius:12px;padding:2rem;width:24rem;box-shadow:0 2px 12px #0001}
h1{margin-top:0;font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{margin-top:1rem;margin-right:.5rem;padding:.6rem 1.2rem;font:inherit;border-radius:6px;border:1px solid #2a6;background:#2a6;color:#fff}
button.deny{background:#fff;color:#a22;border-color:#a22}.error{color:#a22}</style></head>
<body><main><p><strong>Stand-in App</strong></p>${body}</main></body></html>`);
}

async function readForm(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

function loginPage(res, uid, error) {
  page(res, 'Sign in', `<h1>Sign in to Stand-in App</h1>${error ? `<p class="error" role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>`);
}

function consentPage(res, uid, details, clientId) {
  const scopes = (details.missingOIDCScope ?? []).filter((scope) => scope !== 'openid');
  page(res, 'Allow access', `<h1>Allow ${escape(clientId)} to access your account?</h1>
<p>It asks for: ${scopes.map(escape).join(', ') || 'your identity'}.</p>
<form method="post" action="/interaction/${escape(uid)}/confirm" style="display:inline"><button type="submit">Allow</button></form>
<form method="post" action="/interaction/${escape(uid)}/abort" style="display:inline"><button type="submit" class="deny">Deny</button></form>`);
}

let provider;

async function interaction(req, res, url) {
  const [, , uid, action] = url.pathname.split('/');
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  if (req.method === 'GET') {
    if (details.prompt.name === 'login') return loginPage(res, uid);
    return consentPage(res, uid, details.prompt.details, details.params.client_id);
  }
  if (action === 'login') {
    const form = await readForm(req);
    const user = form.get('username') ?? '';
    if (!USERS[user] || form.get('password') !== PASSWORD) return loginPage(res, uid, 'Wrong username or password.');
    return provider.interactionFinished(req, res, { login: { accountId: user } }, { mergeWithLastSubmission: false });
  }
  if (action === 'abort') {
    return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The user declined to give access' }, { mergeWithLastSubmission: false });
  }
  if (action === 'confirm') {
    const { prompt: { details: missing }, grantId, session, params } = details;
    const grant = grantId ? await provider.Grant.find(grantId) : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    if (missing.missingResourceScopes) for (const [indicator, scope] of Object.entries(missing.missingResourceScopes)) grant.addResourceScope(indicator, scope.join(' '));
    return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
  }
  res.statusCode = 404;
  res.end('not found');
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const work = url.pathname.startsWith('/interaction/') ? interaction(req, res, url) : Promise.resolve(provider.callback()(req, res));
  work.catch((error) => {
    process.stderr.write(`oauth-provider: ${error.stack ?? error}\n`);
    if (!res.headersSent) res.statusCode = 500;
    res.end('error');
  });
});

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://localhost:${server.address().port}`;
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [REDIRECT_URI],
        response_types: ['code'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    findAccount: async (_ctx, id) => (USERS[id] ? { accountId: id, claims: async () => ({ sub: id, name: USERS[id].name, workspaces: USERS[id].workspaces }) } : undefined),
    claims: { openid: ['sub'], profile: ['name'], workspaces: ['workspaces'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    pkce: { required: () => true },
    cookies: { keys: ['stand-in-cookie-key-for-tests-only'] },
  });
  process.stdout.write(`READY ${issuer}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
