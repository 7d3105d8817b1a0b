import { Get, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, type PendingActionDto, type SyncDto, type SyncStatusDto } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import type { SideName } from '@lockstep/persistence';
import { IssuesService } from '../issues/issues.service';
import { OperationsService } from '../operations/operations.service';
import { RecordsService } from '../records/records.service';
import { SchemaService } from '../schema/schema.service';
import { SideConnections } from '../syncs/side-connections';
import { isSideName, SyncAccess } from '../syncs/sync-access';
import { SyncsService } from '../syncs/syncs.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  csrfInput,
  sendPage,
  Session,
} from './console-session';
import { badge, sideLabel, value, when } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';
import { syncActions } from './sync-actions.controller';

interface PairProgressView {
  table_pair: number;
  left_table: string;
  right_table: string;
  stage: string;
  match_field: { left: string; right: string } | null;
  preview?: {
    left_records: number;
    right_records: number;
    matched: number;
    to_create_left: number;
    to_create_right: number;
    skipped: number;
  };
  processed?: { left: number; right: number };
  created?: { left: number; right: number };
  updated?: { left: number; right: number };
  failed?: number;
}

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

/** The syncs list, the sync overview (status, issues with Retry, operations, initial sync progress) and record pages. */
@ConsoleController()
export class SyncsConsoleController {
  constructor(
    private readonly syncs: SyncsService,
    private readonly issues: IssuesService,
    private readonly operations: OperationsService,
    private readonly records: RecordsService,
    private readonly access: SyncAccess,
    private readonly connections: SideConnections,
    private readonly schema: SchemaService,
  ) {}

