import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import {
  INPUT_LIMITS,
  type LiveExportDto,
  type RunDto,
  type ScheduleDto,
  type SourceFieldDto,
} from '@lockstep/contracts';
import type { LiveExportMappingsInput } from '@lockstep/domain';
import { type ConsoleSession, csrfInput } from './console-session';
import { whenExact } from './format';
import { html, type SafeHtml } from './html';
import { runState } from './live-exports-pages';

const CADENCE_LABELS: Record<string, string> = {
  manual: 'Manual (only when you press Run now)',
  every_10_minutes: 'Every 10 minutes',
  every_30_minutes: 'Every 30 minutes',
  hourly: 'Hourly',
  daily: 'Daily, at a time of day',
};
const ALL_CADENCES = ['manual', 'every_10_minutes', 'every_30_minutes', 'hourly', 'daily'];

/** A message at one form field (`aria-invalid`, `aria-describedby`), or nothing. */
function at(id: string, message: string | undefined): { attrs: SafeHtml; message: SafeHtml } {
  if (!message) return { attrs: html``, message: html`` };
  return {
    attrs: html` aria-invalid="true" aria-describedby="${id}-error"`,
    message: html`<span class="field-error" id="${id}-error">${message}</span>`,
  };
}

function crumbs(dto: { id: string; name: string } | null, last: string): SafeHtml {
  return html`<p class="muted"><a href="/app/live-exports">Live exports</a> / ${dto ? html`<a href="/app/live-exports/${dto.id}">${dto.name}</a> / ` : null}${last}</p>`;
}

// ---- new ----

export interface NewInput {
  connectors: ConnectorDeclaration[];
  values: { name?: string; source?: string; destination?: string };
  errors: { name?: string; source?: string; destination?: string; form?: string };
}

function connectorSelect(role: 'source' | 'destination', input: NewInput, hint: string): SafeHtml {
  const field = at(`new-${role}`, input.errors[role]);
  const offered = input.connectors.filter((c) =>
    role === 'source' ? c.capabilities.liveExport.source : c.capabilities.liveExport.destination,
  );
  return html`<label for="new-${role}">${role === 'source' ? 'Source app' : 'Destination database'} <span class="hint">${hint}</span></label>${field.message}
<select id="new-${role}" name="${role}" required${field.attrs}><option value="">Choose…</option>${offered.map((c) => html`<option value="${c.type}"${input.values[role] === c.type ? html` selected` : null}>${c.displayName}</option>`)}</select>`;
}

export function newBody(session: ConsoleSession, input: NewInput): SafeHtml {
  const name = at('new-name', input.errors.name);
  return html`${crumbs(null, 'new')}
<h1>New live export</h1>
<p class="lead">Name it and pick the two apps. Next you connect each side (credentials, then the base it reads from or the location it writes to), choose the tables and fields, save, and set a schedule.</p>
${input.errors.form ? html`<p class="error" role="alert">${input.errors.form}</p>` : null}
${input.errors.name || input.errors.source || input.errors.destination ? html`<p class="visually-hidden" role="alert">Some fields need attention.</p>` : null}
<form method="post" action="/app/live-exports/new" class="card">
${csrfInput(session)}
<label for="new-name">Name</label>${name.message}<input type="text" id="new-name" name="name" value="${input.values.name ?? ''}" required maxlength="${INPUT_LIMITS.name}"${name.attrs}>
${connectorSelect('source', input, 'Where the tables are read from; it is never changed.')}
${connectorSelect('destination', input, 'Where the tables are created and written.')}
<div class="actions"><button type="submit" id="create">Create and connect</button></div>
</form>`;
}

// ---- map ----

export interface MapTable {
  remoteId: string;
  name: string;
}

export interface MapInput {
  dto: LiveExportDto;
  version: number;
  tables: MapTable[];
  /** Tables whose fields are shown (in this order), with their exportable fields. */
  chosen: { table: MapTable; fields: SourceFieldDto[] }[];
  /** What the form shows: the stored document, or what was sent when it was refused. */
  document: LiveExportMappingsInput;
  issues: { code: string; message: string; path: string | null }[];
  error?: string;
}

