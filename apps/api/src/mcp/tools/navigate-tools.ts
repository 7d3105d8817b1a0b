import { SyncsController } from '../../syncs/syncs.controller';
import { pageSummary, syncSummary } from './summaries';
import type { ToolDefinition } from './tool';
import { whatsNext } from './whats-next';

const READ = { readOnlyHint: true } as const;

/** Finding syncs and deciding what to do next. */
export const NAVIGATE_TOOLS: ToolDefinition[] = [
  {
    name: 'sync_list',
    title: 'List syncs',
    description:
      "Lists the account's syncs, newest first, each with its status, sides, pending actions and open-issue count. A key limited to one sync sees only that sync. Page with `cursor`.",
    route: [SyncsController, 'list'],
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await s.syncs.list(auth, input.query.limit, input.query.cursor);
      return { body, summary: pageSummary('sync(s)', body) };
    },
  },
  {
    name: 'sync_get',
    title: 'Get a sync',
    description:
      'One sync: status (`draft`, `active`, `paused`), both sides (null while not connected), `pending_actions` a person must take (relay each `instruction` and `url`; never open them yourself), open issues, held deletes and links to the next steps.',
    route: [SyncsController, 'get'],
    rename: { id: 'sync_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const sync = await s.syncs.get(auth, input.path.id);
      return { body: sync, summary: syncSummary(sync) };
    },
  },
  {
    name: 'sync_whats_next',
    title: 'What to do next with a sync',
    description:
      'Tells the single next step for one sync, from its state: either a tool to call with its arguments (`who: "agent"`), or an action a person must take (`who: "person"`: relay `instruction` and `url` to them, for example connecting an app or reviewing and starting the sync). Call it whenever you are unsure how to proceed.',
    route: [SyncsController, 'get'],
    rename: { id: 'sync_id' },
    annotations: READ,
    run: async (s, auth, input) => {
      const body = await whatsNext(s, auth, input.path.id);
      const step = body.next_step;
      const summary =
        step.who === 'agent'
          ? `Next: call ${step.tool} with ${JSON.stringify(step.arguments)}. ${step.reason}`
          : `Next: a person must act (${step.type}). ${step.reason} Relay: ${step.instruction} Link: ${step.url}`;
      return { body, summary };
    },
  },
];