  @Get()
  async list(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const { data } = await this.syncs.list(consoleAuth(session), 100, undefined);
    const body = html`<h1>Your syncs</h1>
<p><a class="button" href="/app/syncs/new" id="new-sync">New sync</a></p>
${
  data.length === 0
    ? html`<p class="lead">No syncs yet. Create one with <strong>New sync</strong>, or over the API (<code>POST /v1/sync/syncs</code>) by you or your agent with a key from <a href="/app/settings/api-keys">API keys</a>; the steps that need you show up here.</p>`
    : html`<table>
  <thead><tr><th scope="col">Sync</th><th scope="col">Status</th><th scope="col">Left</th><th scope="col">Right</th><th scope="col">Needs you</th><th scope="col">Open issues</th></tr></thead>
  <tbody>${data.map(
    (sync) => html`<tr>
    <td><a href="/app/syncs/${sync.id}">${sync.name}</a><br><code>${sync.id}</code></td>
    <td>${badge(sync.status)}</td>
    <td>${sideSummary(sync, 'left')}</td>
    <td>${sideSummary(sync, 'right')}</td>
    <td>${sync.pending_actions.length === 0 ? 'nothing' : sync.pending_actions.map((a) => html`<a href="${localPath(a.url)}">${a.type === 'user_confirmation' ? 'review and start' : `connect ${a.side}`}</a> `)}</td>
    <td>${sync.open_issues}</td>
  </tr>`,
  )}</tbody>
</table>`
}`;
    sendPage(response, 200, layout({ title: 'Syncs', session, nav: 'syncs', body, notice }));
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
    const [status, issues, operations] = await Promise.all([
      this.syncs.status(auth, id),
      this.issues.list(auth, { sync: id, limit: 50 }),
      this.operations.list(auth, { sync: id, limit: 20 }),
    ]);
    const phase = status.initial_sync.phase;
    const working = sync.activating || phase === 'preparing' || phase === 'running';
    const body = html`<p class="muted"><a href="/app">Syncs</a> / ${sync.name}</p>
<h1>${sync.name}</h1>
<div class="grid">
  <section class="card" aria-labelledby="state"><h2 id="state">Status</h2>
    <dl class="facts">
      <dt>Status</dt><dd id="sync-status">${badge(sync.status)}${sync.activating ? html` ${badge('preparing', 'activating')}` : null}</dd>
      <dt>Initial sync</dt><dd id="initial-sync">${badge(phase, phase.replace('_', ' '))}</dd>
      <dt>Left</dt><dd>${sideSummary(sync, 'left')}</dd>
      <dt>Right</dt><dd>${sideSummary(sync, 'right')}</dd>
      <dt>Open issues</dt><dd>${sync.open_issues}</dd>
      <dt>Deletes</dt><dd>${
        sync.delete_approval === 'review_required'
          ? html`held for review: <a href="/app/syncs/${sync.id}/pending-deletes">${sync.pending_deletes ?? 0} waiting</a>`
          : 'applied automatically'
      }</dd>
    </dl>
  </section>
  <section class="card" aria-labelledby="sides-state"><h2 id="sides-state">Change detection</h2>
    <dl class="facts">${(['left', 'right'] as const).map(
      (side) =>
        html`<dt>${sideLabel(side)}</dt><dd>${status[side].polling_state}${status[side].change_detection ? html` (${status[side].change_detection!.replace('_', ' ')})` : null}<br><span class="muted">last change ${when(status[side].last_change_detected_at, 'none yet')}</span></dd>`,
    )}
      <dt>Queued</dt><dd>${status.pending_pushes.push} push, ${status.pending_pushes.refetch} refetch, ${status.pending_pushes.verify_delete} delete checks</dd>
    </dl>
  </section>
</div>
${pendingActions(sync.pending_actions)}
${syncActions(session, sync, working)}
${this.progress(status, working)}
<section aria-labelledby="issues"><h2 id="issues">Open issues</h2>
<p><a href="/app/syncs/${sync.id}/issues" id="all-issues">All issues, by type</a></p>
${
  issues.data.length === 0
    ? html`<p class="muted">No open issues.</p>`
    : issues.data.map(
        (issue) => html`<article class="card" aria-labelledby="${issue.id}-title">
  <h3 id="${issue.id}-title">${issue.message}</h3>
  <p class="muted">${issue.type} · <code>${issue.code}</code>${issue.side ? html` · ${issue.side} side` : null}${issue.table ? html` · table ${issue.table.name}` : null}${issue.record ? html` · record <a href="${localPath(issue.record.url)}">${issue.record.name ?? issue.record.remote_id ?? issue.record.id}</a>` : null} · seen ${issue.occurrence_count}× , last ${when(issue.last_seen_at)}</p>
  <p>${issue.remediation.explanation}</p>
  <p><strong>What to do:</strong> ${issue.remediation.suggested_action}</p>
  ${issue.remediation.links.length ? html`<ul>${issue.remediation.links.map((link) => html`<li><a href="${localPath(link.url)}">${link.name}</a></li>`)}</ul>` : null}
  <form method="post" action="/app/syncs/${sync.id}/issues/${issue.id}/retry">${csrfInput(session)}<button type="submit" class="secondary" aria-label="Retry: ${issue.message}">Retry</button></form>
</article>`,
      )
}
</section>
<section aria-labelledby="ops"><h2 id="ops">Recent operations</h2>
<p><a href="/app/syncs/${sync.id}/operations" id="all-operations">All operations, with filters</a></p>
${
  operations.data.length === 0
    ? html`<p class="muted">No operations yet.</p>`
    : html`<table>
  <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Side</th><th scope="col">Table</th><th scope="col">Record</th></tr></thead>
  <tbody>${operations.data.map(
    (
      op,
    ) => html`<tr><td>${when(op.occurred_at)}</td><td>${op.action} (${op.trigger})</td><td>${op.side ?? '—'}</td><td>${op.table?.name ?? '—'}</td>
      <td>${op.record_id && op.side ? html`<a href="/app/syncs/${sync.id}/records/${op.record_id}?side=${op.side}">${op.record.name ?? op.record.remote_id ?? op.record_id}</a>` : (op.record.name ?? op.record.remote_id ?? '—')}</td></tr>`,
  )}</tbody>
</table>`
}
</section>`;
    sendPage(
      response,
      200,
      layout({
        title: sync.name,
        session,
        nav: 'syncs',
        body,
        notice,
        error,
        refreshSeconds: working ? 2 : undefined,
      }),
    );
  }