function entryFor(document: LiveExportMappingsInput, table: MapTable) {
  return document.tables.find((t) => t.source_table === table.remoteId || t.source_table === table.name);
}

function tablePicker(input: MapInput): SafeHtml {
  const shown = new Set(input.chosen.map((c) => c.table.remoteId));
  return html`<form method="get" action="/app/live-exports/${input.dto.id}/map" class="card" aria-labelledby="pick-tables">
<fieldset><legend id="pick-tables">Source tables to export</legend>
${input.tables.length === 0 ? html`<p class="muted">The source base has no tables.</p>` : null}
${input.tables.map((t, i) => html`<label class="choice" for="pick-${i}"><input type="checkbox" id="pick-${i}" name="table" value="${t.remoteId}"${shown.has(t.remoteId) ? html` checked` : null}> ${t.name}</label>`)}
</fieldset>
<div class="actions"><button type="submit" class="secondary" id="show-fields">Show their fields</button></div>
</form>`;
}

function issuesFor(input: MapInput, index: number): SafeHtml {
  const mine = input.issues.filter(
    (i) => i.path === `tables[${index}]` || i.path?.startsWith(`tables[${index}].`),
  );
  if (mine.length === 0) return html``;
  return html`<ul class="field-error" id="t${index}-issues">${mine.map((i) => html`<li>${i.message} <code>${i.code}</code></li>`)}</ul>`;
}

function fieldRow(
  index: number,
  j: number,
  field: SourceFieldDto,
  entry: ReturnType<typeof entryFor>,
): SafeHtml {
  const mapped = entry?.fields.find(
    (f) => f.source_field === field.remote_id || f.source_field === field.name,
  );
  const checked = entry ? mapped !== undefined : true;
  const primary = entry ? mapped?.primary === true : field.primary;
  const id = `t${index}-f${j}`;
  return html`<tr><td><input type="checkbox" id="${id}" name="t${index}_f${j}" value="${field.remote_id}"${checked ? html` checked` : null}><label class="choice inline" for="${id}">${field.name}</label></td>
<td>${field.type}${field.required ? ' (required)' : ''}</td>
<td><label class="visually-hidden" for="${id}-dest">Destination column for ${field.name}</label><input type="text" id="${id}-dest" name="t${index}_f${j}_dest" value="${mapped?.destination_field ?? field.default_destination_field}" maxlength="63"></td>
<td><input type="radio" id="${id}-primary" name="t${index}_primary" value="${field.remote_id}"${primary ? html` checked` : null}><label class="visually-hidden" for="${id}-primary">${field.name} is the row id</label></td></tr>`;
}

function tableEditor(input: MapInput, index: number, chosen: MapInput['chosen'][number]): SafeHtml {
  const entry = entryFor(input.document, chosen.table);
  const hasIssues = input.issues.some((i) => i.path?.startsWith(`tables[${index}]`));
  return html`<fieldset id="table-${index}"${hasIssues ? html` aria-describedby="t${index}-issues"` : null}><legend>${chosen.table.name}</legend>
<input type="hidden" name="t${index}_source" value="${chosen.table.remoteId}">
${issuesFor(input, index)}
<label for="t${index}-dest">Destination table <span class="hint">Letters, digits and underscores, at most 63 characters</span></label>
<input type="text" id="t${index}-dest" name="t${index}_dest" value="${entry?.destination_table ?? chosen.table.name.replace(/[^A-Za-z0-9_]/g, '_')}" maxlength="63">
<table><caption>Fields of ${chosen.table.name}</caption><thead><tr><th scope="col">Export</th><th scope="col">Type</th><th scope="col">Destination column</th><th scope="col">Row id</th></tr></thead>
<tbody>${chosen.fields.map((field, j) => fieldRow(index, j, field, entry))}</tbody></table>
<input type="hidden" name="t${index}_fields" value="${chosen.fields.length}">
</fieldset>`;
}

