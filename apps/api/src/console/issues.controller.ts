import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { type IssueDto, ISSUE_TYPES } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { IssuesService } from '../issues/issues.service';
import { OperationsService } from '../operations/operations.service';
import { SyncAccess } from '../syncs/sync-access';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  ConsoleRedirect,
  csrfInput,
  Form,
  sendPage,
  Session,
} from './console-session';
import { badge, whenExact } from './format';
import { localPath } from './syncs.controller';
import { html, type SafeHtml } from './html';
import { layout } from './layout';

type IssueType = (typeof ISSUE_TYPES)[number];

const TYPE_LABELS: Record<IssueType, string> = {
  connection: 'Connection',
  record: 'Records',
  webhook: 'Webhooks',
  sync_preview: 'Sync preview',
  other: 'Other',
};

const isIssueType = (value: unknown): value is IssueType => ISSUE_TYPES.includes(value as IssueType);

function retryForm(session: ConsoleSession, issue: IssueDto, from: 'issue' | 'issues'): SafeHtml {
  return html`<form method="post" action="/app/syncs/${issue.sync_id}/issues/${issue.id}/retry">${csrfInput(session)}<input type="hidden" name="from" value="${from}"><button type="submit" class="secondary" aria-label="Retry: ${issue.message}">Retry</button></form>`;
}

function where(issue: IssueDto): SafeHtml {
  return html`${issue.side ? html`${issue.side} side (${issue.connector})` : 'whole sync'}${issue.table ? html` · table ${issue.table.name}` : null}${issue.record ? html` · record <a href="${localPath(issue.record.url)}">${issue.record.name ?? issue.record.remote_id ?? issue.record.id}</a>` : null}`;
}

