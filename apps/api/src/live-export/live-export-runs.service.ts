import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, QueryFailedError } from 'typeorm';
import {
  DomainError,
  ErrorCode,
  type RunDto,
  type RunListDto,
  type ScheduleDto,
  type SchedulePatchDto,
} from '@lockstep/contracts';
import { isId, newId } from '@lockstep/domain';
import {
  isLiveExportCadence,
  isTimeOfDay,
  isTimeZone,
  type LiveExportCadence,
  type LiveExportScheduleSpec,
  nextSlot,
} from '@lockstep/domain';
import { JobProducer, LIVE_EXPORT_JOBS, QUEUES } from '@lockstep/jobs';
import {
  type LastRun,
  type LiveExportEntity,
  type LiveExportRunEntity,
  type LiveExportScheduleEntity,
  RunStore,
  ScheduleStore,
} from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { CursorService, parseLimit } from '../common/pagination/cursor.service';
import { LiveExportAccess, type LiveExportGate, LiveExportLinks } from './live-export-access';
import { LIVE_EXPORT_LIST_LIMIT, LiveExportsService } from './live-exports.service';
import { toRunDto, toScheduleDto } from './live-export.mapper';

const ACTIVE_RUN_INDEX = 'live_export_runs_one_active';

/** `live_export` (required) of the runs listing: `missing_live_export`, `invalid_live_export`. */
export function requireLiveExportParam(raw: unknown): string {
  if (raw === undefined || raw === null || raw === '')
    throw new DomainError(ErrorCode.MissingLiveExport, 'The runs listing needs `?live_export=<lex_...>`.');
  if (typeof raw !== 'string' || !isId('liveExport', raw)) {
    throw new DomainError(
      ErrorCode.InvalidLiveExport,
      `\`live_export\` must be a live export id (\`lex_...\`), not "${String(raw).slice(0, 100)}".`,
    );
  }
  return raw;
}

function isUniqueViolation(error: unknown, constraint: string): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const driver = (error as QueryFailedError & { driverError?: { code?: string; constraint?: string } })
    .driverError;
  return driver?.code === '23505' && driver.constraint === constraint;
}

/**
 * Schedule (GET/PATCH), trigger, runs listing, run, cancel. The worker executes runs and fires schedules
 * (`apps/worker/src/live-export/`); this side records intent: a `queued` run plus its Bull job, a schedule
 * row, a cancel request.
 */
