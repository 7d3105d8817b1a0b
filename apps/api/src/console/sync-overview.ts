import type {
  IssueDto,
  OperationListItemDto,
  PendingDeleteDto,
  SyncDto,
  SyncStatusDto,
} from '@lockstep/contracts';
import { type ConsoleSession, csrfInput } from './console-session';
import { badge, sideLabel, when } from './format';
import { html, type SafeHtml } from './html';
import { localPath, sideSummary } from './sync-links';

/** One table pair of the initial sync's progress (the engine's `InitialProgress` entry, as the status shows it). */
export interface PairProgressView {
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

/** Records done of total over every pair, the recent rate, and time left at that rate. */
export interface InitialSyncPace {
  done: number;
  total: number;
  /** Records a second; null before anything was done. */
  rate: number | null;
  /** What the rate is measured over: the last seconds this API saw, or everything since the start. */
  rateOver: 'recent' | 'since_start';
  /** Seconds left at that rate; null when unknown. */
  secondsLeft: number | null;
}

interface Sample {
  at: number;
  done: number;
}

/** How far back the recent rate looks, and how many syncs' samples are kept at most. */
const WINDOW_MS = 30_000;
const MAX_TRACKED = 500;

/**
 * Samples of records done per running initial sync, as this API process saw them in the status snapshots it
 * rendered (the overview asks every 2 s while someone watches). The status has no per-pair timings, and the
 * average since `started_at` includes the preparation (the preview's full read), which makes it far too low
 * at first; the rate over the last 30 s is what "time left" should assume. With a single sample (the first
 * look, or another API instance rendered the previous one) the average since the start is used, and said.
 */
export class PaceSamples {
  private readonly samples = new Map<string, Sample[]>();

  pace(status: SyncStatusDto): InitialSyncPace {
    const pairs = pairsOf(status);
    const total = pairs.reduce((n, pair) => n + pairTotal(pair), 0);
    const done = Math.min(
      total,
      pairs.reduce((n, pair) => n + pairDone(pair), 0),
    );
    const at = Date.parse(status.captured_at);
    const recent = this.record(`${status.sync_id}:${status.initial_sync.started_at ?? ''}`, { at, done });
    let rate: number | null = null;
    let rateOver: InitialSyncPace['rateOver'] = 'since_start';
    if (recent && at - recent.at >= 1000 && done > recent.done) {
      rate = (done - recent.done) / ((at - recent.at) / 1000);
      rateOver = 'recent';
    } else {
      const elapsed = (at - Date.parse(status.initial_sync.started_at ?? '')) / 1000;
      rate = done > 0 && elapsed > 0 ? done / elapsed : null;
    }
    const secondsLeft = rate ? Math.ceil((total - done) / rate) : null;
    return { done, total, rate, rateOver, secondsLeft };
  }

  /** Adds the sample; returns the oldest one within the window (before this one), if any. */
  private record(key: string, sample: Sample): Sample | undefined {
    const kept = (this.samples.get(key) ?? []).filter(
      (s) => sample.at - s.at <= WINDOW_MS && s.at < sample.at,
    );
    this.samples.delete(key);
    this.samples.set(key, [...kept, sample]);
    if (this.samples.size > MAX_TRACKED) this.samples.delete(this.samples.keys().next().value!);
    return kept[0];
  }

