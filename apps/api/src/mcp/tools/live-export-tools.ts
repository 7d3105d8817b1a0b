import type { CreateLiveExportDto, LiveExportDto, SchedulePatchDto, TriggerDto } from '@lockstep/contracts';
import { LiveExportMappingsController } from '../../live-export/live-export-mappings.controller';
import {
  LiveExportRunsController,
  LiveExportScheduleController,
} from '../../live-export/live-export-runs.controller';
import { LiveExportsController } from '../../live-export/live-exports.controller';
import { pageSummary } from './summaries';
import type { ToolDefinition } from './tool';

const READ = { readOnlyHint: true } as const;
const WRITE = { readOnlyHint: false, destructiveHint: false } as const;
const EXPORT_ID = { id: 'live_export_id' };

function exportSummary(verb: string, lex: LiveExportDto): string {
  const waiting = lex.pending_actions.length
    ? ` Waiting for a person: ${lex.pending_actions.map((a) => a.type).join(', ')} (relay each \`instruction\` and \`url\`).`
    : '';
  const unsaved = lex.unsaved_changes ? ' It has unsaved mapping changes (live_export_save).' : '';
  return `${verb} live export ${lex.id} "${lex.name}" (${lex.status}).${unsaved}${waiting}`;
}

/** Live export: a scheduled one-way copy of source tables into a destination. */
export const LIVE_EXPORT_TOOLS: ToolDefinition[] = [
  {
    name: 'live_export_list',
    title: 'List live exports',
    description:
      "Lists the account's live exports (scheduled one-way copies of source tables into a destination), newest first. Page with `cursor`.",
    route: [LiveExportsController, 'list'],
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.liveExports.list(auth, input.query.limit, input.query.cursor);
      return { body, summary: pageSummary('live export(s)', body) };
    },
  },
  {
    name: 'live_export_get',
    title: 'Get a live export',
    description:
      'One live export: its source and destination, pending actions a person must take (relay `instruction` and `url`), mappings version and whether it has unsaved changes.',
    route: [LiveExportsController, 'get'],
    rename: EXPORT_ID,
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.liveExports.get(auth, input.path.id);
      return { body, summary: exportSummary('Live export', body) };
    },
  },
  {
    name: 'live_export_create',
    title: 'Create a live export',
    description:
      'Creates a draft live export from a `source` to a `destination` connector (see the live export connectors and their roles). An api_key connector may take `auth` inline (checked before anything is kept); an oauth one comes back unconnected with a pending action a person completes in the browser. Next: map tables (live_export_update_mappings), then live_export_save.',
    route: [LiveExportsController, 'create'],
    annotations: WRITE,
    run: async (s, auth, input) => {
      const body = await s.liveExports.create(auth, input.body as CreateLiveExportDto);
      return { body, summary: exportSummary('Created', body) };
    },
  },
  {
    name: 'live_export_get_mappings',
    title: 'Get live export mappings',
    description:
      'The live export mappings document: which source tables and fields are copied and under which destination names. Edit it and send it back with live_export_update_mappings, passing the version this answer names as `if_match`.',
    route: [LiveExportMappingsController, 'get'],
    rename: EXPORT_ID,
    annotations: READ,
    run: async (s, auth, input) => {
      const view = await s.liveExportMappings.get(auth, input.path.id);
      const summary = `Mappings version "${view.version}" (send it as \`if_match\` with live_export_update_mappings).`;
      return { body: view.document, summary };
    },
  },
  {
    name: 'live_export_update_mappings',
    title: 'Replace live export mappings',
    description:
      'Replaces the whole live export mappings document; `if_match` (the current version) is required. The change is unsaved until live_export_save creates or updates the destination tables.',
    route: [LiveExportMappingsController, 'put'],
    rename: EXPORT_ID,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: async (s, auth, input) => {
      const view = await s.liveExportMappings.put(auth, input.path.id, input.body, input.ifMatch, undefined);
      return {
        body: view.document,
        summary: `Stored; new version "${view.version}". Not saved yet: live_export_save.`,
      };
    },
  },
  {
    name: 'live_export_save',
    title: 'Save a live export',
    description:
      'Saves the mappings: creates (or updates) the destination tables so runs can copy into them. Needed once before the first run or schedule, and after every mappings change.',
    route: [LiveExportMappingsController, 'save'],
    rename: EXPORT_ID,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: async (s, auth, input) => {
      const body = await s.liveExportMappings.save(auth, input.path.id);
      return {
        body,
        summary: `Saved version ${body.saved_version}: ${body.tables.length} table(s) in ${body.location}.`,
      };
    },
  },
  {
    name: 'live_export_trigger',
    title: 'Run a live export now',
    description:
      'Starts a run now, whatever the schedule. Refused while a run is active (`run_in_progress`), before the first save (`not_provisioned`), or with unsaved mapping changes (`unsaved_changes`) unless `force` is true.',
    route: [LiveExportScheduleController, 'trigger'],
    rename: EXPORT_ID,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    run: async (s, auth, input) => {
      const body = await s.liveExportRuns.trigger(
        auth,
        input.path.id,
        (input.body as TriggerDto)?.force === true,
      );
      return { body, summary: `Run ${body.id} is ${body.state}.` };
    },
  },
  {
    name: 'live_export_list_runs',
    title: 'List live export runs',
    description: 'The runs of one live export, newest first, with their state, row counts and error.',
    route: [LiveExportRunsController, 'list'],
    rename: { live_export: 'live_export_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const { live_export: liveExport, limit, cursor } = input.query;
      const body = await s.liveExportRuns.list(auth, { liveExport, limit, cursor });
      return { body, summary: pageSummary('run(s)', body) };
    },
  },
  {
    name: 'live_export_cancel_run',
    title: 'Cancel a run',
    description: 'Cancels a queued or running run (`run_not_active` when it already finished).',
    route: [LiveExportRunsController, 'cancel'],
    rename: { id: 'run_id' },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: async (s, auth, input) => {
      const body = await s.liveExportRuns.cancel(auth, input.path.id);
      return { body, summary: `Run ${body.id} is ${body.state}.` };
    },
  },
  {
    name: 'live_export_update_schedule',
    title: 'Set the schedule',
    description:
      "Sets when a saved live export runs: `enabled` (on/off), `cadence` (one of the plan's `allowed_cadences`), and for `daily` a `time_of_day` (HH:MM) and `timezone` (IANA). Fields left out keep their values. A cadence above the plan is `plan_required`.",
    route: [LiveExportScheduleController, 'patchSchedule'],
    rename: EXPORT_ID,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: async (s, auth, input) => {
      const body = await s.liveExportRuns.patchSchedule(auth, input.path.id, input.body as SchedulePatchDto);
      const when = body.enabled ? `${body.cadence}; next run ${body.next_run_at ?? 'not scheduled'}` : 'off';
      return { body, summary: `Schedule: ${when}.` };
    },
  },
];
