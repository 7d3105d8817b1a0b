import type { RecordCopyDto, RecordHitDto, RecordQueueEntryDto, RecordStatusDto } from '@lockstep/contracts';
import type { SideName } from '@lockstep/persistence';
import type { PairTables } from '../records/record-tables';
import { type ConsoleSession, csrfInput } from './console-session';
import { badge, sideLabel, whenExact } from './format';
import { html, type HtmlValue, type SafeHtml } from './html';
import { localPath } from './sync-links';

/** The sync as these pages name it. */
export interface SyncRef {
  id: string;
  name: string;
}

/** One side's copy as read from the app just now: field values, or why they could not be read. */
export interface LiveCopy {
  values: { name: string; value: string }[] | null;
  error: string | null;
}

export interface SearchInput {
  sync: SyncRef;
  pairs: PairTables[];
  query: string;
  table: string;
  hits: RecordHitDto[] | null;
  hasMore: boolean;
  /** A refused query or table, shown at its field. */
  error: { field: 'query' | 'table' | null; message: string } | null;
}

function crumbs(sync: SyncRef, last: HtmlValue, recordLink = false): SafeHtml {
  return html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${sync.id}">${sync.name}</a> / ${recordLink ? html`<a href="/app/syncs/${sync.id}/records">records</a> / ` : null}${last}</p>`;
}

function fieldError(name: 'query' | 'table', input: SearchInput): { attrs: SafeHtml; message: SafeHtml } {
  if (input.error?.field !== name) return { attrs: html``, message: html`` };
  return {
    attrs: html` aria-invalid="true" aria-describedby="search-${name}-error"`,
    message: html`<span class="field-error" id="search-${name}-error">${input.error.message}</span>`,
  };
}

function searchForm(input: SearchInput): SafeHtml {
  const tables = input.pairs.flatMap((pair) =>
    (['left', 'right'] as const).flatMap((side) => (pair[side] ? [{ side, ...pair[side]! }] : [])),
  );
  const query = fieldError('query', input);
  const table = fieldError('table', input);
  return html`<form method="get" action="/app/syncs/${input.sync.id}/records" class="card" role="search" aria-labelledby="search-title"><h2 id="search-title">Search</h2>
${input.error && !input.error.field ? html`<p class="error" role="alert">${input.error.message}</p>` : null}
${input.error?.field ? html`<p class="visually-hidden" role="alert">${input.error.message}</p>` : null}
<div class="grid">
<div><label for="search-query">Record <span class="hint">Its id in the app (the key, for example <code>42</code>), a <code>rec_…</code> id, or the start of its name</span></label>${query.message}<input type="text" id="search-query" name="query" value="${input.query}" required${query.attrs}></div>
<div><label for="search-table">Table and side <span class="hint">Ids are looked up on this side only</span></label>${table.message}<select id="search-table" name="table"${table.attrs}><option value="">Every mapped table, both sides</option>${tables.map((t) => html`<option value="${t.id}"${input.table === t.id ? html` selected` : null}>${t.name} (${t.side})</option>`)}</select></div>
</div>
<div class="actions"><button type="submit">Find records</button></div>
</form>`;
}

function hitCopy(hit: RecordHitDto, side: SideName): SafeHtml {
  const copy = hit[side];
  if (!copy) return html`<span class="muted">no copy</span>`;
  return html`<code>${copy.remote_id}</code>${copy.is_deleted ? html` ${badge('error', 'deleted')}` : null}`;
}

const MATCHED_BY: Record<string, string> = {
  record_id: 'Lockstep id',
  remote_id: 'id in the app',
  name: 'name',
};

