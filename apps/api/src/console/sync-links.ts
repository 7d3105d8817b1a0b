import type { PendingActionDto, SyncDto } from '@lockstep/contracts';
import type { SideName } from '@lockstep/persistence';
import { badge } from './format';
import { html, type SafeHtml } from './html';

/** The sync's sides in one line each. */
export function sideSummary(sync: SyncDto, side: SideName): SafeHtml {
  const entity = sync[side];
  if (!entity) {
    const action = sync.pending_actions.find((a) => a.type === 'user_authorization' && a.side === side);
    return html`<span class="badge warn">not connected</span>${action ? html` <a href="${localPath(action.url)}">Connect ${action.connector ?? ''}</a>` : null}`;
  }
  return html`${entity.connector_name} · <code>${entity.base.name}</code> ${entity.auth_status === 'ok' ? null : badge('error', `credentials ${entity.auth_error ?? 'error'}`)}`;
}

/** A console link the API hands out (absolute, on PUBLIC_URL) as a local path. */
export function localPath(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return url;
  }
}

export function pendingActions(actions: PendingActionDto[]): SafeHtml {
  if (actions.length === 0) return html``;
  return html`<section class="card" aria-labelledby="todo"><h2 id="todo">Waiting for you</h2><ul>
${actions.map((action) => html`<li><a href="${localPath(action.url)}">${action.type === 'user_confirmation' ? 'Review and start the sync' : `Connect the ${action.side} side (${action.connector ?? ''})`}</a></li>`)}
</ul></section>`;
}