export function mapBody(session: ConsoleSession, input: MapInput): SafeHtml {
  const general = input.issues.filter((i) => !i.path || !/^tables\[\d+\]/.test(i.path));
  return html`${crumbs(input.dto, 'mappings')}
<h1>Tables and fields</h1>
<p class="lead">Pick the source tables, then the fields of each and the column names they get in the destination. The row id (a unique field, the primary key by default) identifies rows between runs. Storing checks everything first; <strong>Save</strong> on the live export then creates the tables.</p>
${input.error ? html`<p class="error" role="alert" id="map-error">${input.error}</p>` : null}
${input.issues.length ? html`<div class="error" role="alert" id="map-issues"><p>Not stored: ${input.issues.length} problem${input.issues.length === 1 ? '' : 's'}, shown at ${input.issues.length === 1 ? 'its table' : 'their tables'}.</p>${general.length ? html`<ul>${general.map((i) => html`<li>${i.message} <code>${i.code}</code></li>`)}</ul>` : null}</div>` : null}
${tablePicker(input)}
${
  input.chosen.length === 0
    ? html`<p class="muted" id="no-tables">No table chosen yet: tick tables above and press <strong>Show their fields</strong>.</p>`
    : html`<form method="post" action="/app/live-exports/${input.dto.id}/map" aria-label="Mappings">
${csrfInput(session)}
<input type="hidden" name="version" value="${input.version}">
<input type="hidden" name="tables" value="${input.chosen.length}">
${input.chosen.map((chosen, index) => tableEditor(input, index, chosen))}
<div class="actions"><button type="submit" id="store-mappings">Store mappings</button> <a href="/app/live-exports/${input.dto.id}">Cancel</a></div>
</form>`
}`;
}

/** The mappings document a map form sent (unchecked fields left out, blank names left to the defaults). */
export function documentFromForm(form: Record<string, string>): LiveExportMappingsInput {
  const count = Math.min(Number(form['tables']) || 0, 200);
  const tables: LiveExportMappingsInput['tables'] = [];
  for (let i = 0; i < count; i += 1) {
    const source = form[`t${i}_source`];
    if (!source) continue;
    const fields: LiveExportMappingsInput['tables'][number]['fields'] = [];
    const fieldCount = Math.min(Number(form[`t${i}_fields`]) || 0, 1000);
    for (let j = 0; j < fieldCount; j += 1) {
      const field = form[`t${i}_f${j}`];
      if (!field) continue;
      const name = form[`t${i}_f${j}_dest`]?.trim();
      fields.push({
        source_field: field,
        ...(name ? { destination_field: name } : {}),
        primary: form[`t${i}_primary`] === field,
      });
    }
    const destination = form[`t${i}_dest`]?.trim();
    tables.push({ source_table: source, ...(destination ? { destination_table: destination } : {}), fields });
  }
  return { tables };
}

// ---- schedule, actions, runs ----

export interface ScheduleFormInput {
  dto: LiveExportDto;
  schedule: ScheduleDto | null;
  allowed: string[];
  values?: { cadence?: string; time_of_day?: string; timezone?: string; enabled?: boolean };
  errors?: { cadence?: string; time_of_day?: string; timezone?: string; form?: string };
}

