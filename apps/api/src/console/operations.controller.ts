import { Get, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, type OperationDto, type OperationListItemDto } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { OperationsService } from '../operations/operations.service';
import { type PairTables, RecordTables } from '../records/record-tables';
import { SyncAccess } from '../syncs/sync-access';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  sendPage,
  Session,
} from './console-session';
import { badge, value, whenExact } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';

interface OperationFilters {
  limit?: string;
  table?: string;
  record?: string;
  since?: string;
}

interface Conflict {
  field?: string;
  winner?: string;
  reason?: string;
}

const PAGE_SIZE = 50;

type FilterName = 'table' | 'record' | 'since';

/** A refused filter, shown at its field (the service names the parameter or the code says which). */
interface FilterError {
  field: FilterName | null;
  message: string;
}

function filterError(error: DomainError): FilterError {
  const parameter = error.details?.['parameter'];
  if (parameter === 'table' || parameter === 'record' || parameter === 'since')
    return { field: parameter, message: error.message };
  if (error.code === ErrorCode.InvalidSince) return { field: 'since', message: error.message };
  if (error.code === ErrorCode.InvalidTable || error.code === ErrorCode.TableAmbiguous)
    return { field: 'table', message: error.message };
  return { field: null, message: error.message };
}

/** The attributes and message of a filter field when the service refused its value. */
function fieldError(name: FilterName, error: FilterError | null): { attrs: SafeHtml; message: SafeHtml } {
  if (error?.field !== name) return { attrs: html``, message: html`` };
  return {
    attrs: html` aria-invalid="true" aria-describedby="filter-${name}-error"`,
    message: html`<span class="field-error" id="filter-${name}-error">${error.message}</span>`,
  };
}

/** The query string of the filters (empty ones left out), for paging links. */
function filterQuery(filters: OperationFilters): string {
  const params = new URLSearchParams();
  for (const [name, raw] of Object.entries(filters)) if (raw) params.set(name, raw);
  return params.toString();
}

function conflictsOf(op: OperationListItemDto): Conflict[] {
  const conflicts = op.details?.['conflicts'];
  return Array.isArray(conflicts) ? (conflicts as Conflict[]) : [];
}

function recordCell(syncId: string, op: OperationListItemDto): SafeHtml {
  const name = op.record.name ?? op.record.remote_id ?? op.record_id ?? '—';
  return op.record_id && op.side
    ? html`<a href="/app/syncs/${syncId}/records/${op.record_id}?side=${op.side}">${name}</a>`
    : html`${name}`;
}