function hitsTable(input: SearchInput): SafeHtml {
  if (!input.hits) return html``;
  if (input.hits.length === 0)
    return html`<p id="no-records" role="status">No record of this sync matches “${input.query}”.</p>`;
  return html`<p role="status" id="search-count">${input.hits.length} record${input.hits.length === 1 ? '' : 's'} found${input.hasMore ? ', best first; there are more: narrow the search' : ''}.</p>
<table id="records"><caption class="visually-hidden">Matching records, best first</caption>
<thead><tr><th scope="col">Record</th><th scope="col">Tables</th><th scope="col">Left copy</th><th scope="col">Right copy</th><th scope="col">Matched by</th></tr></thead>
<tbody>${input.hits.map(
    (hit) =>
      html`<tr data-record="${hit.id}"><td><a href="/app/syncs/${input.sync.id}/records/${hit.id}">${hit.name ?? hit.left?.remote_id ?? hit.right?.remote_id ?? hit.id}</a><br><code>${hit.id}</code></td><td>${hit.table.left?.name ?? '—'} ⇄ ${hit.table.right?.name ?? '—'}</td><td>${hitCopy(hit, 'left')}</td><td>${hitCopy(hit, 'right')}</td><td>${MATCHED_BY[hit.matched_by] ?? hit.matched_by}</td></tr>`,
  )}</tbody></table>`;
}

export function searchBody(input: SearchInput): SafeHtml {
  return html`${crumbs(input.sync, 'records')}
<h1>Find a record</h1>
<p class="lead">Look a record up by its id in either app, its Lockstep id or its name, then open its status: both copies, queued work, issues and history.</p>
${searchForm(input)}
${hitsTable(input)}`;
}

const QUEUE_WORDS: Record<string, string> = {
  push: 'write to',
  refetch: 'read again from',
  verify_delete: 'check a delete on',
};

