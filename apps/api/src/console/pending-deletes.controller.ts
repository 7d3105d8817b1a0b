import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, type PendingDeleteDto } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import {
  type PendingDeleteDecision,
  PendingDeletesService,
} from '../pending-deletes/pending-deletes.service';
import { type PairTables, RecordTables } from '../records/record-tables';
import { RecordsService } from '../records/records.service';
import { SyncAccess } from '../syncs/sync-access';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  ConsoleRedirect,
  csrfInput,
  sendPage,
  Session,
} from './console-session';
import { badge, when } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';

const DECISIONS: Record<PendingDeleteDecision, { label: string; done: string; style: string; help: string }> =
  {
    approve: {
      label: 'Approve delete',
      done: 'Approved: the surviving copy will be deleted.',
      style: 'danger',
      help: 'delete the surviving copy too',
    },
    ignore: {
      label: 'Ignore',
      done: 'Ignored: both stay as they are; it moved to the Ignored tab.',
      style: 'secondary',
      help: 'keep the surviving copy; do not ask again',
    },
    restore: {
      label: 'Restore',
      done: 'Restoring: the missing copy will be re-created from the surviving one.',
      style: 'secondary',
      help: 're-create the missing copy',
    },
  };

const isDecision = (value: string): value is PendingDeleteDecision => value in DECISIONS;

