import { IssuesController } from '../../issues/issues.controller';
import { OperationsController } from '../../operations/operations.controller';
import { PendingDeletesController } from '../../pending-deletes/pending-deletes.controller';
import { RecordsController } from '../../records/records.controller';
import { SyncsController } from '../../syncs/syncs.controller';
import { pageSummary } from './summaries';
import type { ToolDefinition } from './tool';

const READ = { readOnlyHint: true } as const;
const SYNC_QUERY = { sync: 'sync_id' };

/** Watching a running sync: status, issues, the change log, records, held deletes. */
export const MONITOR_TOOLS: ToolDefinition[] = [
  {
    name: 'sync_get_status',
    title: 'Sync status snapshot',
    description:
      "A live snapshot of a sync: per side the change detection and polling state, record operations queued (`pending_pushes`), the initial sync's phase and per-table progress, open issues and pending deletes. Use it to see whether a sync is keeping up.",
    route: [SyncsController, 'status'],
    rename: { id: 'sync_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.syncs.status(auth, input.path.id);
      const summary = `Sync ${body.sync_id} is ${body.status}; initial sync ${body.initial_sync.phase}; ${body.open_issues} open issue(s).`;
      return { body, summary };
    },
  },
  {
    name: 'sync_list_issues',
    title: 'List open issues',
    description:
      "Lists a sync's unresolved issues, newest first (`type` filters: `connection`, `record`, `webhook`, `sync_preview`, `other`). Each carries a `remediation` that explains the fix; relay fixes that need a person. A nonzero `open_issues` on the sync is the signal to call this.",
    route: [IssuesController, 'list'],
    rename: SYNC_QUERY,
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.issues.list(auth, input.query);
      return { body, summary: pageSummary('open issue(s)', body) };
    },
  },
  {
    name: 'sync_get_issue',
    title: 'Get an issue',
    description:
      'One issue with its remediation (explanation, suggested action, links) and the record or table it concerns.',
    route: [IssuesController, 'get'],
    rename: { id: 'issue_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.issues.get(auth, input.path.id);
      return { body, summary: `Issue ${body.id} (${body.code}): ${body.message}` };
    },
  },
  {
    name: 'sync_retry_issue',
    title: 'Retry an issue',
    description:
      'Clears an issue and queues its records again. Call it after the cause was fixed (credentials rotated, a record corrected in the app); retrying an unchanged cause brings the issue back. Safe to repeat.',
    route: [IssuesController, 'retry'],
    rename: { id: 'issue_id' },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: async (s, auth, input) => {
      const body = await s.issues.retry(auth, input.path.id);
      return { body, summary: `Issue ${body.issue_id} cleared; its records are queued again.` };
    },
  },
  {
    name: 'sync_list_operations',
    title: 'List operations',
    description:
      'The record-level change log of a sync, newest first: what the sync wrote (`push`) or detected (`poll`), per record. Filter by `table`, `record` (a `rec_` id) or `since` (ISO 8601). Get one with `sync_get_operation` for the field values before and after.',
    route: [OperationsController, 'list'],
    rename: SYNC_QUERY,
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.operations.list(auth, input.query);
      return { body, summary: pageSummary('operation(s)', body) };
    },
  },
  {
    name: 'sync_get_operation',
    title: 'Get an operation',
    description:
      'One change-log entry with its `field_changes` (each field before and after) and a link to the record in the app.',
    route: [OperationsController, 'get'],
    rename: { id: 'operation_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.operations.get(auth, input.path.id);
      return {
        body,
        summary: `Operation ${body.id}: ${body.action} by ${body.trigger} at ${body.occurred_at}.`,
      };
    },
  },
  {
    name: 'sync_search_records',
    title: 'Search records',
    description:
      "Finds records of a sync by `query`: a remote record id, a `rec_` id or display text; exact id matches come first. Capped, not paginated: `has_more` means narrow the query or add `table`. Each hit's `url` is its status document (use `sync_get_record_status`).",
    route: [RecordsController, 'search'],
    rename: SYNC_QUERY,
    annotations: READ,
    run: async (s, auth, input) => {
      const { sync, query, table, limit } = input.query;
      const body = await s.records.search(auth, { sync, query, table, limit });
      return { body, summary: pageSummary('matching record(s)', body) };
    },
  },
  {
    name: 'sync_get_record_status',
    title: 'Get a record status',
    description:
      "Why a record is or is not in step: per side whether it exists, is deleted, filtered or sync-disabled, its queued operations, open issues, a held delete and the latest operations. `record_id` is a `rec_` id or the record's id in the app (then `sync_id` is required, and `table` when several tables hold that id).",
    route: [RecordsController, 'get'],
    rename: SYNC_QUERY,
    annotations: READ,
    run: async (s, auth, input) => {
      const { sync, table } = input.query;
      const body = await s.records.status(auth, input.path.record_id, { sync, table });
      const summary = `${body.issues.length} open issue(s); ${body.pending_delete ? 'a delete is held for review' : 'no held delete'}.`;
      return { body, summary };
    },
  },
  {
    name: 'sync_list_pending_deletes',
    title: 'List held deletes',
    description:
      "Deletes held for review (a record went missing on one side of a sync that requires delete review), newest first; `state` `ignored` lists the ignored ones. Only a person approves or ignores them, at each entry's `review_url`: relay it.",
    route: [PendingDeletesController, 'list'],
    rename: SYNC_QUERY,
    annotations: READ,
    run: async (s, auth, input) => {
      const { sync, state, limit, cursor } = input.query;
      const body = await s.pendingDeletes.list(auth, { sync, state, limit, cursor });
      return { body, summary: pageSummary('held delete(s)', body) };
    },
  },
];
