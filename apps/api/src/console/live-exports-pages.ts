import type { BaseInfo, ConnectorDeclaration } from '@lockstep/connectors-core';
import type { LiveExportDto, RunDto, ScheduleDto } from '@lockstep/contracts';
import type { LiveExportEntity } from '@lockstep/persistence';
import type { LiveExportSide } from '../live-export/live-export-access';
import { type ConsoleSession, csrfInput } from './console-session';
import { badge, when, whenExact } from './format';
import { credentialField } from './credential-field';
import { html, type SafeHtml } from './html';
import { localPath } from './sync-links';
import {
  actionsCard,
  isActiveRun,
  runRows,
  scheduleForm,
  type ScheduleFormInput,
} from './live-export-edit-pages';

/** One row of the live exports list. */
export interface LiveExportRow {
  dto: LiveExportDto;
  sourceName: string;
  destinationName: string;
  schedule: { cadence: string; enabled: boolean; timeOfDay: string | null; timezone: string | null } | null;
  lastRun: { state: string; at: string } | null;
}

const RUN_BADGES: Record<string, string> = {
  succeeded: 'ok',
  failed: 'bad',
  canceled: '',
  queued: 'warn',
  running: 'warn',
};

/** A run state in a pill (the word carries the meaning). */
export function runState(state: string): SafeHtml {
  return html`<span class="badge ${RUN_BADGES[state] ?? ''}">${state}</span>`;
}

const CADENCES: Record<string, string> = {
  manual: 'Manual (runs only when triggered)',
  every_10_minutes: 'Every 10 minutes',
  every_30_minutes: 'Every 30 minutes',
  hourly: 'Hourly',
  daily: 'Daily',
};

/** "Daily at 06:30 (Europe/Berlin)", "Hourly (paused)". */
export function cadenceText(
  schedule: { cadence: string; enabled: boolean; timeOfDay?: string | null; timezone?: string | null } | null,
): string {
  if (!schedule) return 'No schedule';
  let text = CADENCES[schedule.cadence] ?? schedule.cadence;
  if (schedule.cadence === 'daily' && schedule.timeOfDay)
    text += ` at ${schedule.timeOfDay} (${schedule.timezone ?? 'UTC'})`;
  return schedule.enabled ? text : `${text}, paused`;
}

export function sideWord(side: LiveExportSide): string {
  return side === 'source' ? 'source' : 'destination';
}

/** A live export's connect links (its `user_authorization` pending actions) as local console links. */
export function connectLinks(dto: LiveExportDto): SafeHtml {
  const actions = dto.pending_actions.filter((action) => action.type === 'user_authorization');
  if (actions.length === 0) return html`<span class="muted">Nothing</span>`;
  return html`${actions.map((action, i) => html`${i > 0 ? html`<br>` : null}<a href="${localPath(action.url)}">Connect the ${action.side ?? ''}</a>`)}`;
}

function statusBadge(dto: LiveExportDto): SafeHtml {
  if (dto.status === 'draft') return badge('draft', 'not saved yet');
  return html`${badge('ok', 'saved')}${dto.unsaved_changes ? html` ${badge('draft', 'unsaved changes')}` : null}`;
}

export function listBody(rows: LiveExportRow[], nextCursor: string | null): SafeHtml {
  return html`<h1>Your live exports</h1>
<p class="lead">A live export copies tables of a source app into a database you own, on a schedule. Create one here, or over the API (<code>POST /v1/live-export/live-exports</code>) by you or your agent with a key from <a href="/app/settings/api-keys">API keys</a>; the steps that need you show up here.</p>
<p><a class="button" href="/app/live-exports/new" id="new-live-export">New live export</a></p>
${
  rows.length === 0
    ? html`<p id="no-live-exports">No live exports yet.</p>`
    : html`<table id="live-exports">
  <caption class="visually-hidden">Live exports, newest first</caption>
  <thead><tr><th scope="col">Live export</th><th scope="col">Source → destination</th><th scope="col">Saved</th><th scope="col">Schedule</th><th scope="col">Last run</th><th scope="col">Needs you</th></tr></thead>
  <tbody>${rows.map(
    (row) => html`<tr>
    <td><a href="/app/live-exports/${row.dto.id}">${row.dto.name}</a></td>
    <td>${row.sourceName}${row.dto.source.base ? html` · <code>${row.dto.source.base}</code>` : null} <span aria-hidden="true">→</span><span class="visually-hidden"> to </span> ${row.destinationName}${row.dto.destination.location ? html` · <code>${row.dto.destination.location}</code>` : null}</td>
    <td>${statusBadge(row.dto)}</td>
    <td>${row.dto.status === 'draft' ? html`<span class="muted">—</span>` : cadenceText(row.schedule)}</td>
    <td>${row.lastRun ? html`${runState(row.lastRun.state)} ${when(row.lastRun.at)}` : html`<span class="muted">No runs yet</span>`}</td>
    <td>${connectLinks(row.dto)}</td>
  </tr>`,
  )}</tbody>
</table>`
}
${nextCursor ? html`<p><a class="button secondary" href="/app/live-exports?cursor=${encodeURIComponent(nextCursor)}">Older live exports</a></p>` : null}`;
}