  @Get('syncs/:id/records/:record')
  async record(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('record') recordId: string,
    @Res() response: Response,
    @Query('side') sideParam?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    if (!isId('record', recordId)) throw consoleNotFound();
    const status = await this.records.status(auth, recordId, { sync: id, table: undefined });
    const side: SideName = isSideName(sideParam) ? sideParam : status.left ? 'left' : 'right';
    const copy = status[side];
    const tableRef = status.table[side];
    let values: { name: string; value: string }[] | null = null;
    let readError: string | null = null;
    const entity = loaded.sides[side];
    if (copy && !copy.is_deleted && tableRef && entity?.credentials) {
      try {
        const table = await this.schema.cachedTable(id, tableRef.id);
        if (table) {
          const [found] = await this.connections.withStoredSide(entity, (connection) =>
            connection.readByIds(table.remoteId, [copy.remote_id]),
          );
          const names = new Map(
            (await this.schema.cachedFields(table.id)).map((field) => [field.remoteId, field.name]),
          );
          values = found
            ? Object.entries(found.values).map(([field, v]) => ({
                name: names.get(field) ?? field,
                value: value(v),
              }))
            : null;
        }
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        readError = error.message;
      }
    }
    const other: SideName = side === 'left' ? 'right' : 'left';
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${loaded.sync.name}</a> / record</p>
<h1>${status.name ?? copy?.remote_id ?? recordId}</h1>
<p class="lead">The ${side} side's copy${tableRef ? html` in table <strong>${tableRef.name}</strong>` : null}. ${status[other] ? html`<a href="/app/syncs/${id}/records/${recordId}?side=${other}">Show the ${other} side's copy</a>` : null}</p>
${status.pending_delete ? html`<p class="warning">A delete of this record is held for review. <a href="/app/syncs/${id}/pending-deletes/${recordId}">Review it</a></p>` : null}
<section class="card" aria-labelledby="copy"><h2 id="copy">${sideLabel(side)} copy</h2>
${
  !copy
    ? html`<p>The ${side} side has no copy of this record.</p>`
    : html`<dl class="facts"><dt>Id in the app</dt><dd><code>${copy.remote_id}</code></dd><dt>State</dt><dd>${copy.is_deleted ? badge('error', 'deleted') : badge('ok', 'present')}${copy.is_filtered ? ' (filtered out)' : ''}</dd></dl>
${readError ? html`<p class="error" role="alert">${readError}</p>` : null}
${values ? html`<table><caption>Values now</caption><thead><tr><th scope="col">Field</th><th scope="col">Value</th></tr></thead><tbody>${values.map((v) => html`<tr><th scope="row">${v.name}</th><td>${v.value}</td></tr>`)}</tbody></table>` : null}`
}
</section>
<section aria-labelledby="rec-ops"><h2 id="rec-ops">Recent operations</h2>
${
  status.operations.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<table><thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Side</th></tr></thead><tbody>${status.operations.map((op) => html`<tr><td>${when(op.occurred_at)}</td><td>${op.action} (${op.trigger})</td><td>${op.side ?? '—'}</td></tr>`)}</tbody></table>`
}
</section>`;
    sendPage(response, 200, layout({ title: 'Record', session, nav: 'syncs', body }));
  }

  private progress(status: SyncStatusDto, working: boolean): SafeHtml {
    const phase = status.initial_sync.phase;
    if (phase === 'not_started') return html``;
    const pairs = ((status.initial_sync.progress as { pairs?: PairProgressView[] } | null)?.pairs ??
      []) as PairProgressView[];
    return html`<section class="card" aria-labelledby="initial"><h2 id="initial">Initial sync</h2>
<p>${phase === 'done' ? html`Finished ${when(status.initial_sync.finished_at)}.` : html`Started ${when(status.initial_sync.started_at)}; ${phase}.`}${working ? html` <span class="muted">This page refreshes itself every 2 seconds while it runs.</span>` : null}</p>
${pairs.map((pair) => {
  const total = (pair.preview?.left_records ?? 0) + (pair.preview?.right_records ?? 0);
  const done = (pair.processed?.left ?? 0) + (pair.processed?.right ?? 0);
  return html`<h3>${pair.left_table} ⇄ ${pair.right_table}</h3>
${
  pair.preview
    ? html`<p>Preview: ${pair.preview.left_records} left, ${pair.preview.right_records} right records; ${pair.preview.matched} matched${pair.match_field ? html` on ${pair.match_field.left} = ${pair.match_field.right}` : null}; ${pair.preview.to_create_right} to create on the right, ${pair.preview.to_create_left} on the left; ${pair.preview.skipped} skipped.</p>`
    : null
}
<label for="progress-${pair.table_pair}">Progress (${pair.stage === 'done' ? 'done' : `${done} of ${total} records`})</label>
<progress id="progress-${pair.table_pair}" max="${Math.max(total, 1)}" value="${pair.stage === 'done' ? Math.max(total, 1) : done}"></progress>
${pair.created ? html`<p class="muted">Created ${pair.created.left} left, ${pair.created.right} right; updated ${pair.updated?.left ?? 0} left, ${pair.updated?.right ?? 0} right; ${pair.failed ?? 0} failed.</p>` : null}`;
})}
</section>`;
  }
}
