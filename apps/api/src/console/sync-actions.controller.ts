import { Get, Param, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, type SyncDto } from '@lockstep/contracts';
import { SyncAccess } from '../syncs/sync-access';
import { SyncLifecycleService } from '../syncs/sync-lifecycle.service';
import { SyncsService } from '../syncs/syncs.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  ConsoleRedirect,
  csrfInput,
  sendPage,
  Session,
} from './console-session';
import { badge } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';

const overviewWith = (id: string, kind: 'notice' | 'error', message: string): ConsoleRedirect =>
  new ConsoleRedirect(`/app/syncs/${id}?${kind}=${encodeURIComponent(message)}`);

/**
 * The overview's Pause / Activate buttons for a sync's status: only the ones the lifecycle can take now (a
 * draft is started from its review page; a running initial sync is neither paused nor restarted here).
 */
export function syncActions(session: ConsoleSession, sync: SyncDto, working: boolean): SafeHtml {
  const base = `/app/syncs/${sync.id}`;
  const pause =
    sync.status === 'active' && !working
      ? html`<form method="post" action="${base}/pause">${csrfInput(session)}<button type="submit" class="secondary" id="pause">Pause sync</button></form>`
      : null;
  const activate =
    sync.status === 'paused'
      ? html`<form method="post" action="${base}/activate">${csrfInput(session)}<button type="submit" id="activate">Activate sync</button></form>`
      : null;
  return html`<section class="card" aria-labelledby="manage"><h2 id="manage">Manage</h2>
<div class="actions"><a class="button secondary" id="edit-mappings" href="${base}/mappings">Edit mappings</a>${pause}${activate}<a class="button danger" id="delete" href="${base}/delete">Delete sync…</a></div>
</section>`;
}

/** Pause, activate and delete a sync, on the same lifecycle and delete services as the REST endpoints. */
@ConsoleController('syncs')
export class SyncActionsConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly syncs: SyncsService,
    private readonly lifecycle: SyncLifecycleService,
  ) {}

  @Post(':id/pause')
  async pause(@Session() session: ConsoleSession, @Param('id') id: string): Promise<never> {
    await this.access.load(consoleAuth(session), id);
    try {
      await this.lifecycle.pause(consoleAuth(session), id);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === 'not_found') throw error;
      throw overviewWith(id, 'error', error.message);
    }
    throw overviewWith(id, 'notice', 'Paused: no changes are read or written until you activate it.');
  }

  @Post(':id/activate')
  async activate(@Session() session: ConsoleSession, @Param('id') id: string): Promise<never> {
    await this.access.load(consoleAuth(session), id);
    try {
      await this.lifecycle.activate(consoleAuth(session), id);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === 'not_found') throw error;
      throw overviewWith(id, 'error', error.message);
    }
    throw overviewWith(id, 'notice', 'Activated: the sync picks up changes again.');
  }

  /** The confirmation step: what deleting removes and what stays, and the one button that does it. */
  @Get(':id/delete')
  async confirmDelete(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
  ): Promise<void> {
    const sync = await this.syncs.get(consoleAuth(session), id);
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${sync.id}">${sync.name}</a> / delete</p>
<h1>Delete ${sync.name}?</h1>
<section class="card" aria-labelledby="consequences"><h2 id="consequences">What deleting does</h2>
<p>The sync (${badge(sync.status)}) stops at once and is removed with its stored credentials, its operations log, issues and held deletes. Lockstep then removes what it installed in both apps from every table no other sync reads: the change-capture triggers, the <code>lockstep_id</code> column it added, and its change log.</p>
<p><strong>What stays:</strong> the rows in both apps and the apps' own columns, and tables the sync created.</p>
<p>This cannot be undone.</p>
<form method="post" action="/app/syncs/${sync.id}/delete">${csrfInput(session)}
<div class="actions"><button type="submit" class="danger" id="confirm-delete">Delete this sync</button> <a href="/app/syncs/${sync.id}">Cancel</a></div>
</form>
</section>`;
    sendPage(response, 200, layout({ title: `Delete ${sync.name}`, session, nav: 'syncs', body }));
  }

  @Post(':id/delete')
  async remove(@Session() session: ConsoleSession, @Param('id') id: string): Promise<never> {
    const sync = await this.syncs.get(consoleAuth(session), id);
    await this.syncs.remove(consoleAuth(session), id);
    throw new ConsoleRedirect(`/app?notice=${encodeURIComponent(`Deleted the sync ${sync.name}.`)}`);
  }
}