export interface OverviewInput {
  dto: LiveExportDto;
  entity: LiveExportEntity;
  source: ConnectorDeclaration | undefined;
  destination: ConnectorDeclaration | undefined;
  schedule: ScheduleDto | null;
  runs: RunDto[];
  session: ConsoleSession;
  /** The plan's cadences (the schedule form offers the others disabled). */
  allowedCadences: string[];
  /** A refused schedule change: the values sent and the message at its field. */
  scheduleRetry?: Pick<ScheduleFormInput, 'values' | 'errors'>;
}

function sideCard(
  dto: LiveExportDto,
  side: LiveExportSide,
  declaration: ConnectorDeclaration | undefined,
): SafeHtml {
  const s = side === 'source' ? dto.source : dto.destination;
  const action = dto.pending_actions.find((a) => a.type === 'user_authorization' && a.side === side);
  const where =
    side === 'source'
      ? html`<dt>Base</dt><dd>${dto.source.base ? html`<code>${dto.source.base}</code>` : html`<span class="muted">chosen when connected</span>`}</dd>`
      : html`<dt>Location</dt><dd>${dto.destination.location ? html`<code>${dto.destination.location}</code>` : html`<span class="muted">not set</span>`}${dto.destination.location_kind ? html` <span class="muted">(${dto.destination.location_kind})</span>` : null}</dd>`;
  return html`<div class="card" id="side-${side}"><h2>${side === 'source' ? 'Source' : 'Destination'}</h2>
<dl class="facts"><dt>App</dt><dd>${declaration?.displayName ?? s.connector}</dd>
<dt>Connected</dt><dd>${s.connected ? html`${badge('ok', 'connected')} ${when(s.connected_at)}` : html`${badge('draft', 'not connected')}${action ? html` <a href="${localPath(action.url)}">Connect the ${side}</a>` : null}`}</dd>
${where}</dl></div>`;
}

export function overviewBody(input: OverviewInput): SafeHtml {
  const { dto, entity } = input;
  const tables = entity.mappings.tables;
  const fieldCount = tables.reduce((n, table) => n + table.fields.length, 0);
  const actions = dto.pending_actions.filter((a) => a.type === 'user_authorization');
  return html`<p class="muted"><a href="/app/live-exports">Live exports</a> / ${dto.name}</p>
<h1>${dto.name}</h1>
<p>${statusBadge(dto)} <span class="muted">Created ${when(dto.created_at)}</span></p>
${
  actions.length > 0
    ? html`<section class="card" aria-labelledby="todo"><h2 id="todo">Waiting for you</h2><ul>${actions.map(
        (action) =>
          html`<li><a href="${localPath(action.url)}">Connect the ${action.side ?? ''} (${(action.side === 'source' ? input.source : input.destination)?.displayName ?? action.connector ?? ''})</a></li>`,
      )}</ul></section>`
    : null
}
<section class="grid" aria-label="Sides">${sideCard(dto, 'source', input.source)}${sideCard(dto, 'destination', input.destination)}</section>
${actionsCard(input.session, dto, input.runs.find(isActiveRun) ?? null)}
<section aria-labelledby="mappings"><h2 id="mappings">Mappings</h2>
<p id="mappings-summary">${tables.length === 0 ? 'Nothing is mapped yet: choose tables and fields, then save.' : `${tables.length} table(s), ${fieldCount} field(s) mapped.`}
Version ${dto.mappings_version}${dto.saved_version !== null ? html`, saved version ${dto.saved_version} (${when(dto.saved_at)})` : ', never saved'}.
${dto.unsaved_changes && dto.saved_version !== null ? html`<strong>Unsaved changes:</strong> runs use the saved version until the next save.` : null}</p>
${
  tables.length > 0
    ? html`<table id="mapped-tables"><caption class="visually-hidden">Mapped tables</caption>
<thead><tr><th scope="col">Source table</th><th scope="col">Destination table</th><th scope="col">Fields</th></tr></thead>
<tbody>${tables.map((table) => html`<tr><td><code>${table.source_table}</code></td><td><code>${table.destination_table}</code></td><td>${table.fields.map((f, i) => html`${i > 0 ? ', ' : null}${f.destination_field}`)}</td></tr>`)}</tbody></table>`
    : null
}
</section>
<section aria-labelledby="schedule"><h2 id="schedule">Schedule</h2>
<p id="schedule-text">${dto.status === 'draft' ? 'A schedule needs a saved live export: save it first.' : input.schedule ? html`${cadenceText({ cadence: input.schedule.cadence, enabled: input.schedule.enabled, timeOfDay: input.schedule.time_of_day, timezone: input.schedule.timezone })}${input.schedule.next_run_at ? html`; next run ${whenExact(input.schedule.next_run_at)}` : null}.` : 'No schedule yet; runs start only when you press Run now.'}</p>
${dto.status === 'draft' ? null : scheduleForm(input.session, { dto, schedule: input.schedule, allowed: input.allowedCadences, ...input.scheduleRetry })}
</section>
<section aria-labelledby="runs"><h2 id="runs">Latest runs</h2>
${
  input.runs.length === 0
    ? html`<p class="muted" id="no-runs">No runs yet.</p>`
    : html`<table id="run-list"><caption class="visually-hidden">The 10 latest runs, newest first</caption>
<thead><tr><th scope="col">Queued</th><th scope="col">Trigger</th><th scope="col">State</th><th scope="col">Progress</th><th scope="col">Error</th><th scope="col">Cancel</th></tr></thead>
<tbody>${runRows(input.session, dto, input.runs)}</tbody></table>`
}
${input.runs.some(isActiveRun) ? html`<p class="muted">This page updates itself every 2 seconds while a run is active.</p>` : null}
</section>`;
}

