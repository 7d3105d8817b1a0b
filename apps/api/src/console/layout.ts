import { CSRF_FIELD } from './console-csrf';
import { html, type HtmlValue, type SafeHtml } from './html';

export interface LayoutInput {
  title: string;
  /** The signed-in person (navigation and sign-out); absent on the sign-in page. */
  session?: { email: string; csrfToken: string };
  body: HtmlValue;
  /** A success message shown above the content (role=status). */
  notice?: string | null;
  /** An error message shown above the content (role=alert). */
  error?: string | null;
  /**
   * Update the page every few seconds (the initial sync's progress while it runs): in place by the console's
   * script, by a meta refresh without JavaScript.
   */
  refreshSeconds?: number;
  /** Which navigation entry is current. */
  nav?: 'syncs' | 'keys' | 'live-exports';
}

/** The page frame of every console page: skip link, header with navigation and sign-out, main landmark. */
export function layout(input: LayoutInput): SafeHtml {
  const { session } = input;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${input.refreshSeconds ? html`<noscript><meta http-equiv="refresh" content="${input.refreshSeconds}"></noscript>` : null}
<title>${input.title} · Lockstep</title>
<link rel="stylesheet" href="/app/assets/console.css">
<script src="/app/assets/console.js" defer></script>
</head>
<body${input.refreshSeconds ? html` data-refresh="${input.refreshSeconds}"` : null}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/app"><span aria-hidden="true">⇄</span> Lockstep</a>
  ${
    session
      ? html`<nav aria-label="Main">
    <a href="/app"${input.nav === 'syncs' ? html` aria-current="page"` : null}>Syncs</a>
    <a href="/app/live-exports"${input.nav === 'live-exports' ? html` aria-current="page"` : null}>Live exports</a>
    <a href="/app/settings/api-keys"${input.nav === 'keys' ? html` aria-current="page"` : null}>API keys</a>
  </nav>
  <form class="signout" method="post" action="/app/sign-out">
    <input type="hidden" name="${CSRF_FIELD}" value="${session.csrfToken}">
    <span class="who">${session.email}</span>
    <button type="submit" class="link">Sign out</button>
  </form>`
      : null
  }
</header>
<main id="main" tabindex="-1">
${input.notice ? html`<p class="notice" role="status">${input.notice}</p>` : null}
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : null}
${input.body}
</main>
</body>
</html>
`;
}