/** Deletes held for review: the queue, the Ignored tab, one held delete, and Approve / Ignore / Restore. */
@ConsoleController('syncs')
export class PendingDeletesConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly pendingDeletes: PendingDeletesService,
    private readonly records: RecordsService,
    private readonly recordTables: RecordTables,
  ) {}

  @Get(':id/pending-deletes')
  async list(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('tab') tab?: string,
    @Query('cursor') cursor?: string,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const { sync } = await this.access.load(auth, id);
    const ignored = tab === 'ignored';
    const base = `/app/syncs/${id}/pending-deletes`;
    let body: SafeHtml;
    try {
      const page = await this.pendingDeletes.list(auth, {
        sync: id,
        state: ignored ? 'ignored' : 'awaiting_review',
        limit: 50,
        cursor,
      });
      const tables = await this.pendingDeletes.tablePairs(
        sync.id,
        page.data.map((p) => p.record_id),
      );
      const pairs = await this.recordTables.pairs(sync);
      body = html`${this.heading(id, sync.name)}
<nav class="tabs" aria-label="Held deletes">
  <a href="${base}"${ignored ? null : html` aria-current="page"`}>Waiting for review</a>
  <a href="${base}?tab=ignored"${ignored ? html` aria-current="page"` : null}>Ignored</a>
</nav>
${
  page.data.length === 0
    ? html`<p class="muted" id="empty">${ignored ? 'No ignored deletes.' : 'Nothing is waiting for review.'}</p>`
    : html`<table>
  <thead><tr><th scope="col">Record</th><th scope="col">Missing on</th><th scope="col">Table</th><th scope="col">Detected missing</th>${ignored ? html`<th scope="col">Ignored</th>` : null}<th scope="col">Decide</th></tr></thead>
  <tbody>${page.data.map((entry) => this.row(session, id, entry, tableName(pairs, tables.get(entry.record_id), entry.missing_side), ignored))}</tbody>
</table>`
}
${page.has_more && page.next_cursor ? html`<p><a href="${base}?${ignored ? 'tab=ignored&' : ''}cursor=${encodeURIComponent(page.next_cursor)}">Older</a></p>` : null}`;
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== ErrorCode.DeleteApprovalDisabled) throw error;
      body = html`${this.heading(id, sync.name)}<p class="notice">This sync applies deletes automatically, so nothing is held for review.</p>`;
    }
    sendPage(response, 200, layout({ title: 'Pending deletes', session, nav: 'syncs', body, notice }));
  }

  @Get(':id/pending-deletes/:record')
  async one(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('record') recordId: string,
    @Res() response: Response,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const { sync } = await this.access.load(auth, id);
    if (!isId('record', recordId)) throw consoleNotFound();
    const status = await this.records.status(auth, recordId, { sync: id, table: undefined });
    const held = status.pending_delete;
    const body = html`${this.heading(id, sync.name)}
<section class="card" aria-labelledby="held"><h2 id="held">${status.name ?? recordId}</h2>
${
  held
    ? html`<dl class="facts">
  <dt>State</dt><dd>${badge(held.state)}</dd>
  <dt>Missing on</dt><dd>the ${held.missing_side} side${status.table[held.missing_side as 'left' | 'right'] ? html` (table ${status.table[held.missing_side as 'left' | 'right']!.name})` : null}</dd>
  <dt>Surviving copy</dt><dd>${held.record ? html`<a href="/app/syncs/${id}/records/${recordId}?side=${held.delete_from_side}">${held.record.name ?? held.record.remote_id}</a> on the ${held.delete_from_side} side` : 'none'}</dd>
  <dt>Detected missing</dt><dd>${when(held.pending_since)}</dd>
  ${held.ignored_at ? html`<dt>Ignored</dt><dd>${when(held.ignored_at)}</dd>` : null}
</dl>
<div class="actions">${this.buttons(session, id, recordId, held.state)}</div>`
    : html`<p>No delete of this record is waiting for a decision.</p>`
}
${
  status.pending_delete_events.length
    ? html`<h3>History</h3><ul>${status.pending_delete_events.map((event) => html`<li>${event.kind} ${when(event.at)}${event.actor ? ` by ${event.actor}` : ''}</li>`)}</ul>`
    : null
}
</section>`;
    sendPage(response, 200, layout({ title: 'Held delete', session, nav: 'syncs', body, notice }));
  }

  @Post(':id/pending-deletes/:record/:decision')
  async decide(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('record') recordId: string,
    @Param('decision') decision: string,
  ): Promise<never> {
    if (!isDecision(decision) || !isId('record', recordId)) throw consoleNotFound();
    const auth = consoleAuth(session);
    await this.access.load(auth, id);
    let notice: string;
    try {
      const view = await this.pendingDeletes.decide(auth, id, recordId, decision, 'console');
      notice = DECISIONS[decision].done;
      if (view.state === 'ignored' && decision !== 'ignore') notice = 'Nothing changed.';
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      notice = error.message;
    }
    throw new ConsoleRedirect(
      `/app/syncs/${id}/pending-deletes${decision === 'ignore' ? '' : ''}?notice=${encodeURIComponent(notice)}`,
    );
  }

  private heading(id: string, name: string): SafeHtml {
    return html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${name}</a> / pending deletes</p>
<h1>Deletes held for review</h1>
<p class="lead">A record disappeared on one side. Approve to delete the other copy too, Ignore to keep it, or Restore to re-create the missing copy.</p>`;
  }

  private row(
    session: ConsoleSession,
    syncId: string,
    entry: PendingDeleteDto,
    table: string,
    ignored: boolean,
  ): SafeHtml {
    const name = entry.record?.name ?? entry.record?.remote_id ?? entry.record_id;
    return html`<tr data-record="${entry.record_id}">
  <td><a href="/app/syncs/${syncId}/pending-deletes/${entry.record_id}">${name}</a>${entry.record ? html`<br><span class="muted">kept on the ${entry.record.side} side as <code>${entry.record.remote_id}</code></span>` : null}</td>
  <td>${entry.missing_side}</td>
  <td>${table}</td>
  <td>${when(entry.pending_since)}</td>
  ${ignored ? html`<td>${when(entry.ignored_at)}</td>` : null}
  <td><div class="actions">${this.buttons(session, syncId, entry.record_id, entry.state, name)}</div></td>
</tr>`;
  }

  private buttons(
    session: ConsoleSession,
    syncId: string,
    recordId: string,
    state: string,
    name = recordId,
  ): SafeHtml[] {
    const allowed: PendingDeleteDecision[] =
      state === 'ignored'
        ? ['approve', 'restore']
        : state === 'awaiting_review'
          ? ['approve', 'ignore', 'restore']
          : [];
    return allowed.map(
      (decision) =>
        html`<form method="post" action="/app/syncs/${syncId}/pending-deletes/${recordId}/${decision}" class="inline">${csrfInput(session)}<button type="submit" class="${DECISIONS[decision].style}" title="${DECISIONS[decision].help}" aria-label="${DECISIONS[decision].label}: ${name}">${DECISIONS[decision].label}</button></form>`,
    );
  }
}

function tableName(pairs: PairTables[], pair: number | undefined, side: string): string {
  const entry = pair === undefined ? undefined : pairs[pair];
  const table = entry ? (side === 'left' ? entry.left : entry.right) : null;
  return table?.name ?? '—';
}
