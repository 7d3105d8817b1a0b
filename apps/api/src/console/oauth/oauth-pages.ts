import { html, type SafeHtml } from '../html';
import { layout } from '../layout';
import { type ConsoleSession, csrfInput } from '../console-session';

/** A sign-in that could not finish: what happened, that nothing was connected, and a way to try again. */
export function failurePage(
  session: ConsoleSession,
  input: { title: string; message: string; retryUrl: string | null },
): SafeHtml {
  return layout({
    title: input.title,
    session,
    nav: 'syncs',
    body: html`<section class="narrow">
<h1>${input.title}</h1>
<p class="lead">${input.message}</p>
<div class="actions">
  ${input.retryUrl ? html`<a class="button" href="${input.retryUrl}">Try again</a>` : null}
  <a class="button secondary" href="/app">Back to your syncs</a>
</div>
</section>`,
  });
}

/** After signing in to an app account that reaches several bases: the person picks the one for this side. */
export function basePickerPage(
  session: ConsoleSession,
  input: {
    handle: string;
    connectorName: string;
    side: string;
    syncName: string;
    bases: { id: string; name: string }[];
    cancelUrl: string;
  },
): SafeHtml {
  return layout({
    title: `Choose a ${input.connectorName} base`,
    session,
    nav: 'syncs',
    body: html`<section class="narrow">
<h1>Choose what to sync</h1>
<p class="lead">You are signed in to ${input.connectorName}. Pick the base the ${input.side} side of “${input.syncName}” uses.</p>
<form class="card" method="post" action="/app/oauth/base">
  ${csrfInput(session)}
  <input type="hidden" name="flow" value="${input.handle}">
  <fieldset>
    <legend>${input.connectorName} bases this account reaches</legend>
    ${input.bases.map(
      (base, index) =>
        html`<label class="choice"><input type="radio" name="base" value="${base.id}"${index === 0 ? html` checked` : null}> ${base.name} <span class="muted">(${base.id})</span></label>`,
    )}
  </fieldset>
  <div class="actions"><button type="submit">Use this base</button> <a class="button secondary" href="${input.cancelUrl}">Cancel</a></div>
</form>
</section>`,
  });
}

/**
 * The connect page's "Sign in with ‹app›" (POST /app/oauth/start) for a connector with a browser sign-in:
 * the only way for `oauth` connectors and for a side already connected by signing in (it keeps that method);
 * offered beside the credential form for a side not connected yet (`alsoToken`).
 */
export function signInSection(
  session: ConsoleSession,
  input: {
    syncId: string;
    side: string;
    connector: { type: string; displayName: string };
    alsoToken: boolean;
  },
): SafeHtml {
  const name = input.connector.displayName;
  return html`<section class="card" aria-labelledby="oauth"><h2 id="oauth">${input.alsoToken ? `Sign in with ${name}` : name}</h2>
<p>You sign in to ${name} in this browser and allow Lockstep access; you come back here afterwards.${input.alsoToken ? ` A side connected this way keeps signing in; or paste a token below instead.` : null}</p>
<form method="post" action="/app/oauth/start">
  ${csrfInput(session)}
  <input type="hidden" name="sync" value="${input.syncId}">
  <input type="hidden" name="side" value="${input.side}">
  <input type="hidden" name="connector" value="${input.connector.type}">
  <button type="submit">Sign in with ${name}</button>
</form></section>`;
}
