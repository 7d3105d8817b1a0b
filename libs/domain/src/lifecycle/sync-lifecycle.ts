/**
 * The sync lifecycle of spec section 3.1 as one pure function. The API and the console call `transition`
 * and persist the result with a conditional update (`WHERE status = :from`); the error codes are the API's.
 */
export type SyncStatus = 'draft' | 'active' | 'paused';
export type InitialSyncPhase = 'not_started' | 'preparing' | 'running' | 'done';

export interface SyncLifecycleState {
  status: SyncStatus;
  initialSync: InitialSyncPhase;
  /** Both sides exist and are connected (not deferred to a person). */
  bothSidesConnected: boolean;
}

export type LifecycleEvent =
  /** `POST /sync/syncs/{id}/pause` */
  | 'pause'
  /** `POST /sync/syncs/{id}/activate` */
  | 'activate'
  /** A person reviews and starts the sync (console, operator CLI). */
  | 'start'
  /** A mappings PUT that changes the document. */
  | 'change_mappings'
  /** A mappings PUT that leaves the document as it is. */
  | 'put_same_mappings'
  /** `refresh=true` on a schema read. */
  | 'refresh_schema'
  /** PATCH changing a side's connector or base (rebuilds the side). */
  | 'rebuild_side';

export type LifecycleErrorCode =
  | 'auth_required'
  | 'confirmation_required'
  | 'initial_sync_running'
  | 'initial_sync_preparing'
  | 'sync_active'
  | 'sync_not_draft'
  | 'conflict';

export type LifecycleOutcome =
  | {
      ok: true;
      status: SyncStatus;
      /** The status changed (persist it). */
      changed: boolean;
      /** Reported as activating until the worker picks the sync up. */
      activating: boolean;
      /** The initial sync phase after the event. */
      initialSync: InitialSyncPhase;
    }
  | { ok: false; code: LifecycleErrorCode; message: string };

const refuse = (code: LifecycleErrorCode, message: string): LifecycleOutcome => ({
  ok: false,
  code,
  message,
});
const to = (
  state: SyncLifecycleState,
  status: SyncStatus,
  extra: Partial<{ activating: boolean; initialSync: InitialSyncPhase }> = {},
): LifecycleOutcome => ({
  ok: true,
  status,
  changed:
    status !== state.status || (extra.initialSync !== undefined && extra.initialSync !== state.initialSync),
  activating: extra.activating ?? false,
  initialSync: extra.initialSync ?? state.initialSync,
});

export function transition(state: SyncLifecycleState, event: LifecycleEvent): LifecycleOutcome {
  switch (event) {
    case 'pause':
      if (state.initialSync === 'running') {
        return refuse(
          'initial_sync_running',
          'The initial sync is running; only a person can stop it in the app.',
        );
      }
      // Pause on an already-off sync (draft or paused) succeeds and changes nothing.
      return to(state, state.status === 'active' ? 'paused' : state.status);
    case 'activate':
      if (!state.bothSidesConnected)
        return refuse(
          'auth_required',
          'A side of this sync is not connected; a person must connect it first.',
        );
      if (state.status === 'draft')
        return refuse(
          'confirmation_required',
          'The sync is a draft; a person must review and start it in the app.',
        );
      // Only an active sync is being prepared (the worker prepares active syncs only): a paused one's
      // preparation was interrupted, and activating it resumes the preparation.
      if (state.initialSync === 'preparing' && state.status === 'active')
        return refuse(
          'initial_sync_preparing',
          'The initial sync is being prepared; retry after preparation, or a person starts it.',
        );
      if (state.initialSync === 'running')
        return refuse(
          'initial_sync_running',
          'The initial sync is running; the sync turns itself on when it ends.',
        );
      return to(state, 'active', { activating: true });
    case 'start':
      if (!state.bothSidesConnected)
        return refuse(
          'auth_required',
          'A side of this sync is not connected; a person must connect it first.',
        );
      if (state.status !== 'draft')
        return refuse('conflict', `The sync is ${state.status}; only a draft is reviewed and started.`);
      return to(state, 'active', { initialSync: 'preparing' });
    case 'change_mappings':
      if (state.status === 'active')
        return refuse('sync_active', 'The sync is active; pause it before editing its mappings.');
      return to(state, 'draft');
    case 'put_same_mappings':
      if (state.status === 'active')
        return refuse('sync_active', 'The sync is active; pause it before editing its mappings.');
      return to(state, state.status);
    case 'refresh_schema':
      if (state.status === 'active')
        return refuse('sync_active', 'The sync is active; pause it before refreshing its schema.');
      return to(state, state.status);
    case 'rebuild_side':
      if (state.status !== 'draft')
        return refuse(
          'sync_not_draft',
          `A side's connector or base can change only while the sync is a draft (it is ${state.status}).`,
        );
      return to(state, 'draft');
  }
}
