import type {
  InitialSyncProgressDto,
  PendingAction,
  SideDto,
  SyncDto,
  SyncStatusDto,
} from '@lockstep/contracts';
import type { SyncEntity, SyncView, SyncViewSide, SyncViewSync } from '@lockstep/persistence';
import type { ConnectorCatalog } from '../connectors/connector-catalog';
import { reviewInstruction } from './review-instruction';
import { isConnected, SIDES, type SyncSides } from './sync-access';
import type { SyncLinks } from './sync-links';

export interface SyncCounts {
  openIssues: number;
  pendingDeletes: number;
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

export function toSideDto(side: SyncViewSide, catalog: ConnectorCatalog, links: SyncLinks): SideDto {
  return {
    connector: side.connector,
    connector_name: catalog.find(side.connector)?.displayName ?? side.connector,
    auth_method: side.authMethod,
    base: { id: side.baseId ?? '', name: side.baseName ?? side.baseId ?? '' },
    auth_status: side.authStatus === 'error' ? 'error' : 'ok',
    auth_error: side.authStatus === 'error' ? (side.authError ?? 'invalid_credentials') : null,
    connected_at: iso(side.connectedAt),
    bases_url: links.bases(side.syncId, side.side),
    tables_url: links.tables(side.syncId, side.side),
  };
}

/** What blocks the sync, in the order a person should act: connect the sides, then review and start. */
export function pendingActions(
  sync: SyncViewSync,
  sides: SyncView['sides'],
  catalog: ConnectorCatalog,
  links: SyncLinks,
): PendingAction[] {
  const actions: PendingAction[] = [];
  for (const name of SIDES) {
    const side = sides[name];
    if (!side) continue;
    const connectorName = catalog.find(side.connector)?.displayName ?? side.connector;
    if (!isConnected(side))
      actions.push(links.connectAction(sync.id, name, side.connector, connectorName, sync.name));
    else if (side.authStatus === 'error')
      actions.push(links.connectAction(sync.id, name, side.connector, connectorName, sync.name, true));
  }
  if (sync.status === 'draft')
    actions.push(links.reviewAction(sync.id, reviewInstruction(sync.name, sides, catalog)));
  return actions;
}

export function toSyncDto(
  sync: SyncViewSync,
  sides: SyncView['sides'],
  counts: SyncCounts,
  catalog: ConnectorCatalog,
  links: SyncLinks,
): SyncDto {
  const side = (name: 'left' | 'right') => {
    const entity = sides[name];
    return entity && isConnected(entity) ? toSideDto(entity, catalog, links) : null;
  };
  const query = `?sync=${sync.id}`;
  return {
    id: sync.id,
    name: sync.name,
    status: sync.status,
    activating: sync.activating,
    left: side('left'),
    right: side('right'),
    pending_actions: pendingActions(sync, sides, catalog, links),
    open_issues: counts.openIssues,
    delete_approval: sync.deleteApproval,
    ...(sync.deleteApproval === 'review_required' ? { pending_deletes: counts.pendingDeletes } : {}),
    initial_sync: sync.initialSyncPhase,
    mappings_revision: sync.mappingsRevision,
    url: links.sync(sync.id),
    status_url: links.api(`/sync/syncs/${sync.id}/status`),
    review_url: links.review(sync.id),
    tables_url: links.tables(sync.id, 'left'),
    // Fields belong to a table: the table listing, where each table carries its own `fields_url`.
    fields_url: links.tables(sync.id, 'left'),
    mappings_url: links.api(`/sync/syncs/${sync.id}/mappings`),
    validate_url: links.api(`/sync/syncs/${sync.id}/validate`),
    operations_url: links.api(`/sync/operations${query}`),
    issues_url: links.api(`/sync/issues${query}`),
    pending_deletes_url: links.api(`/sync/pending-deletes${query}`),
    created_at: sync.createdAt.toISOString(),
    updated_at: sync.updatedAt.toISOString(),
  };
}

export function toStatusDto(
  sync: SyncEntity,
  sides: SyncSides,
  counts: SyncCounts & { queued: { push: number; refetch: number; verify_delete: number } },
): SyncStatusDto {
  const side = (name: 'left' | 'right') => {
    const entity = sides[name];
    return {
      connector: entity && isConnected(entity) ? entity.connector : null,
      auth_status: entity?.authStatus ?? 'pending',
      change_detection: entity?.changeDetection ?? null,
      polling_state:
        entity && isConnected(entity) ? (sync.status === 'active' ? entity.pollingState : 'paused') : 'idle',
      last_polled_at: iso(entity?.lastPolledAt ?? null),
      last_change_detected_at: iso(entity?.lastChangeDetectedAt ?? null),
    };
  };
  return {
    sync_id: sync.id,
    status: sync.status,
    activating: sync.activating,
    captured_at: new Date().toISOString(),
    initial_sync: {
      phase: sync.initialSyncPhase,
      started_at: iso(sync.initialSyncStartedAt),
      finished_at: iso(sync.initialSyncFinishedAt),
      // The worker writes it in this shape (PairProgress in apps/worker/src/engine/initial-progress.ts).
      progress: sync.initialSyncProgress as InitialSyncProgressDto | null,
    },
    left: side('left'),
    right: side('right'),
    pending_pushes: counts.queued,
    open_issues: counts.openIssues,
    pending_deletes: sync.deleteApproval === 'review_required' ? counts.pendingDeletes : null,
  };
}
