import { ConnectorsController } from '../../connectors/connectors.controller';
import { toConnectorDto } from '../../connectors/connectors.mapper';
import { MappingsController } from '../../mappings/mappings.controller';
import { SchemaController, SCHEMA_RETRY_AFTER_SECONDS } from '../../schema/schema.controller';
import { isSchemaLoading } from '../../schema/schema.mapper';
import { SyncsController } from '../../syncs/syncs.controller';
import type { CreateSyncDto, UpdateSyncDto } from '@lockstep/contracts';
import { syncSummary } from './summaries';
import type { ToolDefinition, ToolOutput } from './tool';

const READ = { readOnlyHint: true } as const;
const WRITE = { readOnlyHint: false, destructiveHint: false } as const;

/** A schema listing, or the note that another request is reading the schema right now. */
function schemaOutput(body: object, what: string): ToolOutput {
  if (isSchemaLoading(body)) {
    return {
      body,
      summary: `Another request is reading this schema from the app right now: call the same tool again in ${SCHEMA_RETRY_AFTER_SECONDS} seconds.`,
    };
  }
  const list = body as { data: unknown[]; fetched_at: string };
  return { body, summary: `${list.data.length} ${what} (cached at ${list.fetched_at}).` };
}

/** Building a sync: connectors, the sync and its sides, schema discovery, mappings. */
export const BUILD_TOOLS: ToolDefinition[] = [
  {
    name: 'sync_list_connectors',
    title: 'List connectors',
    description:
      "Lists every connector (app type) a sync side can use, with the credential fields each declares under `auth.fields` (send them under a side's `auth`, keyed by each field `id` exactly as given). `auth.method` `oauth` means a person must connect the side in the browser; `available: false` means the account's plan does not include it. Call this first when building a sync.",
    route: [ConnectorsController, 'list'],
    annotations: READ,
    run: async (s, auth) => {
      const data = s.connectors.list().map((c) => toConnectorDto(c, auth.plan));
      const body = { data, has_more: false, next_cursor: null };
      return { body, summary: `${data.length} connectors: ${data.map((c) => c.type).join(', ')}.` };
    },
  },
  {
    name: 'sync_create',
    title: 'Create a sync',
    description:
      "Creates a draft sync between two apps (`left` and `right`). Per side send `connector`, and for an api_key connector either both `auth` (credentials, keyed by the connector's field ids) and `base` (the schema/database: id or exact name), which connects the side now and checks the credentials live, or neither, which leaves the side for a person to connect (a `user_authorization` pending action). An oauth connector takes only `connector`: a person signs in at the pending action's `url`. Nothing is kept on an error. The new sync is a draft: map its tables next; a person reviews and starts it at `review_url` (the API cannot start a draft).",
    route: [SyncsController, 'create'],
    annotations: WRITE,
    run: async (s, auth, input) => {
      const sync = await s.syncs.create(auth, input.body as CreateSyncDto);
      return { body: sync, summary: syncSummary(sync, 'Created sync') };
    },
  },
  {
    name: 'sync_update',
    title: 'Update a sync',
    description:
      "Renames a sync (`name`), rotates a side's credentials (a side with only `auth`, same shape, checked live, any state), or on a draft rebuilds a side (`connector` and/or `base`; a new api_key connector needs `auth` and `base` too). Use it to connect a side that was left for later when you have its credentials. A side that needs a browser sign-in answers `requires_action`: relay the instruction and link to a person.",
    route: [SyncsController, 'update'],
    rename: { id: 'sync_id' },
    annotations: WRITE,
    run: async (s, auth, input) => {
      const sync = await s.syncs.update(auth, input.path.id, input.body as UpdateSyncDto);
      return { body: sync, summary: syncSummary(sync, 'Updated sync') };
    },
  },
  {
    name: 'sync_list_bases',
    title: "List a side's bases",
    description:
      "Lists the bases (PostgreSQL schemas, MySQL databases) a connected side's credentials reach, read live from the app. Use it to pick or check a `base` for `sync_update`.",
    route: [SyncsController, 'bases'],
    rename: { id: 'sync_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.syncs.bases(auth, input.path.id, input.path.side);
      return { body, summary: `${body.data.length} bases: ${body.data.map((b) => b.name).join(', ')}.` };
    },
  },
  {
    name: 'sync_list_tables',
    title: 'List the tables of a side',
    description:
      'Lists the tables of one side (`side`: `left` or `right`) with their ids, remote ids and views. The first call reads them from the app and caches them; `refresh: "true"` reads again (only while the sync is not active). Use the ids in `sync_list_fields` and in the mappings. If the answer is `{loading: true}`, call again after a few seconds.',
    route: [SchemaController, 'listTables'],
    annotations: READ,
    run: async (s, auth, input) => {
      const { side, refresh } = input.query;
      return schemaOutput(await s.schema.listTables(auth, input.path.sync_id, { side, refresh }), 'tables');
    },
  },
  {
    name: 'sync_list_fields',
    title: 'List the fields of a table',
    description:
      'Lists the fields of one table (`table_id`: a `table_` id, a remote id or an exact unique name; `side` narrows the lookup) with type, capabilities (`read`, `write`, `required`, `primary`) and ids. Use it before mapping fields. If the answer is `{loading: true}`, call again after a few seconds.',
    route: [SchemaController, 'listFields'],
    annotations: READ,
    run: async (s, auth, input) => {
      const { side, refresh } = input.query;
      const body = await s.schema.listFields(auth, input.path.sync_id, input.path.table_id, {
        side,
        refresh,
      });
      return schemaOutput(body, 'fields');
    },
  },
  {
    name: 'sync_get_mappings',
    title: 'Get the mappings',
    description:
      "Returns the sync's mappings document: which table pairs and field pairs sync, in which direction, and delete behaviour per side. Edit it and send the whole document back with `sync_update_mappings` (full replace), passing the revision this answer names as `if_match`.",
    route: [MappingsController, 'get'],
    annotations: READ,
    run: async (s, auth, input) => {
      const view = await s.mappings.get(auth, input.path.sync_id);
      const summary = `${view.document.tables.length} table pair(s) mapped; revision "${view.revision}" (send it as \`if_match\` with sync_update_mappings).`;
      return { body: view.document, summary };
    },
  },
  {
    name: 'sync_update_mappings',
    title: 'Replace the mappings',
    description:
      'Replaces the whole mappings document (`tables`): pairs left out are unmapped. References are remote ids, prefixed ids or exact unique names; `{"create": {"name": ...}}` on one side creates that table or field in the app, typed from its counterpart. Fetch with `sync_get_mappings`, edit, send it back with `if_match` set to its revision. Refused on an active sync (`sync_active`: pause first). Any change returns the sync to draft: a person must review and start it again at its `review_url`. Check the result with `sync_validate_mappings`.',
    route: [MappingsController, 'put'],
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: async (s, auth, input) => {
      const view = await s.mappings.put(auth, input.path.sync_id, input.body, input.ifMatch);
      const summary = `Saved ${view.document.tables.length} table pair(s); new revision "${view.revision}". The sync is a draft until a person reviews and starts it.`;
      return { body: view.document, summary };
    },
  },
  {
    name: 'sync_validate_mappings',
    title: 'Validate mappings',
    description:
      'Checks the stored mappings, or a candidate document passed as `mappings`, without changing anything: type compatibility, required fields, linked records, creates. Issues of severity `error` keep a person from starting the sync; `warning`s never block. Call it after `sync_update_mappings` and before asking a person to start the sync.',
    route: [MappingsController, 'validate'],
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.mappings.validate(auth, input.path.sync_id, input.body);
      const errors = body.issues.filter((i) => i.severity === 'error').length;
      const summary = body.issues.length
        ? `${errors} error(s), ${body.issues.length - errors} warning(s).`
        : 'Valid: no issues.';
      return { body, summary };
    },
  },
];