/** The operations log of a sync (filters, cursor paging) and one operation with its field changes. */
@ConsoleController('syncs')
export class OperationsConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly operations: OperationsService,
    private readonly recordTables: RecordTables,
  ) {}

  @Get(':id/operations')
  async list(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('table') table?: string,
    @Query('record') record?: string,
    @Query('since') since?: string,
    @Query('cursor') cursor?: string,
    @Query('limit') limit?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const { sync } = await this.access.load(auth, id);
    const filters: OperationFilters = { limit, table: table || undefined, record: record || undefined };
    filters.since = since?.trim() || undefined;
    let rows: SafeHtml;
    let error: FilterError | null = null;
    try {
      const page = await this.operations.list(auth, {
        sync: id,
        ...filters,
        cursor,
        limit: filters.limit ?? PAGE_SIZE,
      });
      rows = this.table(id, page.data);
      const next =
        page.has_more && page.next_cursor
          ? `${filterQuery(filters)}&cursor=${encodeURIComponent(page.next_cursor)}`
          : null;
      rows = html`${rows}${next ? html`<p><a id="older" href="/app/syncs/${id}/operations?${next.replace(/^&/, '')}">Older operations</a></p>` : null}`;
    } catch (failure) {
      if (!(failure instanceof DomainError) || failure.code === 'not_found') throw failure;
      error = filterError(failure);
      rows = html``;
    }
    const pairs = await this.recordTables.pairs(sync);
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${sync.name}</a> / operations</p>
<h1>Operations</h1>
<p class="lead">Every change Lockstep detected (<em>poll</em>) or wrote (<em>push</em>) on either side, newest first. Times are to the second, in your time zone (UTC without JavaScript).</p>
${this.filterForm(id, filters, pairs, error)}
${rows}`;
    sendPage(response, 200, layout({ title: `Operations · ${sync.name}`, session, nav: 'syncs', body }));
  }

  @Get(':id/operations/:op')
  async one(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('op') opId: string,
    @Res() response: Response,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const { sync } = await this.access.load(auth, id);
    if (!isId('operation', opId)) throw consoleNotFound();
    const op = await this.operations.get(auth, opId);
    if (op.sync_id !== id) throw consoleNotFound();
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${sync.name}</a> / <a href="/app/syncs/${id}/operations">operations</a> / ${op.id}</p>
<h1>${op.action} on the ${op.side ?? '—'} side</h1>
<section class="card" aria-labelledby="what"><h2 id="what">What happened</h2>
<dl class="facts">
  <dt>When</dt><dd id="op-when">${whenExact(op.occurred_at)}</dd>
  <dt>Action</dt><dd>${op.action} (${op.trigger === 'push' ? 'written by Lockstep' : 'detected in the app'})</dd>
  <dt>Table</dt><dd>${op.table?.name ?? '—'}</dd>
  <dt>Record</dt><dd>${recordCell(id, op)}${op.record_id ? html` · <a href="/app/syncs/${id}/operations?record=${op.record_id}">all its operations</a>` : null}</dd>
</dl>
</section>
${this.conflicts(op)}
${this.fieldChanges(op)}`;
    sendPage(response, 200, layout({ title: `Operation ${op.id}`, session, nav: 'syncs', body }));
  }

  private filterForm(
    id: string,
    filters: OperationFilters,
    pairs: PairTables[],
    error: FilterError | null,
  ): SafeHtml {
    const tables = pairs.flatMap((pair) =>
      (['left', 'right'] as const).flatMap((side) => (pair[side] ? [{ side, ...pair[side]! }] : [])),
    );
    const [table, record, since] = (['table', 'record', 'since'] as const).map((n) => fieldError(n, error));
    return html`<form method="get" action="/app/syncs/${id}/operations" class="card" aria-labelledby="filters"><h2 id="filters">Filter</h2>
${error && !error.field ? html`<p class="error" role="alert">${error.message}</p>` : null}
${error?.field ? html`<p class="visually-hidden" role="alert">${error.message}</p>` : null}
<div class="grid">
<div><label for="filter-table">Table</label>${table!.message}<select id="filter-table" name="table"${table!.attrs}><option value="">All tables</option>${tables.map((t) => html`<option value="${t.id}"${filters.table === t.id ? html` selected` : null}>${t.name} (${t.side})</option>`)}</select></div>
<div><label for="filter-record">Record <span class="hint">A record id, <code>rec_…</code></span></label>${record!.message}<input type="text" id="filter-record" name="record" value="${filters.record ?? ''}"${record!.attrs}></div>
<div><label for="filter-since">Since <span class="hint">UTC, for example 2026-01-31 12:00:00</span></label>${since!.message}<input type="text" id="filter-since" name="since" value="${filters.since ?? ''}"${since!.attrs}></div>
</div>
<div class="actions"><button type="submit">Show operations</button> <a href="/app/syncs/${id}/operations">Clear filters</a></div>
</form>`;
  }

  private table(id: string, ops: OperationListItemDto[]): SafeHtml {
    if (ops.length === 0) return html`<p class="muted" id="no-operations">No operations match.</p>`;
    return html`<table id="operations">
<thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Side</th><th scope="col">Table</th><th scope="col">Record</th><th scope="col">Details</th></tr></thead>
<tbody>${ops.map(
      (op) =>
        html`<tr data-operation="${op.id}"><td><a href="/app/syncs/${id}/operations/${op.id}">${whenExact(op.occurred_at)}</a></td><td>${op.action} (${op.trigger})${conflictsOf(op).length ? html` ${badge('awaiting_review', 'conflict')}` : null}</td><td>${op.side ?? '—'}</td><td>${op.table?.name ?? '—'}</td><td>${recordCell(id, op)}</td><td><a href="/app/syncs/${id}/operations/${op.id}" aria-label="Details of the ${op.action} at ${op.occurred_at}">Details</a></td></tr>`,
    )}</tbody>
</table>`;
  }

  private conflicts(op: OperationDto): SafeHtml {
    const conflicts = conflictsOf(op);
    if (conflicts.length === 0) return html``;
    return html`<section class="card" aria-labelledby="conflicts"><h2 id="conflicts">Conflict</h2>
<p class="warning">Both sides changed this record at the same time; Lockstep kept one value per field.</p>
<table><thead><tr><th scope="col">Field</th><th scope="col">Winner</th><th scope="col">Why</th></tr></thead>
<tbody>${conflicts.map((c) => html`<tr><th scope="row">${c.field ?? '—'}</th><td>${c.winner ?? '—'}</td><td>${c.reason ?? '—'}</td></tr>`)}</tbody></table>
</section>`;
  }

  private fieldChanges(op: OperationDto): SafeHtml {
    return html`<section aria-labelledby="changes"><h2 id="changes">Field changes</h2>
${
  op.field_changes.length === 0
    ? html`<p class="muted">No field values${op.action === 'deleted' ? ' (a delete lists none)' : ''}.</p>`
    : html`<table id="field-changes"><thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
<tbody>${op.field_changes.map((c) => html`<tr><th scope="row">${c.field}</th><td>${c.before === null ? html`<span class="muted">empty</span>` : value(c.before)}</td><td>${c.after === null ? html`<span class="muted">empty</span>` : value(c.after)}</td></tr>`)}</tbody></table>`
}
</section>`;
  }
}
