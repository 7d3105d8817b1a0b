import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import {
  DomainError,
  ErrorCode,
  hasControlCharacter,
  INPUT_LIMITS,
  type LiveExportDto,
  type RunDto,
} from '@lockstep/contracts';
import { isId, isLiveExportCadence, type LiveExportMappingsInput } from '@lockstep/domain';
import type { AuthContext } from '../common/auth/auth-context';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { LiveExportAccess } from '../live-export/live-export-access';
import { LiveExportMappingsService } from '../live-export/live-export-mappings.service';
import { LiveExportRunsService } from '../live-export/live-export-runs.service';
import { LiveExportSchemaService } from '../live-export/live-export-schema.service';
import { LiveExportsService } from '../live-export/live-exports.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  ConsolePageError,
  ConsoleRedirect,
  Form,
  sendPage,
  Session,
} from './console-session';
import { layout } from './layout';
import {
  documentFromForm,
  deleteBody,
  isActiveRun,
  type MapInput,
  mapBody,
  newBody,
  type NewInput,
  runBody,
} from './live-export-edit-pages';

type Issue = MapInput['issues'][number];

/** The checks `name` gets over the API (required, at most INPUT_LIMITS.name, no control characters). */
function nameError(name: string | undefined): string | undefined {
  if (!name) return 'Give the live export a name.';
  if (name.length > INPUT_LIMITS.name) return `At most ${INPUT_LIMITS.name} characters.`;
  if (hasControlCharacter(name)) return 'The name must not contain control characters.';
  return undefined;
}

const back = (id: string, notice: string, error = false): ConsoleRedirect =>
  new ConsoleRedirect(`/app/live-exports/${id}?${error ? 'error' : 'notice'}=${encodeURIComponent(notice)}`);

/**
 * Live exports made and run from the console with the services of the REST live export module: create (then
 * the connect pages complete each side), choose tables and fields (the mappings PUT with If-Match: a refused
 * document comes back with its issues at their tables, a stale version with a clear message), save, the
 * schedule, Run now, a run's page with its progress, and cancel.
 */
@ConsoleController('live-exports')
export class LiveExportEditConsoleController {
  constructor(
    private readonly access: LiveExportAccess,
    private readonly exports: LiveExportsService,
    private readonly mappings: LiveExportMappingsService,
    private readonly schema: LiveExportSchemaService,
    private readonly runs: LiveExportRunsService,
    private readonly catalog: ConnectorCatalog,
  ) {}

  @Get('new')
  async newPage(@Session() session: ConsoleSession, @Res() response: Response): Promise<void> {
    await this.available(session);
    this.renderNew(response, session, 200, { values: {}, errors: {} });
  }