export function scheduleForm(session: ConsoleSession, input: ScheduleFormInput): SafeHtml {
  const v = {
    cadence: input.values?.cadence ?? input.schedule?.cadence ?? 'manual',
    time: input.values?.time_of_day ?? input.schedule?.time_of_day ?? '',
    zone: input.values?.timezone ?? input.schedule?.timezone ?? 'UTC',
    enabled: input.values?.enabled ?? input.schedule?.enabled ?? true,
  };
  const e = input.errors ?? {};
  const [cadence, time, zone] = [
    at('cadence', e.cadence),
    at('time-of-day', e.time_of_day),
    at('timezone', e.timezone),
  ];
  return html`<form method="post" action="/app/live-exports/${input.dto.id}/schedule" class="card" aria-labelledby="schedule-form">
<h3 id="schedule-form">${input.schedule ? 'Change the schedule' : 'Set a schedule'}</h3>
${csrfInput(session)}
${e.form ? html`<p class="error" role="alert">${e.form}</p>` : null}
${e.cadence || e.time_of_day || e.timezone ? html`<p class="visually-hidden" role="alert">The schedule was not changed: see the fields.</p>` : null}
<label for="cadence">Cadence</label>${cadence.message}
<select id="cadence" name="cadence"${cadence.attrs}>${ALL_CADENCES.map((c) => html`<option value="${c}"${c === v.cadence ? html` selected` : null}${input.allowed.includes(c) ? null : html` disabled`}>${CADENCE_LABELS[c]}${input.allowed.includes(c) ? '' : ' (needs a higher plan)'}</option>`)}</select>
<div class="grid">
<div><label for="time-of-day">Time of day <span class="hint">Daily only, 24 h, for example 06:30</span></label>${time.message}<input type="time" id="time-of-day" name="time_of_day" value="${v.time}"${time.attrs}></div>
<div><label for="timezone">Time zone <span class="hint">Daily only, an IANA zone such as Europe/Berlin</span></label>${zone.message}<input type="text" id="timezone" name="timezone" value="${v.zone}" list="timezones" autocomplete="off"${zone.attrs}></div>
</div>
<datalist id="timezones">${Intl.supportedValuesOf('timeZone').map((z) => html`<option value="${z}">`)}</datalist>
<label class="choice" for="enabled"><input type="checkbox" id="enabled" name="enabled" value="on"${v.enabled ? html` checked` : null}> Runs on this schedule (untick to pause it; Run now still works)</label>
<div class="actions"><button type="submit" id="save-schedule">Save schedule</button></div>
</form>`;
}

const ACTIVE = ['queued', 'running'];
export const isActiveRun = (run: RunDto): boolean => ACTIVE.includes(run.state);

export function cancelForm(
  session: ConsoleSession,
  dto: { id: string },
  run: RunDto,
  from: 'export' | 'run',
): SafeHtml {
  if (!isActiveRun(run) || run.cancel_requested_at) return html``;
  return html`<form method="post" action="/app/live-exports/${dto.id}/runs/${run.id}/cancel" class="inline">${csrfInput(session)}<input type="hidden" name="from" value="${from}"><button type="submit" class="secondary" id="cancel-${from}-${run.id}" aria-label="Cancel run queued at ${run.queued_at}">Cancel run</button></form>`;
}

/** Save, edit mappings and Run now: what the person can do with the export next. */
export function actionsCard(session: ConsoleSession, dto: LiveExportDto, active: RunDto | null): SafeHtml {
  const connected = dto.source.connected && dto.destination.connected;
  const unsaved = dto.status === 'draft' || dto.unsaved_changes;
  return html`<section class="card" aria-labelledby="next"><h2 id="next">Set up and run</h2>
${connected ? null : html`<p class="muted">Connect both sides first.</p>`}
<div class="actions">
<a class="button secondary" href="/app/live-exports/${dto.id}/map" id="edit-mappings">${dto.mappings_version > 1 ? 'Edit tables and fields' : 'Choose tables and fields'}</a>
${connected ? html`<form method="post" action="/app/live-exports/${dto.id}/save">${csrfInput(session)}<button type="submit" id="save"${unsaved ? null : html` class="secondary"`}>Save${unsaved ? '' : ' again'}</button></form>` : null}
${
  dto.saved_version !== null
    ? html`<form method="post" action="/app/live-exports/${dto.id}/trigger">${csrfInput(session)}${dto.unsaved_changes ? html`<input type="hidden" name="force" value="true">` : null}<button type="submit" id="run-now"${active ? html` disabled aria-describedby="run-active"` : null}>${dto.unsaved_changes ? 'Run the saved version now' : 'Run now'}</button></form>${active ? html`<span class="hint" id="run-active">A run is ${active.state}; one runs at a time.</span>` : null}`
    : null
}
</div>
<form method="post" action="/app/live-exports/${dto.id}/rename" class="actions">${csrfInput(session)}<label for="rename" class="visually-hidden">Name</label><input type="text" id="rename" name="name" value="${dto.name}" required maxlength="${INPUT_LIMITS.name}"><button type="submit" class="secondary">Rename</button></form>
<p><a href="/app/live-exports/${dto.id}/delete" id="delete">Delete this live export…</a></p>
<p class="hint">Save checks the mappings and creates the destination tables and columns (it never drops or retypes any); runs use the last saved version.</p>
</section>`;
}