  /** Forgets a sync whose initial sync is not running (nothing to measure). */
  forget(syncId: string): void {
    for (const key of this.samples.keys()) if (key.startsWith(`${syncId}:`)) this.samples.delete(key);
  }
}

export function pairsOf(status: SyncStatusDto): PairProgressView[] {
  return ((status.initial_sync.progress as { pairs?: PairProgressView[] } | null)?.pairs ??
    []) as PairProgressView[];
}

const pairTotal = (pair: PairProgressView): number =>
  (pair.preview?.left_records ?? 0) + (pair.preview?.right_records ?? 0);
const pairDone = (pair: PairProgressView): number =>
  pair.stage === 'done' ? pairTotal(pair) : (pair.processed?.left ?? 0) + (pair.processed?.right ?? 0);

const count = (n: number): string => n.toLocaleString('en-US');

/** "45 s", "3 min 20 s", "2 h 5 min". */
export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** The "Needs you" cell of the syncs list: pending actions, held deletes and open issues, each with its link. */
export function needsYou(sync: SyncDto): SafeHtml {
  const held = sync.pending_deletes ?? 0;
  const total = sync.pending_actions.length + held + sync.open_issues;
  if (total === 0) return html`<span class="muted">nothing</span>`;
  const parts: SafeHtml[] = sync.pending_actions.map(
    (a) =>
      html`<li><a href="${localPath(a.url)}">${a.type === 'user_confirmation' ? 'review and start' : `connect ${a.side}`}</a></li>`,
  );
  if (held > 0)
    parts.push(
      html`<li><a href="/app/syncs/${sync.id}/pending-deletes">${held} held delete${held === 1 ? '' : 's'}</a></li>`,
    );
  if (sync.open_issues > 0)
    parts.push(
      html`<li><a href="/app/syncs/${sync.id}/issues">${sync.open_issues} open issue${sync.open_issues === 1 ? '' : 's'}</a></li>`,
    );
  return html`<strong class="needs" data-needs="${total}">${total}</strong><ul class="plain">${parts}</ul>`;
}

export function statusCard(sync: SyncDto, status: SyncStatusDto): SafeHtml {
  const phase = status.initial_sync.phase;
  return html`<section class="card" aria-labelledby="state"><h2 id="state">Status</h2>
    <dl class="facts">
      <dt>Status</dt><dd id="sync-status">${badge(sync.status)}${sync.activating ? html` ${badge('preparing', 'activating')}` : null}</dd>
      <dt>Initial sync</dt><dd id="initial-sync">${badge(phase, phase.replace('_', ' '))}</dd>
      <dt>Left</dt><dd>${sideSummary(sync, 'left')}</dd>
      <dt>Right</dt><dd>${sideSummary(sync, 'right')}</dd>
      <dt>Open issues</dt><dd id="open-issues">${sync.open_issues}</dd>
      <dt>Deletes</dt><dd>${
        sync.delete_approval === 'review_required'
          ? html`held for review: <a href="/app/syncs/${sync.id}/pending-deletes">${sync.pending_deletes ?? 0} waiting</a>`
          : 'applied automatically'
      }</dd>
    </dl>
    <p><a href="/app/syncs/${sync.id}/records" id="find-record">Find a record</a></p>
  </section>`;
}

export function changeDetectionCard(status: SyncStatusDto): SafeHtml {
  return html`<section class="card" aria-labelledby="sides-state"><h2 id="sides-state">Change detection</h2>
    <dl class="facts">${(['left', 'right'] as const).map(
      (side) =>
        html`<dt>${sideLabel(side)}</dt><dd id="detection-${side}">${status[side].polling_state}${status[side].change_detection ? html` (${status[side].change_detection!.replace('_', ' ')})` : null}<br><span class="muted">last change ${when(status[side].last_change_detected_at, 'none yet')}</span></dd>`,
    )}
      <dt>Queued</dt><dd>${status.pending_pushes.push} push, ${status.pending_pushes.refetch} refetch, ${status.pending_pushes.verify_delete} delete checks</dd>
    </dl>
  </section>`;
}

function paceLine(status: SyncStatusDto, pace: InitialSyncPace): SafeHtml {
  const percent = pace.total > 0 ? Math.floor((pace.done / pace.total) * 100) : 0;
  const running = status.initial_sync.phase === 'running';
  return html`<p id="initial-pace"><strong id="initial-done">${count(pace.done)} of ${count(pace.total)} records</strong> (${percent}%)
${running && pace.rate ? html` · <span id="initial-rate">${count(Math.round(pace.rate))} records/s</span> ${pace.rateOver === 'recent' ? 'lately' : 'on average since it started'}` : null}
${running && pace.secondsLeft !== null ? html` · <span id="initial-eta">about ${duration(pace.secondsLeft)} left</span>` : null}</p>`;
}

function pairProgress(pair: PairProgressView): SafeHtml {
  const total = pairTotal(pair);
  const done = pairDone(pair);
  return html`<h3>${pair.left_table} ⇄ ${pair.right_table}</h3>
${
  pair.preview
    ? html`<p>Preview: ${pair.preview.left_records} left, ${pair.preview.right_records} right records; ${pair.preview.matched} matched${pair.match_field ? html` on ${pair.match_field.left} = ${pair.match_field.right}` : null}; ${pair.preview.to_create_right} to create on the right, ${pair.preview.to_create_left} on the left; ${pair.preview.skipped} skipped.</p>`
    : null
}
<label for="progress-${pair.table_pair}">Progress (${pair.stage === 'done' ? 'done' : `${done} of ${total} records`})</label>
<progress id="progress-${pair.table_pair}" max="${Math.max(total, 1)}" value="${pair.stage === 'done' ? Math.max(total, 1) : done}"></progress>
${pair.created ? html`<p class="muted">Created ${pair.created.left} left, ${pair.created.right} right; updated ${pair.updated?.left ?? 0} left, ${pair.updated?.right ?? 0} right; ${pair.failed ?? 0} failed.</p>` : null}`;
}

/** The initial sync: preview, records done of total with rate and time left, and each pair's progress. */
export function initialSyncSection(status: SyncStatusDto, working: boolean, pace: InitialSyncPace): SafeHtml {
  const phase = status.initial_sync.phase;
  if (phase === 'not_started') return html``;
  return html`<section class="card" aria-labelledby="initial"><h2 id="initial">Initial sync</h2>
<p>${phase === 'done' ? html`Finished ${when(status.initial_sync.finished_at)}.` : html`Started ${when(status.initial_sync.started_at)}; ${phase}.`}${working ? html` <span class="muted">This page updates itself every 2 seconds while it runs.</span>` : null}</p>
${phase === 'running' || phase === 'done' ? paceLine(status, pace) : null}
${pairsOf(status).map(pairProgress)}
</section>`;
}

export function heldDeletesSection(sync: SyncDto, held: PendingDeleteDto[]): SafeHtml {
  if (sync.delete_approval !== 'review_required') return html``;
  const waiting = sync.pending_deletes ?? held.length;
  return html`<section aria-labelledby="held"><h2 id="held">Held deletes</h2>
${
  held.length === 0
    ? html`<p class="muted" id="no-held">No deletes are waiting for review.</p>`
    : html`<p>${waiting} delete${waiting === 1 ? '' : 's'} waiting for your review. <a href="/app/syncs/${sync.id}/pending-deletes" id="all-held">Review them</a></p>
<table id="held-deletes"><thead><tr><th scope="col">Record</th><th scope="col">Missing on</th><th scope="col">Would be deleted from</th><th scope="col">Since</th></tr></thead>
<tbody>${held.map((entry) => html`<tr><td><a href="/app/syncs/${sync.id}/pending-deletes/${entry.record_id}">${entry.record?.name ?? entry.record_id}</a></td><td>${entry.missing_side}</td><td>${entry.delete_from_side}</td><td>${when(entry.pending_since)}</td></tr>`)}</tbody></table>`
}
</section>`;
}

function issueCard(session: ConsoleSession, syncId: string, issue: IssueDto): SafeHtml {
  return html`<article class="card" aria-labelledby="${issue.id}-title">
  <h3 id="${issue.id}-title">${issue.message}</h3>
  <p class="muted">${issue.type} · <code>${issue.code}</code>${issue.side ? html` · ${issue.side} side` : null}${issue.table ? html` · table ${issue.table.name}` : null}${issue.record ? html` · record <a href="${localPath(issue.record.url)}">${issue.record.name ?? issue.record.remote_id ?? issue.record.id}</a>` : null} · seen ${issue.occurrence_count}× , last ${when(issue.last_seen_at)}</p>
  <p>${issue.remediation.explanation}</p>
  <p><strong>What to do:</strong> ${issue.remediation.suggested_action}</p>
  ${issue.remediation.links.length ? html`<ul>${issue.remediation.links.map((link) => html`<li><a href="${localPath(link.url)}">${link.name}</a></li>`)}</ul>` : null}
  <form method="post" action="/app/syncs/${syncId}/issues/${issue.id}/retry">${csrfInput(session)}<button type="submit" class="secondary" aria-label="Retry: ${issue.message}">Retry</button></form>
</article>`;
}

export function issuesSection(session: ConsoleSession, syncId: string, issues: IssueDto[]): SafeHtml {
  return html`<section aria-labelledby="issues"><h2 id="issues">Open issues</h2>
<p><a href="/app/syncs/${syncId}/issues" id="all-issues">All issues, by type</a></p>
${issues.length === 0 ? html`<p class="muted">No open issues.</p>` : issues.map((issue) => issueCard(session, syncId, issue))}
</section>`;
}

export function operationsSection(syncId: string, operations: OperationListItemDto[]): SafeHtml {
  return html`<section aria-labelledby="ops"><h2 id="ops">Recent operations</h2>
<p><a href="/app/syncs/${syncId}/operations" id="all-operations">All operations, with filters</a></p>
${
  operations.length === 0
    ? html`<p class="muted">No operations yet.</p>`
    : html`<table id="recent-operations">
  <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Side</th><th scope="col">Table</th><th scope="col">Record</th></tr></thead>
  <tbody>${operations.map(
    (
      op,
    ) => html`<tr><td>${when(op.occurred_at)}</td><td>${op.action} (${op.trigger})</td><td>${op.side ?? '—'}</td><td>${op.table?.name ?? '—'}</td>
      <td>${op.record_id && op.side ? html`<a href="/app/syncs/${syncId}/records/${op.record_id}?side=${op.side}">${op.record.name ?? op.record.remote_id ?? op.record_id}</a>` : (op.record.name ?? op.record.remote_id ?? '—')}</td></tr>`,
  )}</tbody>
</table>`
}
</section>`;
}
