import { type InitialSyncPhase, type LifecycleEvent, type SyncStatus, transition } from './sync-lifecycle';

type Row = [string, SyncStatus, InitialSyncPhase, boolean, LifecycleEvent, SyncStatus | string, boolean?];

// Spec 3.1, one row per line: from status, initial sync phase, both sides connected, event -> status or error code, activating.
const rows: Row[] = [
  ['pause an active sync', 'active', 'done', true, 'pause', 'paused'],
  ['pause an active sync before its initial sync', 'active', 'not_started', true, 'pause', 'paused'],
  ['pause while the initial sync is prepared', 'active', 'preparing', true, 'pause', 'paused'],
  ['pause while the initial sync runs', 'active', 'running', true, 'pause', 'initial_sync_running'],
  ['pause a paused sync (already off)', 'paused', 'done', true, 'pause', 'paused'],
  ['pause a draft (already off)', 'draft', 'not_started', false, 'pause', 'draft'],
  ['activate a paused sync', 'paused', 'done', true, 'activate', 'active', true],
  ['activate an active sync', 'active', 'done', true, 'activate', 'active', true],
  ['activate a draft', 'draft', 'not_started', true, 'activate', 'confirmation_required'],
  ['activate a draft with a side unconnected', 'draft', 'not_started', false, 'activate', 'auth_required'],
  ['activate a paused sync with a side unconnected', 'paused', 'done', false, 'activate', 'auth_required'],
  [
    'activate while the initial sync is prepared',
    'active',
    'preparing',
    true,
    'activate',
    'initial_sync_preparing',
  ],
  ['activate while the initial sync runs', 'active', 'running', true, 'activate', 'initial_sync_running'],
  [
    'activate a sync paused while its initial sync was prepared (resumes the preparation)',
    'paused',
    'preparing',
    true,
    'activate',
    'active',
    true,
  ],
  ['start a reviewed draft', 'draft', 'not_started', true, 'start', 'active'],
  ['start a draft again after editing', 'draft', 'done', true, 'start', 'active'],
  ['start a draft with a side unconnected', 'draft', 'not_started', false, 'start', 'auth_required'],
  ['start an active sync', 'active', 'done', true, 'start', 'conflict'],
  ['start a paused sync', 'paused', 'done', true, 'start', 'conflict'],
  ['change mappings of an active sync', 'active', 'done', true, 'change_mappings', 'sync_active'],
  ['change mappings of a paused sync', 'paused', 'done', true, 'change_mappings', 'draft'],
  ['change mappings of a draft', 'draft', 'not_started', true, 'change_mappings', 'draft'],
  ['put the same mappings on an active sync', 'active', 'done', true, 'put_same_mappings', 'sync_active'],
  ['put the same mappings on a paused sync', 'paused', 'done', true, 'put_same_mappings', 'paused'],
  ['refresh the schema of an active sync', 'active', 'done', true, 'refresh_schema', 'sync_active'],
  ['refresh the schema of a paused sync', 'paused', 'done', true, 'refresh_schema', 'paused'],
  ['refresh the schema of a draft', 'draft', 'not_started', false, 'refresh_schema', 'draft'],
  ['rebuild a side of a draft', 'draft', 'not_started', true, 'rebuild_side', 'draft'],
  ['rebuild a side of an active sync', 'active', 'done', true, 'rebuild_side', 'sync_not_draft'],
  ['rebuild a side of a paused sync', 'paused', 'done', true, 'rebuild_side', 'sync_not_draft'],
];

describe('sync lifecycle (spec 3.1)', () => {
  it.each(rows)(
    '%s',
    (_name, status, initialSync, bothSidesConnected, event, expected, activating = false) => {
      const outcome = transition({ status, initialSync, bothSidesConnected }, event);
      if (['draft', 'active', 'paused'].includes(expected)) {
        expect(outcome).toMatchObject({ ok: true, status: expected, activating });
      } else {
        expect(outcome).toMatchObject({ ok: false, code: expected });
        if (!outcome.ok) expect(outcome.message.length).toBeGreaterThan(10);
      }
    },
  );

  it('starting moves the initial sync to preparing', () => {
    expect(
      transition({ status: 'draft', initialSync: 'done', bothSidesConnected: true }, 'start'),
    ).toMatchObject({ ok: true, initialSync: 'preparing', changed: true });
  });

  it('activating a sync paused while its initial sync was prepared keeps the phase: the worker prepares it again', () => {
    expect(
      transition({ status: 'paused', initialSync: 'preparing', bothSidesConnected: true }, 'activate'),
    ).toMatchObject({
      ok: true,
      status: 'active',
      initialSync: 'preparing',
      changed: true,
      activating: true,
    });
  });

  it('reports unchanged when nothing moves', () => {
    expect(
      transition({ status: 'paused', initialSync: 'done', bothSidesConnected: true }, 'pause'),
    ).toMatchObject({ ok: true, changed: false });
    expect(
      transition({ status: 'active', initialSync: 'done', bothSidesConnected: true }, 'pause'),
    ).toMatchObject({ ok: true, changed: true });
  });
});
