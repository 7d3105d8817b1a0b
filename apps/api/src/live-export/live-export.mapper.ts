import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import type { LiveExportDto, RunDto, SavedTableDto, SaveDto, ScheduleDto } from '@lockstep/contracts';
import type { LiveExportPlan } from '@lockstep/domain';
import type { LiveExportEntity, LiveExportRunEntity, LiveExportScheduleEntity } from '@lockstep/persistence';
import type { LiveExportLinks } from './live-export-access';

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

export function toLiveExportDto(
  entity: LiveExportEntity,
  links: LiveExportLinks,
  find: (type: string) => ConnectorDeclaration | undefined,
): LiveExportDto {
  const source = find(entity.sourceConnector);
  const destination = find(entity.destinationConnector);
  const sourceConnected = entity.sourceCredentials !== null;
  const destinationConnected = entity.destinationCredentials !== null;
  const pending = [];
  if (!sourceConnected)
    pending.push(
      links.connectAction(
        entity.id,
        'source',
        entity.sourceConnector,
        source?.displayName ?? entity.sourceConnector,
        entity.sourceAuthMethod,
      ),
    );
  if (!destinationConnected)
    pending.push(
      links.connectAction(
        entity.id,
        'destination',
        entity.destinationConnector,
        destination?.displayName ?? entity.destinationConnector,
        entity.destinationAuthMethod,
      ),
    );
  return {
    id: entity.id,
    name: entity.name,
    status: entity.savedVersion === null ? 'draft' : 'saved',
    source: {
      connector: entity.sourceConnector,
      auth_method: entity.sourceAuthMethod,
      connected: sourceConnected,
      connected_at: iso(entity.sourceConnectedAt),
      base: entity.sourceBase,
      tables_url: sourceConnected ? links.liveExport(entity.id, '/source/tables') : null,
    },
    destination: {
      connector: entity.destinationConnector,
      auth_method: entity.destinationAuthMethod,
      connected: destinationConnected,
      connected_at: iso(entity.destinationConnectedAt),
      location: entity.destinationLocation,
      location_kind: destination?.capabilities.liveExport.locationKind ?? null,
      locations_url: destinationConnected ? links.liveExport(entity.id, '/destination/locations') : null,
    },
    pending_actions: pending,
    mappings_version: entity.mappingsVersion,
    saved_version: entity.savedVersion,
    saved_at: iso(entity.savedAt),
    unsaved_changes: entity.mappingsVersion !== entity.savedVersion,
    created_at: entity.createdAt.toISOString(),
    updated_at: entity.updatedAt.toISOString(),
    url: links.liveExport(entity.id),
    mappings_url: links.liveExport(entity.id, '/mappings'),
    validate_url: links.liveExport(entity.id, '/mappings/validate'),
    save_url: links.liveExport(entity.id, '/save'),
    schedule_url: links.liveExport(entity.id, '/schedule'),
    trigger_url: links.liveExport(entity.id, '/trigger'),
    runs_url: links.runs(entity.id),
  };
}

export function planTablesDto(plan: LiveExportPlan): SavedTableDto[] {
  return plan.tables.map((table) => ({
    source_table: table.sourceTable,
    destination_table: table.destinationTable,
    columns: table.columns.map((column) => ({
      source_field: column.sourceField,
      column: column.column,
      type_class: column.typeClass,
      primary: column.primary === true,
    })),
  }));
}

export function toSaveDto(
  entity: LiveExportEntity,
  plan: LiveExportPlan,
  links: LiveExportLinks,
  tables: SavedTableDto[] = planTablesDto(plan),
): SaveDto {
  return {
    live_export: entity.id,
    saved_version: entity.savedVersion!,
    saved_at: entity.savedAt!.toISOString(),
    unsaved_changes: entity.mappingsVersion !== entity.savedVersion,
    destination_connector: plan.destination.connector,
    location: plan.destination.location,
    tables,
    live_export_url: links.liveExport(entity.id),
    schedule_url: links.liveExport(entity.id, '/schedule'),
    trigger_url: links.liveExport(entity.id, '/trigger'),
  };
}

export function toScheduleDto(
  schedule: LiveExportScheduleEntity,
  allowedCadences: string[],
  nextRunAt: Date | null,
  links: LiveExportLinks,
): ScheduleDto {
  return {
    live_export: schedule.liveExportId,
    cadence: schedule.cadence,
    enabled: schedule.enabled,
    time_of_day: schedule.timeOfDay,
    timezone: schedule.timezone,
    allowed_cadences: allowedCadences,
    next_run_at: iso(nextRunAt),
    updated_at: schedule.updatedAt.toISOString(),
    live_export_url: links.liveExport(schedule.liveExportId),
    runs_url: links.runs(schedule.liveExportId),
  };
}

const FINISHED = new Set(['succeeded', 'failed', 'canceled']);

export function toRunDto(run: LiveExportRunEntity, links: LiveExportLinks): RunDto {
  return {
    id: run.id,
    live_export: run.liveExportId,
    state: run.state,
    trigger: run.trigger,
    forced: run.forced,
    slot_at: iso(run.slotAt),
    queued_at: run.createdAt.toISOString(),
    started_at: iso(run.startedAt),
    finished_at: iso(run.finishedAt),
    cancel_requested_at: iso(run.cancelRequestedAt),
    rows_read: Number(run.rowsRead),
    rows_written: Number(run.rowsWritten),
    rows_removed: Number(run.rowsRemoved),
    error: run.error ? { code: run.error.code, message: run.error.message } : null,
    url: links.run(run.id),
    cancel_url: FINISHED.has(run.state) ? null : links.run(run.id, '/cancel'),
    live_export_url: links.liveExport(run.liveExportId),
  };
}