function queueList(entries: RecordQueueEntryDto[] | null): SafeHtml {
  if (entries === null) return html`<p class="warning">The queue could not be consulted just now.</p>`;
  if (entries.length === 0)
    return html`<p class="muted" id="queue-empty">Nothing is queued for this record.</p>`;
  return html`<ol id="queue">${entries.map((entry) => html`<li>${entry.type}: ${QUEUE_WORDS[entry.type] ?? ''} ${entry.side ? `the ${entry.side} side` : 'both sides'} (position ${entry.position} in the sync's queue)</li>`)}</ol>`;
}

function copyState(copy: RecordCopyDto): SafeHtml {
  return html`${copy.is_deleted ? badge('error', 'deleted') : badge('ok', 'present')}${copy.is_filtered ? html` ${badge('draft', 'filtered out')}` : null}${copy.is_sync_disabled ? html` ${badge('draft', 'sync turned off')}` : null}`;
}

function copyCard(status: RecordStatusDto, side: SideName, live: LiveCopy): SafeHtml {
  const copy = status[side];
  const table = status.table[side];
  return html`<section class="card" id="copy-${side}" aria-labelledby="copy-${side}-title"><h2 id="copy-${side}-title">${sideLabel(side)} copy${table ? html` <span class="muted">in ${table.name}</span>` : null}</h2>
${
  !copy
    ? html`<p>The ${side} side has no copy of this record.</p>`
    : html`<dl class="facts"><dt>Id in the app</dt><dd><code>${copy.remote_id}</code></dd><dt>State</dt><dd>${copyState(copy)}</dd><dt>Queued</dt><dd>${copy.queued_operations === null ? 'unknown' : copy.queued_operations.length === 0 ? 'nothing' : copy.queued_operations.map((q) => q.type).join(', ')}</dd></dl>
${live.error ? html`<p class="error" role="alert">Could not read this copy: ${live.error}</p>` : null}
${live.values ? html`<table><caption>Values now</caption><thead><tr><th scope="col">Field</th><th scope="col">Value</th></tr></thead><tbody>${live.values.map((v) => html`<tr><th scope="row">${v.name}</th><td>${v.value}</td></tr>`)}</tbody></table>` : null}`
}
</section>`;
}

function issuesList(syncId: string, status: RecordStatusDto): SafeHtml {
  return html`<section aria-labelledby="rec-issues"><h2 id="rec-issues">Open issues</h2>
${
  status.issues.length === 0
    ? html`<p class="muted" id="no-record-issues">None: nothing blocks this record.</p>`
    : html`<ul id="record-issues">${status.issues.map((issue) => html`<li><a href="/app/syncs/${syncId}/issues/${issue.id}">${issue.message}</a> <code>${issue.code}</code>${issue.side ? ` · ${issue.side} side` : ''} · seen ${issue.occurrence_count}×, last ${whenExact(issue.last_seen_at)}</li>`)}</ul>`
}
</section>`;
}

function deleteHistory(syncId: string, status: RecordStatusDto): SafeHtml {
  const pending = status.pending_delete;
  if (!pending && status.pending_delete_events.length === 0) return html``;
  return html`<section aria-labelledby="rec-deletes"><h2 id="rec-deletes">Held deletes</h2>
${pending ? html`<p class="warning" id="held-delete">${pending.state === 'ignored' ? 'A delete of this record was ignored (dormant).' : `This record went missing on the ${pending.missing_side} side; deleting it from the ${pending.delete_from_side} side waits for review.`} <a href="${localPath(pending.review_url)}">Review it</a></p>` : null}
${status.pending_delete_events.length ? html`<ul id="delete-history">${status.pending_delete_events.map((e) => html`<li>${whenExact(e.at)}: ${e.kind}${e.actor ? ` by ${e.actor}` : ''}</li>`)}</ul>` : null}
</section>`;
}

function history(syncId: string, status: RecordStatusDto): SafeHtml {
  return html`<section aria-labelledby="rec-ops"><h2 id="rec-ops">History</h2>
${
  status.operations.length === 0
    ? html`<p class="muted">No operations yet.</p>`
    : html`<table id="record-operations"><caption class="visually-hidden">Operations on this record, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Side</th><th scope="col">Details</th></tr></thead><tbody>${status.operations.map((op) => html`<tr><td>${whenExact(op.occurred_at)}</td><td>${op.action} (${op.trigger})</td><td>${op.side ?? '—'}</td><td><a href="/app/syncs/${syncId}/operations/${op.id}" aria-label="Details of the ${op.action} at ${op.occurred_at}">Details</a></td></tr>`)}</tbody></table>`
}
<p><a href="/app/syncs/${syncId}/operations?record=${status.id}" id="all-record-operations">${status.operations_has_more ? 'Older operations of this record' : 'This record in the operations log'}</a></p>
</section>`;
}

export interface RecordPageInput {
  session: ConsoleSession;
  sync: SyncRef;
  status: RecordStatusDto;
  /** The side asked for first (the link's `?side=`). */
  first: SideName;
  live: Record<SideName, LiveCopy>;
}

/** The record status document as a page: both copies (read live), queued work, issues, held deletes, history. */
export function recordBody(input: RecordPageInput): SafeHtml {
  const { sync, status } = input;
  const order: SideName[] = input.first === 'left' ? ['left', 'right'] : ['right', 'left'];
  const present = (['left', 'right'] as const).filter((side) => status[side] && !status[side]!.is_deleted);
  const canRefetch = present.length > 0;
  return html`${crumbs(sync, html`<code>${status.id}</code>`, true)}
<h1>${status.name ?? status[input.first]?.remote_id ?? status.id}</h1>
<p class="lead">Record <code>${status.id}</code>: ${status.table.left?.name ?? '—'} ⇄ ${status.table.right?.name ?? '—'}.</p>
<div class="grid">${order.map((side) => copyCard(status, side, input.live[side]))}</div>
<section aria-labelledby="rec-queue"><h2 id="rec-queue">Queued work</h2>
${queueList(status.queued_operations)}
${
  canRefetch
    ? html`<form method="post" action="/app/syncs/${sync.id}/records/${status.id}/refetch">${csrfInput(input.session)}<button type="submit" class="secondary" id="refetch">${present.length === 2 ? 'Read both copies again' : `Read the ${present[0]} copy again`}</button> <span class="hint">Queued after what is already queued for this record.</span></form>`
    : null
}
</section>
${issuesList(sync.id, status)}
${deleteHistory(sync.id, status)}
${history(sync.id, status)}`;
}