export interface ConnectInput {
  dto: LiveExportDto;
  side: LiveExportSide;
  declaration: ConnectorDeclaration;
  connected: boolean;
  values?: Record<string, string>;
  /** Bases (source) or locations (destination) listed with the credentials: the second step. */
  choices?: BaseInfo[];
  chosen?: string;
  error?: string;
}

export function connectBody(session: ConsoleSession, input: ConnectInput): SafeHtml {
  const { dto, side, declaration } = input;
  const action = `/app/live-exports/${dto.id}/connect/${side}`;
  const values = input.values ?? {};
  const head = html`<p class="muted"><a href="/app/live-exports">Live exports</a> / <a href="/app/live-exports/${dto.id}">${dto.name}</a> / connect ${side}</p>
<h1>Connect the ${side} of "${dto.name}"</h1>
<p class="lead">${side === 'source' ? html`The source is the app the live export reads tables from.` : html`The destination is the database the live export creates its tables in and writes rows to.`}</p>
${input.error ? html`<p class="error" role="alert" id="connect-error">${input.error}</p>` : null}`;
  if (input.connected) {
    return html`${head}<p class="notice" role="status" id="already-connected">The ${side} is connected to ${declaration.displayName}. Its credentials cannot be replaced; to use other credentials, create a new live export.</p>
<p><a class="button secondary" href="/app/live-exports/${dto.id}">Back to the live export</a></p>`;
  }
  if (declaration.auth.method !== 'api_key') {
    return html`${head}<section class="card" aria-labelledby="oauth" id="oauth-unavailable"><h2 id="oauth">${declaration.displayName} needs browser sign-in</h2>
<p>${declaration.displayName} is connected by signing in to it in the browser. Browser sign-in for live export sides is not available in this version of Lockstep, so this ${side} cannot be connected yet.</p>
<p>To go on, create a live export whose ${side} uses an app connected with credentials (for example PostgreSQL or MySQL/MariaDB), or use a sync, whose sides support browser sign-in.</p>
<p><a class="button secondary" href="/app/live-exports/${dto.id}">Back to the live export</a></p></section>`;
  }
  const fields = declaration.auth.fields;
  const pickerLabel = side === 'source' ? 'Base' : 'Location';
  const pickerHint =
    side === 'source'
      ? 'The schema (PostgreSQL) or database (MySQL) the tables are read from, as your credentials reach it.'
      : 'The schema (PostgreSQL) or database (MySQL) the live export creates its tables in.';
  return html`${head}<section class="card" aria-labelledby="creds"><h2 id="creds">${declaration.displayName} credentials</h2>
<form method="post" action="${action}">
  ${csrfInput(session)}
  ${fields.map((field) =>
    credentialField(field, { id: `auth-${field.id}`, name: `auth_${field.id}`, value: values[field.id] }),
  )}
  ${
    input.choices
      ? html`<input type="hidden" name="step" value="connect">
  <label for="pick">${pickerLabel} <span class="hint">${pickerHint}</span></label>
  <select id="pick" name="${side === 'source' ? 'base' : 'location'}" required>${input.choices.map((c) => html`<option value="${c.id}"${c.id === input.chosen ? html` selected` : null}>${c.name}</option>`)}</select>
  <div class="actions"><button type="submit">Connect</button></div>`
      : html`<input type="hidden" name="step" value="list">
  <div class="actions"><button type="submit">${side === 'source' ? 'Check and list bases' : 'Check and list locations'}</button></div>`
  }
</form></section>`;
}
