import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, type ScheduleDto } from '@lockstep/contracts';
import type { BaseInfo } from '@lockstep/connectors-core';
import type { AuthContext } from '../common/auth/auth-context';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { LiveExportAccess, type LiveExportSide } from '../live-export/live-export-access';
import { LiveExportConnections } from '../live-export/live-export-connections';
import { LiveExportRunsService } from '../live-export/live-export-runs.service';
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
  type ConnectInput,
  connectBody,
  listBody,
  type LiveExportRow,
  overviewBody,
  type OverviewInput,
} from './live-exports-pages';

const isLiveExportSide = (side: string): side is LiveExportSide =>
  side === 'source' || side === 'destination';

/** The console's wording for the errors a connect can end in (the API's wording points at API endpoints). */
function connectMessage(error: DomainError, side: LiveExportSide): string {
  switch (error.code) {
    case ErrorCode.SideAlreadyConnected:
      return (
        `The ${side} is already connected (perhaps from another tab or over the API). Its credentials ` +
        `cannot be replaced; to use other credentials, create a new live export.`
      );
    case ErrorCode.InvalidLocation:
      return (
        'The destination does not offer that location (any more). Check the credentials again and pick ' +
        'one of the listed locations.'
      );
    default:
      return error.message;
  }
}

/** A schedule change the service refused (redirected back with the values sent and the message). */
function scheduleRetry(query: Record<string, string | undefined>): OverviewInput['scheduleRetry'] {
  const message = query['schedule_error'];
  if (!message) return undefined;
  const field = query['schedule_field'];
  return {
    values: {
      cadence: query['cadence'],
      time_of_day: query['time_of_day'],
      timezone: query['timezone'],
      enabled: query['enabled'] !== 'off',
    },
    errors:
      field === 'cadence' || field === 'time_of_day' || field === 'timezone'
        ? { [field]: message }
        : { form: message },
  };
}

/**
 * Live exports in the console (`/app/live-exports`): the list, an export's overview (sides, mappings summary,
 * schedule with its form, latest runs with their progress and Cancel, updated in place while a run is active)
 * and the page its `user_authorization` pending action opens, which completes a side created without
 * credentials through the same service call as the API's PATCH. Create, mappings, save, schedule, Run now
 * and cancel: LiveExportEditConsoleController.
 */
@ConsoleController('live-exports')
export class LiveExportsConsoleController {
  constructor(
    private readonly access: LiveExportAccess,
    private readonly exports: LiveExportsService,
    private readonly runs: LiveExportRunsService,
    private readonly connections: LiveExportConnections,
    private readonly catalog: ConnectorCatalog,
  ) {}

  @Get()
  async list(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Query('cursor') cursor?: string,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = await this.available(session);
    const page = await this.exports.list(auth, 25, cursor);
    const ids = page.data.map((dto) => dto.id);
    const { schedules, lastRuns } = await this.runs.summaries(auth, ids);
    const rows: LiveExportRow[] = page.data.map((dto) => {
      const schedule = schedules.find((s) => s.liveExportId === dto.id);
      const run = lastRuns.find((r) => r.live_export_id === dto.id);
      return {
        dto,
        sourceName: this.catalog.find(dto.source.connector)?.displayName ?? dto.source.connector,
        destinationName:
          this.catalog.find(dto.destination.connector)?.displayName ?? dto.destination.connector,
        schedule: schedule
          ? {
              cadence: schedule.cadence,
              enabled: schedule.enabled,
              timeOfDay: schedule.timeOfDay,
              timezone: schedule.timezone,
            }
          : null,
        lastRun: run ? { state: run.state, at: new Date(run.at).toISOString() } : null,
      };
    });
    sendPage(
      response,
      200,
      layout({
        title: 'Live exports',
        session,
        nav: 'live-exports',
        body: listBody(rows, page.next_cursor),
        notice,
      }),
    );
  }

