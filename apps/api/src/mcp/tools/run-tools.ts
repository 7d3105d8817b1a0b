import { SyncsController } from '../../syncs/syncs.controller';
import { syncSummary } from './summaries';
import type { ToolDefinition } from './tool';

/** Turning a sync on and off, and deleting it. */
export const RUN_TOOLS: ToolDefinition[] = [
  {
    name: 'sync_activate',
    title: 'Activate a paused sync',
    description:
      'Turns a paused sync back on (the answer shows `activating: true` until the worker has it). It never starts a draft: a draft answers `confirmation_required` with a link where a person reviews and starts it; relay it. `auth_required` means a side is not connected; `initial_sync_preparing` / `initial_sync_running` mean the first copy is under way (it turns itself on when done).',
    route: [SyncsController, 'activate'],
    rename: { id: 'sync_id' },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: async (s, auth, input) => {
      const sync = await s.lifecycle.activate(auth, input.path.id);
      return { body: sync, summary: syncSummary(sync, 'Activating sync') };
    },
  },
  {
    name: 'sync_pause',
    title: 'Pause a sync',
    description:
      'Turns a sync off; changes in either app wait until it is activated again. Pausing a sync that is already off succeeds. Pause before changing the mappings of an active sync. Refused while the initial sync runs (`initial_sync_running`: only a person can stop it in the app).',
    route: [SyncsController, 'pause'],
    rename: { id: 'sync_id' },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: async (s, auth, input) => {
      const sync = await s.lifecycle.pause(auth, input.path.id);
      return { body: sync, summary: syncSummary(sync, 'Paused sync') };
    },
  },
  {
    name: 'sync_delete',
    title: 'Delete a sync',
    description:
      'Stops a sync and deletes it with its stored credentials; it cannot be undone. The data in both apps stays; the change capture Lockstep installed is removed. Only call it when the person asked for the sync to be deleted.',
    route: [SyncsController, 'remove'],
    rename: { id: 'sync_id' },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    run: async (s, auth, input) => {
      const body = await s.syncs.remove(auth, input.path.id);
      return { body, summary: `Deleted sync ${body.id}.` };
    },
  },
];