@Injectable()
export class LiveExportRunsService {
  private readonly runs: RunStore;
  private readonly schedules: ScheduleStore;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    private readonly access: LiveExportAccess,
    private readonly links: LiveExportLinks,
    private readonly cursors: CursorService,
    private readonly jobs: JobProducer,
    private readonly exports: LiveExportsService,
  ) {
    this.runs = new RunStore(dataSource.manager);
    this.schedules = new ScheduleStore(dataSource.manager);
  }

  // ---- schedule ----

  async schedule(auth: AuthContext, id: string): Promise<ScheduleDto> {
    const { entity, gate } = await this.access.load(auth, id, 'read');
    this.requireSaved(entity, 'A schedule needs a saved live export');
    const schedule = await this.schedules.find(entity.id);
    if (!schedule)
      throw new DomainError(
        ErrorCode.NotFound,
        `Live export ${entity.id} has no schedule yet; PATCH .../schedule creates it.`,
      );
    return this.scheduleDto(schedule, gate);
  }

  async patchSchedule(auth: AuthContext, id: string, body: SchedulePatchDto): Promise<ScheduleDto> {
    const { entity, gate } = await this.access.load(auth, id, 'write');
    this.requireSaved(entity, 'A schedule needs a saved live export');
    const current = await this.schedules.find(entity.id);
    const cadence: LiveExportCadence =
      body.cadence !== undefined && isLiveExportCadence(body.cadence)
        ? body.cadence
        : (current?.cadence ?? 'manual');
    if (body.cadence !== undefined && !gate.allowedCadences.includes(cadence)) {
      throw new DomainError(
        ErrorCode.PlanRequired,
        `Cadence "${cadence}" is above this account's plan; pick one of ${gate.allowedCadences.join(', ')}.`,
        { cadence, allowed_cadences: gate.allowedCadences },
      );
    }
    let timeOfDay: string | null = null;
    let timezone: string | null = null;
    if (cadence === 'daily') {
      timeOfDay = body.time_of_day ?? (current?.cadence === 'daily' ? current.timeOfDay : null);
      timezone = body.timezone ?? (current?.cadence === 'daily' ? current.timezone : null) ?? 'UTC';
      if (timeOfDay === null)
        throw new DomainError(
          ErrorCode.InvalidRequest,
          'A daily schedule needs `time_of_day` ("HH:MM", 24 h).',
          { errors: [{ path: 'time_of_day', message: 'required for daily' }] },
        );
      if (!isTimeOfDay(timeOfDay))
        throw new DomainError(
          ErrorCode.InvalidRequest,
          `time_of_day "${timeOfDay}" must be "HH:MM" from 00:00 to 23:59.`,
          { errors: [{ path: 'time_of_day', message: 'must be HH:MM' }] },
        );
      if (!isTimeZone(timezone))
        throw new DomainError(
          ErrorCode.InvalidRequest,
          `timezone "${timezone}" is not an IANA time zone (for example "Europe/Berlin").`,
          { errors: [{ path: 'timezone', message: 'must be an IANA time zone' }] },
        );
    } else if (body.time_of_day !== undefined || body.timezone !== undefined) {
      throw new DomainError(
        ErrorCode.InvalidRequest,
        `time_of_day and timezone belong to the daily cadence; this schedule is "${cadence}".`,
        {
          errors: [
            { path: body.time_of_day !== undefined ? 'time_of_day' : 'timezone', message: 'daily only' },
          ],
        },
      );
    }
    const enabled = body.enabled ?? current?.enabled ?? true;
    // Upsert: the first PATCH creates the schedule.
    await this.schedules.upsert(entity.id, { cadence, timeOfDay, timezone, enabled });
    return this.scheduleDto(await this.schedules.get(entity.id), gate);
  }

  // ---- runs ----

  async trigger(auth: AuthContext, id: string, force: boolean): Promise<RunDto> {
    const { entity } = await this.access.load(auth, id, 'write');
    this.requireSaved(entity, 'A run needs a saved live export');
    if (entity.mappingsVersion !== entity.savedVersion && !force) {
      throw new DomainError(
        ErrorCode.UnsavedChanges,
        `Live export ${entity.id} has unsaved changes (version ${entity.mappingsVersion}, saved ` +
          `${entity.savedVersion}): save them first, or trigger with {"force": true} to run the last ` +
          `saved plan.`,
        { mappings_version: entity.mappingsVersion, saved_version: entity.savedVersion },
      );
    }
    const runId = newId('run');
    try {
      await this.runs.queueManual(runId, entity.id, auth.accountId, force);
    } catch (error) {
      if (!isUniqueViolation(error, ACTIVE_RUN_INDEX)) throw error;
      const active = await this.runs.activeOf(entity.id);
      throw new DomainError(
        ErrorCode.RunInProgress,
        `Live export ${entity.id} already has an active ` +
          `run${active ? ` (${active.id}, ${active.state})` : ''}; wait for it or cancel it.`,
        {
          run: active?.id ?? null,
          run_url: active ? this.links.run(active.id) : null,
        },
      );
    }
    try {
      await this.jobs.add(QUEUES.liveExport, LIVE_EXPORT_JOBS.run, { runId }, { jobId: `run:${runId}` });
    } catch (error) {
      // Without its job the run would never start: take it back so the export is not blocked.
      await this.runs.deleteQueued(runId);
      throw error;
    }
    return toRunDto(await this.runs.get(runId), this.links);
  }

  async list(
    auth: AuthContext,
    raw: { liveExport: unknown; limit: unknown; cursor: unknown },
  ): Promise<RunListDto> {
    const liveExportId = requireLiveExportParam(raw.liveExport);
    const limit = parseLimit(raw.limit, LIVE_EXPORT_LIST_LIMIT);
    const endpoint = `GET /live-export/runs?live_export=${liveExportId}`;
    const position = this.cursors.decode(raw.cursor, endpoint, auth.accountId);
    await this.access.load(auth, liveExportId, 'read');
    const rows = await this.runs.page(liveExportId, limit + 1, position);
    const runs = await this.runs.findByIds(rows.map((row) => row.id));
    const byId = new Map(runs.map((run) => [run.id, run]));
    const present = rows.filter((row) => byId.has(row.id));
    return this.cursors.page(
      present,
      limit,
      endpoint,
      auth.accountId,
      (row) => ({ createdAt: row.key, id: row.id }),
      (row) => toRunDto(byId.get(row.id)!, this.links),
    );
  }

  async get(auth: AuthContext, runId: string): Promise<RunDto> {
    return toRunDto(await this.loadRun(auth, runId, 'read'), this.links);
  }

  /**
   * Queued: canceled at once. Running: `cancel_requested_at` is set and the worker stops within a second.
   * Finished: `409 run_not_active`.
   */
  async cancel(auth: AuthContext, runId: string): Promise<RunDto> {
    const run = await this.loadRun(auth, runId, 'write');
    const queued = await this.runs.cancelQueued(run.id);
    if (queued) {
      await this.exports.removeQueuedJob(run.id);
    } else {
      await this.runs.requestCancel(run.id);
    }
    const now = await this.runs.get(run.id);
    if (now.state !== 'canceled' && now.state !== 'running') {
      throw new DomainError(
        ErrorCode.RunNotActive,
        `Run ${run.id} already finished ` +
          `(${now.state}${now.finishedAt ? ` at ${now.finishedAt.toISOString()}` : ''}); only a queued ` +
          `or running run can be canceled.`,
        { state: now.state },
      );
    }
    if (now.state === 'canceled' && !queued) {
      throw new DomainError(
        ErrorCode.RunNotActive,
        `Run ${run.id} was already canceled${now.finishedAt ? ` at ${now.finishedAt.toISOString()}` : ''}.`,
        { state: now.state },
      );
    }
    return toRunDto(now, this.links);
  }

  /** For the console's list: the schedules of these exports and the latest run of each. */
  async summaries(
    auth: AuthContext,
    liveExportIds: string[],
  ): Promise<{ schedules: LiveExportScheduleEntity[]; lastRuns: LastRun[] }> {
    if (liveExportIds.length === 0) return { schedules: [], lastRuns: [] };
    const schedules = await this.schedules.findMany(liveExportIds);
    return { schedules, lastRuns: await this.runs.lastRuns(liveExportIds, auth.accountId) };
  }

  // ---- helpers ----

  private async loadRun(
    auth: AuthContext,
    runId: string,
    mode: 'read' | 'write',
  ): Promise<LiveExportRunEntity> {
    const gate = mode === 'write' ? await this.access.requireWritable(auth) : await this.access.gate(auth);
    const notFound = () => new DomainError(ErrorCode.NotFound, `No live export run ${runId}.`);
    if (!gate.available || !isId('run', runId)) throw notFound();
    const run = await this.runs.findOwned(runId, auth.accountId);
    if (!run) throw notFound();
    return run;
  }

  private requireSaved(entity: LiveExportEntity, what: string): void {
    if (entity.savedVersion === null) {
      throw new DomainError(
        ErrorCode.NotProvisioned,
        `${what}: live export ${entity.id} was never saved. PUT its mappings, then POST .../save to ` +
          `provision the destination.`,
      );
    }
  }

  private scheduleDto(schedule: LiveExportScheduleEntity, gate: LiveExportGate): ScheduleDto {
    const spec: LiveExportScheduleSpec = {
      cadence: schedule.cadence,
      enabled: schedule.enabled,
      timeOfDay: schedule.timeOfDay,
      timezone: schedule.timezone,
    };
    let next: Date | null = null;
    try {
      next = nextSlot(spec, new Date());
    } catch {
      next = null; // a stored daily schedule with a zone this runtime no longer knows: no slot
    }
    return toScheduleDto(schedule, gate.allowedCadences, next, this.links);
  }
}