/** A sync's open issues by type, one issue with its remediation, and Retry with what happened after it. */
@ConsoleController('syncs')
export class IssuesConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly issues: IssuesService,
    private readonly operations: OperationsService,
  ) {}

  @Get(':id/issues')
  async list(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('type') typeParam?: string,
    @Query('cursor') cursor?: string,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const { sync } = await this.access.load(auth, id);
    const type = isIssueType(typeParam) ? typeParam : undefined;
    const page = await this.issues.list(auth, { sync: id, type, cursor, limit: 50 });
    const base = `/app/syncs/${id}/issues`;
    const groups = ISSUE_TYPES.map((t) => ({
      type: t,
      issues: page.data.filter((i) => i.type === t),
    })).filter((group) => group.issues.length > 0);
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${sync.name}</a> / issues</p>
<h1>Open issues</h1>
<nav class="tabs" aria-label="Issue types">
  <a href="${base}"${type ? null : html` aria-current="page"`}>All</a>
  ${ISSUE_TYPES.map((t) => html`<a href="${base}?type=${t}"${type === t ? html` aria-current="page"` : null}>${TYPE_LABELS[t]}</a>`)}
</nav>
${groups.length === 0 ? html`<p class="muted" id="no-issues">No open issues${type ? ` of this type` : ''}.</p>` : null}
${groups.map(
  (
    group,
  ) => html`<section aria-labelledby="type-${group.type}"><h2 id="type-${group.type}">${TYPE_LABELS[group.type]}</h2>
<table><thead><tr><th scope="col">Issue</th><th scope="col">Where</th><th scope="col">Seen</th><th scope="col">Retry</th></tr></thead>
<tbody>${group.issues.map(
    (issue) =>
      html`<tr data-issue="${issue.id}"><td><a href="${base}/${issue.id}">${issue.message}</a><br><code>${issue.code}</code></td><td>${where(issue)}</td><td>${issue.occurrence_count}×, last ${whenExact(issue.last_seen_at)}</td><td>${retryForm(session, issue, 'issues')}</td></tr>`,
  )}</tbody></table>
</section>`,
)}
${page.has_more && page.next_cursor ? html`<p><a href="${base}?${type ? `type=${type}&` : ''}cursor=${encodeURIComponent(page.next_cursor)}">More issues</a></p>` : null}`;
    sendPage(response, 200, layout({ title: `Issues · ${sync.name}`, session, nav: 'syncs', body, notice }));
  }

  @Get(':id/issues/:issue')
  async one(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('issue') issueId: string,
    @Res() response: Response,
    @Query('retried') retried?: string,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const { sync } = await this.access.load(auth, id);
    const issue = await this.issueOf(session, id, issueId);
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${sync.name}</a> / <a href="/app/syncs/${id}/issues">issues</a> / ${issue.id}</p>
<h1>${issue.message}</h1>
<dl class="facts">
  <dt>State</dt><dd id="issue-state">${issue.resolved_at ? html`${badge('ok', 'resolved')} ${whenExact(issue.resolved_at)}` : badge('error', 'open')}</dd>
  <dt>Type</dt><dd>${TYPE_LABELS[issue.type as IssueType] ?? issue.type} · <code>${issue.code}</code></dd>
  <dt>Where</dt><dd>${where(issue)}</dd>
  <dt>Seen</dt><dd>${issue.occurrence_count}×, first ${whenExact(issue.first_seen_at)}, last ${whenExact(issue.last_seen_at)}</dd>
</dl>
<section class="card" aria-labelledby="remedy"><h2 id="remedy">What it means and what to do</h2>
<p id="explanation">${issue.remediation.explanation}</p>
<p id="suggested"><strong>What to do:</strong> ${issue.remediation.suggested_action}</p>
${issue.remediation.links.length ? html`<ul id="remedy-links">${issue.remediation.links.map((link) => html`<li><a href="${localPath(link.url)}">${link.name}</a></li>`)}</ul>` : null}
${issue.resolved_at ? null : html`<div class="actions">${retryForm(session, issue, 'issue')}</div>`}
</section>
${retried ? await this.afterRetry(session, issue, retried) : null}`;
    sendPage(response, 200, layout({ title: issue.message, session, nav: 'syncs', body, notice }));
  }

  @Post(':id/issues/:issue/retry')
  async retry(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('issue') issueId: string,
    @Form() form: Record<string, string>,
  ): Promise<never> {
    await this.issueOf(session, id, issueId);
    const result = await this.issues.retry(consoleAuth(session), issueId);
    const notice = result.already_resolved
      ? 'That issue was already resolved.'
      : 'Retrying: the issue is cleared; if the cause persists it will be raised again.';
    const query = `notice=${encodeURIComponent(notice)}`;
    if (form['from'] === 'issue')
      throw new ConsoleRedirect(
        `/app/syncs/${id}/issues/${issueId}?retried=${encodeURIComponent(result.resolved_at)}&${query}`,
      );
    if (form['from'] === 'issues') throw new ConsoleRedirect(`/app/syncs/${id}/issues?${query}`);
    throw new ConsoleRedirect(`/app/syncs/${id}?${query}`);
  }

  /** The issue of this sync (the account's, by SyncAccess); the 404 page otherwise. */
  private async issueOf(session: ConsoleSession, syncId: string, issueId: string): Promise<IssueDto> {
    const auth = consoleAuth(session);
    await this.access.load(auth, syncId);
    if (!isId('issue', issueId)) throw consoleNotFound();
    const issue = await this.issues.get(auth, issueId);
    if (issue.sync_id !== syncId) throw consoleNotFound();
    return issue;
  }

  /**
   * What happened since the retry: whether the issue came back (the engine reopens the same issue when the
   * cause persists) and, for a record, the operations the engine ran on it since.
   */
  private async afterRetry(session: ConsoleSession, issue: IssueDto, retried: string): Promise<SafeHtml> {
    const since = Number.isNaN(Date.parse(retried)) ? null : retried;
    const cameBack = !issue.resolved_at && since !== null && issue.last_seen_at >= since;
    const ops =
      issue.record && since
        ? (
            await this.operations.list(consoleAuth(session), {
              sync: issue.sync_id,
              record: issue.record.id,
              since,
            })
          ).data
        : [];
    return html`<section class="card" aria-labelledby="after"><h2 id="after">Since the retry</h2>
<p id="after-state">${
      cameBack
        ? html`The failure happened again ${whenExact(issue.last_seen_at)}: the cause is still there.`
        : issue.resolved_at
          ? 'The issue has not come back.'
          : 'The issue is open again.'
    }</p>
${
  issue.record
    ? ops.length === 0
      ? html`<p class="muted" id="after-ops">No operations on this record yet. <a href="/app/syncs/${issue.sync_id}/issues/${issue.id}?retried=${encodeURIComponent(retried)}">Check again</a></p>`
      : html`<ul id="after-ops">${ops.map((op) => html`<li>${whenExact(op.occurred_at)}: ${op.action} (${op.trigger}) on the ${op.side ?? '—'} side${op.table ? ` in ${op.table.name}` : ''} · <a href="/app/syncs/${issue.sync_id}/operations/${op.id}">details</a></li>`)}</ul>`
    : null
}
</section>`;
  }
}
