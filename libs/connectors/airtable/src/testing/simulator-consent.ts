/**
 * The authorize page of https://airtable.com/developers/web/api/oauth-reference ("Authorization request"):
 * `GET /oauth2/v1/authorize` checks the request (`OAuthGrants.authorize`) and shows the consent page, where
 * the signed-in person grants the integration access to their bases or cancels; the answer
 * (`POST /oauth2/v1/authorize`, the simulator's stand-in for Airtable's own page) sends the browser back to
 * the redirect URI with `code` and `state`, or with `error=access_denied`. A bad client or redirect URI is
 * answered on the page, never redirected. The person is the simulator's (`AirtableSimulator.person`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OAuthGrants } from './simulator-oauth';

export interface OAuthPerson {
  userId: string;
  name: string;
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
      `<body><main><h1>${escape(title)}</h1>${body}</main></body></html>`,
  );
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function authorizePage(
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
  grants: OAuthGrants,
  person: OAuthPerson,
): Promise<void> {
  if (req.method === 'POST') {
    const form = await readForm(req);
    const decision = form.get('decision');
    form.delete('decision');
    const outcome = grants.decide(form, decision === 'grant', person.userId);
    if (outcome.kind === 'redirect') {
      res.writeHead(302, { location: outcome.location, 'cache-control': 'no-store' }).end();
    } else
      page(
        res,
        400,
        'Something went wrong',
        `<p>${escape(outcome.kind === 'refused' ? outcome.message : '')}</p>`,
      );
    return;
  }
  const outcome = grants.authorize(query);
  if (outcome.kind === 'redirect') {
    res.writeHead(302, { location: outcome.location, 'cache-control': 'no-store' }).end();
    return;
  }
  if (outcome.kind === 'refused') {
    page(res, 400, 'Something went wrong', `<p>${escape(outcome.message)}</p>`);
    return;
  }
  const hidden = [...query.entries()]
    .map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`)
    .join('');
  page(
    res,
    200,
    `Grant access to ${outcome.integration.clientId}`,
    `<p>Signed in as ${escape(person.name)}.</p><p>The integration asks for: ` +
      `${outcome.scopes.map(escape).join(', ')}, on all your bases.</p>` +
      `<form method="post" action="/oauth2/v1/authorize">${hidden}` +
      `<button type="submit" name="decision" value="grant">Grant access</button> ` +
      `<button type="submit" name="decision" value="deny">Cancel</button></form>`,
  );
}