  @Post('new')
  async create(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    const auth = await this.available(session);
    const values = { name: form['name']?.trim(), source: form['source'], destination: form['destination'] };
    const errors: NewInput['errors'] = {};
    const badName = nameError(values.name);
    if (badName) errors.name = badName;
    if (!values.source) errors.source = 'Choose the app the tables are read from.';
    if (!values.destination) errors.destination = 'Choose the database the tables are written to.';
    if (Object.keys(errors).length > 0) return this.renderNew(response, session, 400, { values, errors });
    let created: LiveExportDto;
    try {
      // Both sides unconnected: the connect pages take the credentials and the base / location next.
      created = await this.exports.create(auth, {
        name: values.name!,
        source: { connector: values.source! },
        destination: { connector: values.destination! },
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const side = error.details?.['side'];
      if (side === 'source' || side === 'destination') errors[side] = error.message;
      else errors.form = error.message;
      return this.renderNew(response, session, 400, { values, errors });
    }
    const next = created.pending_actions.find((a) => a.type === 'user_authorization');
    throw new ConsoleRedirect(
      next
        ? `/app/live-exports/${created.id}/connect/${next.side}`
        : `/app/live-exports/${created.id}?notice=${encodeURIComponent('Live export created.')}`,
    );
  }

  @Get(':id/map')
  async map(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('table') table?: string | string[],
  ): Promise<void> {
    const auth = await this.available(session);
    const { document, version } = await this.mappings.get(auth, id);
    const picked = table === undefined ? undefined : Array.isArray(table) ? table : [table];
    const input = await this.mapInput(auth, id, version, document, picked);
    sendPage(response, 200, this.mapPage(session, input));
  }

  @Post(':id/map')
  async storeMap(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    const auth = await this.available(session);
    const document = documentFromForm(form);
    const picked = document.tables.map((t) => t.source_table);
    try {
      const stored = await this.mappings.put(auth, id, document, `"${form['version'] ?? ''}"`, undefined);
      const notice =
        `Mappings stored (version ${stored.version}). Save to create the destination tables; runs use ` +
        `the last saved version.`;
      throw back(id, notice);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      if (error.code === ErrorCode.LiveExportUnavailable) throw this.unavailable(session);
      const now = await this.mappings.get(auth, id);
      if (error.code === ErrorCode.RevisionMismatch) {
        // Someone else stored mappings meanwhile: show theirs, say so, keep nothing of ours silently.
        const input = await this.mapInput(auth, id, now.version, now.document, undefined);
        input.error =
          'Someone else changed the mappings while you were editing (perhaps over the API or in another ' +
          'tab). Below are the mappings as they are now; make your changes again and store.';
        return sendPage(response, 409, this.mapPage(session, input));
      }
      const issues = (error.details?.['issues'] as Issue[] | undefined) ?? [];
      const input = await this.mapInput(auth, id, Number(form['version']), document, picked);
      input.issues = issues;
      if (issues.length === 0) input.error = error.message;
      sendPage(response, 400, this.mapPage(session, input));
    }
  }

  @Post(':id/save')
  async save(@Session() session: ConsoleSession, @Param('id') id: string): Promise<never> {
    const auth = await this.available(session);
    try {
      const saved = await this.mappings.save(auth, id);
      throw back(
        id,
        `Saved version ${saved.saved_version}: ${saved.tables.length} table(s) ready in ${saved.location}.`,
      );
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      throw back(id, `Not saved: ${error.message}`, true);
    }
  }

  @Post(':id/schedule')
  async schedule(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Form() form: Record<string, string>,
  ): Promise<never> {
    const auth = await this.available(session);
    const cadence = form['cadence'] ?? 'manual';
    const values = {
      cadence,
      ...(cadence === 'daily'
        ? { time_of_day: form['time_of_day'] ?? '', timezone: form['timezone']?.trim() || 'UTC' }
        : {}),
      enabled: form['enabled'] === 'on',
    };
    try {
      // The service falls back to the current cadence for an unknown one; the API's body validation refuses it.
      if (!isLiveExportCadence(cadence))
        throw new DomainError(ErrorCode.InvalidRequest, `Choose one of the listed cadences.`, {
          errors: [{ path: 'cadence', message: 'unknown cadence' }],
        });
      const schedule = await this.runs.patchSchedule(auth, id, values);
      const next = schedule.next_run_at
        ? ` Next run ${schedule.next_run_at.replace('T', ' ').slice(0, 16)} UTC.`
        : '';
      throw back(id, `Schedule saved.${next}`);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      // Back to the overview with the values and the error at its field.
      const path = (error.details?.['errors'] as { path?: string }[] | undefined)?.[0]?.path;
      const field = path === 'time_of_day' || path === 'timezone' ? path : 'cadence';
      const query = new URLSearchParams({
        schedule_error: error.message,
        schedule_field:
          error.code === ErrorCode.InvalidRequest || error.code === ErrorCode.PlanRequired ? field : '',
        cadence,
        time_of_day: form['time_of_day'] ?? '',
        timezone: form['timezone'] ?? '',
        enabled: values.enabled ? 'on' : 'off',
      });
      throw new ConsoleRedirect(`/app/live-exports/${id}?${query.toString()}#schedule`);
    }
  }

  @Post(':id/trigger')
  async trigger(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Form() form: Record<string, string>,
  ): Promise<never> {
    const auth = await this.available(session);
    try {
      const run = await this.runs.trigger(auth, id, form['force'] === 'true');
      throw new ConsoleRedirect(`/app/live-exports/${id}/runs/${run.id}`);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      throw back(id, error.message, true);
    }
  }

  @Get(':id/runs/:run')
  async run(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('run') runId: string,
    @Res() response: Response,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const { dto, run } = await this.runOf(session, id, runId);
    const refreshSeconds = isActiveRun(run) ? 2 : undefined;
    const body = runBody(session, dto, run);
    sendPage(
      response,
      200,
      layout({ title: `Run · ${dto.name}`, session, nav: 'live-exports', body, notice, refreshSeconds }),
    );
  }

  @Post(':id/runs/:run/cancel')
  async cancel(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('run') runId: string,
    @Form() form: Record<string, string>,
  ): Promise<never> {
    const { run } = await this.runOf(session, id, runId);
    let message: string;
    try {
      const after = await this.runs.cancel(consoleAuth(session), run.id);
      message = after.state === 'canceled' ? 'Run canceled.' : 'Canceling: the run stops within a second.';
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      message = error.message;
    }
    const query = `notice=${encodeURIComponent(message)}`;
    if (form['from'] === 'run') throw new ConsoleRedirect(`/app/live-exports/${id}/runs/${run.id}?${query}`);
    throw new ConsoleRedirect(`/app/live-exports/${id}?${query}`);
  }

  @Post(':id/rename')
  async rename(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Form() form: Record<string, string>,
  ): Promise<never> {
    const auth = await this.available(session);
    const name = form['name']?.trim();
    const refused = nameError(name);
    if (refused) throw back(id, `Not renamed: ${refused}`, true);
    // The same call as PATCH /v1/live-export/live-exports/{id} with `{name}`.
    await this.exports.update(auth, id, { name });
    throw back(id, `Renamed to “${name}”.`);
  }

  @Get(':id/delete')
  async confirmDelete(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
  ): Promise<void> {
    const auth = await this.available(session);
    const { entity } = await this.access.load(auth, id, 'read');
    const runs = (await this.runs.list(auth, { liveExport: id, limit: 1, cursor: undefined })).data;
    const active = runs.find(isActiveRun) ?? null;
    const body = deleteBody(session, this.exports.dto(entity), active);
    sendPage(response, 200, layout({ title: `Delete ${entity.name}`, session, nav: 'live-exports', body }));
  }

  /** The service of `DELETE /v1/live-export/live-exports/{id}`; only the confirmation page's button posts here. */
  @Post(':id/delete')
  async delete(@Session() session: ConsoleSession, @Param('id') id: string): Promise<never> {
    const auth = await this.available(session);
    const { entity } = await this.access.load(auth, id, 'read');
    const deleted = await this.exports.remove(auth, id);
    const notice =
      `Deleted the live export “${entity.name}”${deleted.canceled_run ? ' and canceled its run' : ''}. ` +
      'The tables it created in the destination stay, with their rows.';
    throw new ConsoleRedirect(`/app/live-exports?notice=${encodeURIComponent(notice)}`);
  }

  // ---- helpers ----

  private async mapInput(
    auth: AuthContext,
    id: string,
    version: number,
    document: LiveExportMappingsInput,
    picked: string[] | undefined,
  ): Promise<MapInput> {
    const { entity } = await this.access.load(auth, id, 'read');
    const dto = this.exports.dto(entity);
    if (entity.sourceCredentials === null) {
      const input: MapInput = { dto, version, tables: [], chosen: [], document, issues: [] };
      input.error = 'Connect the source first: its tables are read from it.';
      return input;
    }
    const tables = (await this.schema.tables(auth, id)).data.map((t) => ({
      remoteId: t.remote_id,
      name: t.name,
    }));
    const wanted = picked ?? document.tables.map((t) => t.source_table);
    const chosenTables = wanted
      .map((ref) => tables.find((t) => t.remoteId === ref) ?? tables.find((t) => t.name === ref))
      .filter((t, i, all): t is (typeof tables)[number] => t !== undefined && all.indexOf(t) === i);
    const chosen = [];
    for (const table of chosenTables)
      chosen.push({ table, fields: (await this.schema.fields(auth, id, table.remoteId)).data });
    return { dto, version, tables, chosen, document, issues: [] };
  }

  private mapPage(session: ConsoleSession, input: MapInput) {
    const title = `Tables and fields · ${input.dto.name}`;
    return layout({ title, session, nav: 'live-exports', body: mapBody(session, input) });
  }

  private renderNew(
    response: Response,
    session: ConsoleSession,
    status: number,
    input: Omit<NewInput, 'connectors'>,
  ): void {
    const connectors = [...this.catalog.list()];
    const body = newBody(session, { ...input, connectors });
    sendPage(response, status, layout({ title: 'New live export', session, nav: 'live-exports', body }));
  }

  private async runOf(
    session: ConsoleSession,
    id: string,
    runId: string,
  ): Promise<{ dto: LiveExportDto; run: RunDto }> {
    const auth = await this.available(session);
    const { entity } = await this.access.load(auth, id, 'read');
    if (!isId('run', runId)) throw consoleNotFound();
    const run = await this.runs.get(auth, runId);
    if (run.live_export !== entity.id) throw consoleNotFound();
    return { dto: this.exports.dto(entity), run };
  }

  private async available(session: ConsoleSession): Promise<AuthContext> {
    const auth = consoleAuth(session);
    if (!(await this.access.gate(auth)).available) throw this.unavailable(session);
    return auth;
  }

  private unavailable(session: ConsoleSession): ConsolePageError {
    return new ConsolePageError(
      403,
      'Live export is not available',
      `Live export copies tables of an app into your own database on a schedule. It needs the pro or ` +
        `business plan and an active subscription; this account is on the ${session.plan} plan.`,
    );
  }
}