function progressOf(run: RunDto): SafeHtml {
  if (run.state === 'queued') return html`waiting for a worker`;
  return html`${run.rows_read.toLocaleString('en-US')} read, ${run.rows_written.toLocaleString('en-US')} written, ${run.rows_removed.toLocaleString('en-US')} removed`;
}

export function runRows(session: ConsoleSession, dto: { id: string }, runs: RunDto[]): SafeHtml {
  return html`${runs.map(
    (run) =>
      html`<tr data-run="${run.id}"><td><a href="/app/live-exports/${dto.id}/runs/${run.id}">${whenExact(run.queued_at)}</a></td><td>${run.trigger}${run.forced ? ' (forced)' : ''}</td><td class="run-state">${runState(run.state)}${run.cancel_requested_at && isActiveRun(run) ? ' (stopping)' : ''}</td><td class="run-progress">${progressOf(run)}</td><td>${run.error ? html`<code>${run.error.code}</code> ${run.error.message}` : null}</td><td>${cancelForm(session, dto, run, 'export')}</td></tr>`,
  )}`;
}

export function runBody(session: ConsoleSession, dto: LiveExportDto, run: RunDto): SafeHtml {
  return html`${crumbs(dto, 'run')}
<h1>Run of ${dto.name}</h1>
<dl class="facts" id="run-facts">
<dt>State</dt><dd id="run-state">${runState(run.state)}${run.cancel_requested_at && isActiveRun(run) ? ' (stopping: cancel requested)' : ''}</dd>
<dt>Trigger</dt><dd>${run.trigger}${run.forced ? ' (forced: the saved version despite unsaved changes)' : ''}${run.slot_at ? html`, for the slot ${whenExact(run.slot_at)}` : null}</dd>
<dt>Queued</dt><dd>${whenExact(run.queued_at)}</dd>
<dt>Started</dt><dd>${whenExact(run.started_at, 'not yet')}</dd>
<dt>Finished</dt><dd>${whenExact(run.finished_at, 'not yet')}</dd>
<dt>Progress</dt><dd id="run-progress">${progressOf(run)}</dd>
${run.error ? html`<dt>Error</dt><dd id="run-error"><code>${run.error.code}</code> ${run.error.message}</dd>` : null}
</dl>
${isActiveRun(run) ? html`<p class="muted">This page updates itself every 2 seconds while the run is active.</p><div class="actions">${cancelForm(session, dto, run, 'run')}</div>` : null}
<p><a href="/app/live-exports/${dto.id}">Back to the live export</a></p>`;
}

export function deleteBody(session: ConsoleSession, dto: LiveExportDto, active: RunDto | null): SafeHtml {
  return html`${crumbs(dto, 'delete')}
<h1>Delete “${dto.name}”?</h1>
<section class="card" aria-labelledby="deletes"><h2 id="deletes">Deleting removes</h2>
<ul><li>the live export, its credentials and its mappings;</li><li>its schedule and its run history;</li>
${active ? html`<li>the run that is ${active.state} now: it is canceled;</li>` : null}
<li>the change capture it installed in the source database (removed shortly after, by the worker).</li></ul>
<h2>What stays</h2>
<p>The tables it created in the destination${dto.destination.location ? html` (<code>${dto.destination.location}</code>)` : null}, with their rows, and everything in the source.</p>
<form method="post" action="/app/live-exports/${dto.id}/delete" class="actions">${csrfInput(session)}<button type="submit" class="danger" id="confirm-delete">Delete this live export</button> <a href="/app/live-exports/${dto.id}">Keep it</a></form>
</section>`;
}