  @Get(':id')
  async overview(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query() query: Record<string, string | undefined>,
  ): Promise<void> {
    const auth = await this.available(session);
    const { entity, gate } = await this.access.load(auth, id, 'read');
    const dto = this.exports.dto(entity);
    let schedule: ScheduleDto | null = null;
    if (entity.savedVersion !== null) {
      try {
        schedule = await this.runs.schedule(auth, id);
      } catch (error) {
        // No schedule yet: `not_found` from the schedule itself (the export was loaded above).
        if (!(error instanceof DomainError) || error.code !== ErrorCode.NotFound) throw error;
      }
    }
    const runs = (await this.runs.list(auth, { liveExport: id, limit: 10, cursor: undefined })).data;
    const body = overviewBody({
      dto,
      entity,
      source: this.catalog.find(entity.sourceConnector),
      destination: this.catalog.find(entity.destinationConnector),
      schedule,
      runs,
      session,
      allowedCadences: gate.allowedCadences,
      scheduleRetry: scheduleRetry(query),
    });
    const refreshSeconds = runs.some((run) => run.state === 'queued' || run.state === 'running')
      ? 2
      : undefined;
    sendPage(
      response,
      200,
      layout({
        title: dto.name,
        session,
        nav: 'live-exports',
        body,
        notice: query['notice'],
        error: query['error'],
        refreshSeconds,
      }),
    );
  }

  @Get(':id/connect/:side')
  async connect(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('side') side: string,
    @Res() response: Response,
  ): Promise<void> {
    const page = await this.loadSide(session, id, side);
    this.renderConnect(response, session, 200, page);
  }

  @Post(':id/connect/:side')
  async connectAction(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('side') side: string,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    const page = await this.loadSide(session, id, side);
    const { auth, declaration } = page;
    const where = page.side;
    if (declaration.auth.method !== 'api_key') {
      // Browser sign-in is not offered for live export sides: the page says so (no form posts here).
      this.renderConnect(response, session, 400, page);
      return;
    }
    const values: Record<string, string> = {};
    for (const field of declaration.auth.fields) values[field.id] = form[`auth_${field.id}`] ?? '';
    const chosen = where === 'source' ? form['base'] : form['location'];
    try {
      if (page.connected)
        throw new DomainError(ErrorCode.SideAlreadyConnected, `The ${where} is already connected.`, {
          side: where,
        });
      const credentials = this.connections.credentialsFrom(declaration, values, where);
      if (form['step'] !== 'connect' || !chosen) {
        // Step 1: check the credentials live and list what they reach.
        const choices: BaseInfo[] =
          where === 'source'
            ? await this.connections.with(declaration, credentials, null, 'source', async (connection) => {
                await connection.checkCredentials();
                return connection.listBases();
              })
            : await this.connections.checkDestination(declaration, credentials);
        if (choices.length === 0) {
          const error =
            `The credentials work, but they reach no ${where === 'source' ? 'base' : 'location'} ` +
            `(schema or database). Grant access to one and check again.`;
          this.renderConnect(response, session, 400, { ...page, values, error });
          return;
        }
        this.renderConnect(response, session, 200, { ...page, values, choices });
        return;
      }
      // Step 2: the same call as PATCH /v1/live-export/live-exports/{id} with `{source: {auth, base}}` or
      // `{destination: {auth, location}}`.
      await this.exports.update(
        auth,
        page.dto.id,
        where === 'source'
          ? { source: { auth: values, base: chosen } }
          : { destination: { auth: values, location: chosen } },
      );
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      if (error.code === ErrorCode.LiveExportUnavailable) throw this.unavailable(session);
      const fresh = await this.loadSide(session, id, side);
      const status = error.code === ErrorCode.SideAlreadyConnected ? 409 : 400;
      // Credentials are re-filled only while the side still needs them.
      this.renderConnect(response, session, status, {
        ...fresh,
        values: fresh.connected ? undefined : values,
        error: connectMessage(error, where),
      });
      return;
    }
    const notice = `Connected ${declaration.displayName} as the ${where} of the live export.`;
    throw new ConsoleRedirect(`/app/live-exports/${page.dto.id}?notice=${encodeURIComponent(notice)}`);
  }

  // ---- helpers ----

  /** The caller context when the account has live export; a readable page (403) otherwise. */
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

  private async loadSide(
    session: ConsoleSession,
    id: string,
    side: string,
  ): Promise<ConnectInput & { auth: AuthContext }> {
    if (!isLiveExportSide(side)) throw consoleNotFound();
    const auth = await this.available(session);
    const { entity } = await this.access.load(auth, id, 'read');
    return {
      auth,
      dto: this.exports.dto(entity),
      side,
      declaration: this.connections.declaration(entity, side),
      connected: (side === 'source' ? entity.sourceCredentials : entity.destinationCredentials) !== null,
    };
  }

  private renderConnect(
    response: Response,
    session: ConsoleSession,
    status: number,
    input: ConnectInput,
  ): void {
    const title = `Connect the ${input.side}`;
    sendPage(
      response,
      status,
      layout({ title, session, nav: 'live-exports', body: connectBody(session, input) }),
    );
  }
}
