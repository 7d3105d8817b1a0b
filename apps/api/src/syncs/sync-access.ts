import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { isId, type SyncLifecycleState } from '@lockstep/domain';
import {
  findSyncView,
  isSyncVisible,
  type SideName,
  SyncEntity,
  SyncSideEntity,
  type SyncView,
} from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { SyncLinks } from './sync-links';

export interface SyncSides {
  left: SyncSideEntity | null;
  right: SyncSideEntity | null;
}

export interface LoadedSync {
  sync: SyncEntity;
  sides: SyncSides;
}

export const SIDES: readonly SideName[] = ['left', 'right'];

export function isSideName(value: unknown): value is SideName {
  return value === 'left' || value === 'right';
}

/** A side a person still has to connect (chosen at create, no credentials yet). */
export function isConnected(side: Pick<SyncSideEntity, 'authStatus'> | null): boolean {
  return side !== null && side.authStatus !== 'pending';
}

/** The sync's state as its lifecycle decides on it (`transition`). */
export function lifecycleState(loaded: LoadedSync): SyncLifecycleState {
  return {
    status: loaded.sync.status,
    initialSync: loaded.sync.initialSyncPhase,
    bothSidesConnected: isConnected(loaded.sides.left) && isConnected(loaded.sides.right),
  };
}

const notFound = (syncId: string) => new DomainError(ErrorCode.NotFound, `No sync ${syncId}.`);

/**
 * Loads a sync the caller may see: its account's, not deleted, and the one sync of a one-sync key. Anything
 * else is `404 not_found`, indistinguishable from a sync that does not exist.
 */
@Injectable()
export class SyncAccess {
  constructor(
    @InjectRepository(SyncEntity) private readonly syncs: Repository<SyncEntity>,
    @InjectRepository(SyncSideEntity) private readonly sides: Repository<SyncSideEntity>,
    private readonly catalog: ConnectorCatalog,
    private readonly links: SyncLinks,
  ) {}

  async load(auth: AuthContext, syncId: string): Promise<LoadedSync> {
    this.assertMayAsk(auth, syncId);
    // The sides are read alongside (one round trip less); they are dropped unread when the sync is not the
    // caller's.
    const [sync, sides] = await Promise.all([
      this.syncs.findOneBy({ id: syncId, accountId: auth.accountId, deletedAt: IsNull() }),
      this.loadSides(syncId),
    ]);
    if (!sync) throw notFound(syncId);
    return { sync, sides };
  }

  /** The `404 not_found` of a sync the caller may not see (or that does not exist). */
  notFound(syncId: string): DomainError {
    return notFound(syncId);
  }

  /** The sync as `GET /sync/syncs/{id}` shows it (one statement); `404 not_found` as `load` says. */
  async loadView(auth: AuthContext, syncId: string): Promise<SyncView> {
    this.assertMayAsk(auth, syncId);
    const view = await findSyncView(this.sides.manager, auth.accountId, syncId);
    if (!view) throw notFound(syncId);
    return view;
  }

  /**
   * `404 not_found` as `load` says, without reading the sync: for reads that only need to know it is theirs.
   */
  async assertVisible(auth: AuthContext, syncId: string): Promise<void> {
    this.assertMayAsk(auth, syncId);
    if (!(await isSyncVisible(this.sides.manager, auth.accountId, syncId))) throw notFound(syncId);
  }

  /** `404 not_found` for what is not a sync id or not the one sync of a one-sync key (nothing read). */
  assertMayAsk(auth: AuthContext, syncId: string): void {
    if (!isId('sync', syncId) || (auth.syncId !== null && auth.syncId !== syncId)) throw notFound(syncId);
  }

  async loadSides(syncId: string): Promise<SyncSides> {
    const rows = await this.sides.findBy({ syncId });
    return {
      left: rows.find((row) => row.side === 'left') ?? null,
      right: rows.find((row) => row.side === 'right') ?? null,
    };
  }

  /** The `user_authorization` action for a person to connect (or reconnect) a side in the console. */
  connectAction(loaded: LoadedSync, side: SideName, reconnect = false) {
    const connector = loaded.sides[side]?.connector ?? 'unknown';
    return this.links.connectAction(
      loaded.sync.id,
      side,
      connector,
      this.catalog.find(connector)?.displayName ?? connector,
      loaded.sync.name,
      reconnect,
    );
  }

  /** Spec 4.2 rule 8: until both sides exist, mappings, schema and activate answer 409 `auth_required`. */
  requireBothConnected(loaded: LoadedSync): { left: SyncSideEntity; right: SyncSideEntity } {
    const { left, right } = loaded.sides;
    for (const side of SIDES) {
      const entity = loaded.sides[side];
      if (!isConnected(entity)) {
        throw new DomainError(
          ErrorCode.AuthRequired,
          `The ${side} side of this sync is not connected yet; a person must connect it first.`,
          { side },
          this.connectAction(loaded, side),
        );
      }
    }
    return { left: left!, right: right! };
  }
}
