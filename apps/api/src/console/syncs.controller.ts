import { Get, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { PendingDeleteDto, SyncDto } from '@lockstep/contracts';
import { IssuesService } from '../issues/issues.service';
import { OperationsService } from '../operations/operations.service';
import { PendingDeletesService } from '../pending-deletes/pending-deletes.service';
import { SyncsService } from '../syncs/syncs.service';
import type { AuthContext } from '../common/auth/auth-context';
import { type ConsoleSession, consoleAuth, ConsoleController, sendPage, Session } from './console-session';
import { badge } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';
import { syncActions } from './sync-actions.controller';
import { pendingActions, sideSummary } from './sync-links';
import {
  changeDetectionCard,
  heldDeletesSection,
  initialSyncSection,
  issuesSection,
  needsYou,
  operationsSection,
  PaceSamples,
  statusCard,
} from './sync-overview';

// Other console pages import these from here.
export { localPath, pendingActions, sideSummary } from './sync-links';

/** Held deletes shown on the overview; the rest are on the pending deletes page. */
const OVERVIEW_HELD = 5;

function listBody(syncs: SyncDto[]): SafeHtml {
  return html`<h1>Your syncs</h1>
<p><a class="button" href="/app/syncs/new" id="new-sync">New sync</a></p>
${
  syncs.length === 0
    ? html`<p class="lead">No syncs yet. Create one with <strong>New sync</strong>, or over the API (<code>POST /v1/sync/syncs</code>) by you or your agent with a key from <a href="/app/settings/api-keys">API keys</a>; the steps that need you show up here.</p>`
    : html`<table id="syncs">
  <thead><tr><th scope="col">Sync</th><th scope="col">Status</th><th scope="col">Left</th><th scope="col">Right</th><th scope="col">Needs you <span class="hint">actions, held deletes, open issues</span></th></tr></thead>
  <tbody>${syncs.map(
    (sync) => html`<tr data-sync="${sync.id}">
    <td><a href="/app/syncs/${sync.id}">${sync.name}</a><br><code>${sync.id}</code></td>
    <td>${badge(sync.status)}</td>
    <td>${sideSummary(sync, 'left')}</td>
    <td>${sideSummary(sync, 'right')}</td>
    <td class="needs-you">${needsYou(sync)}</td>
  </tr>`,
  )}</tbody>
</table>`
}`;
}

/** The syncs list ("Needs you" counts) and the sync overview (progress, detection, work waiting, issues, log). */
@ConsoleController()
export class SyncsConsoleController {
  /** Records done as seen in earlier renders, for the initial sync's recent rate (one per API process). */
  private readonly paces = new PaceSamples();

  constructor(
    private readonly syncs: SyncsService,
    private readonly issues: IssuesService,
    private readonly operations: OperationsService,
    private readonly pendingDeletes: PendingDeletesService,
  ) {}

  @Get()
  async list(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const { data } = await this.syncs.list(consoleAuth(session), 100, undefined);
    sendPage(response, 200, layout({ title: 'Syncs', session, nav: 'syncs', body: listBody(data), notice }));
  }

  @Get('syncs/:id')
  async overview(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('notice') notice?: string,
    @Query('error') error?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const sync = await this.syncs.get(auth, id);
    const [status, issues, operations, held] = await Promise.all([
      this.syncs.status(auth, id),
      this.issues.list(auth, { sync: id, limit: 50 }),
      this.operations.list(auth, { sync: id, limit: 20 }),
      this.held(auth, sync),
    ]);
    const phase = status.initial_sync.phase;
    const working = sync.activating || phase === 'preparing' || phase === 'running';
    const pace = this.paces.pace(status);
    if (phase !== 'running') this.paces.forget(sync.id);
    const body = html`<p class="muted"><a href="/app">Syncs</a> / ${sync.name}</p>
<h1>${sync.name}</h1>
<div class="grid">${statusCard(sync, status)}${changeDetectionCard(status)}</div>
${pendingActions(sync.pending_actions)}
${syncActions(session, sync, working)}
${initialSyncSection(status, working, pace)}
${heldDeletesSection(sync, held)}
${issuesSection(session, sync.id, issues.data)}
${operationsSection(sync.id, operations.data)}`;
    const refreshSeconds = working ? 2 : undefined;
    sendPage(
      response,
      200,
      layout({ title: sync.name, session, nav: 'syncs', body, notice, error, refreshSeconds }),
    );
  }

  /** The first held deletes waiting for review (none under `auto_approve`, which has no queue). */
  private async held(auth: AuthContext, sync: SyncDto): Promise<PendingDeleteDto[]> {
    if (sync.delete_approval !== 'review_required' || !sync.pending_deletes) return [];
    const page = await this.pendingDeletes.list(auth, {
      sync: sync.id,
      state: 'awaiting_review',
      limit: OVERVIEW_HELD,
      cursor: undefined,
    });
    return page.data;
  }
}
