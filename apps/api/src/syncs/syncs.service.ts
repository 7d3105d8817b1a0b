import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import {
  type BaseListDto,
  type CreateSyncDto,
  type DeletedSyncDto,
  DomainError,
  ErrorCode,
  type SideInputDto,
  type SidePatchDto,
  type SyncDto,
  type SyncListDto,
  type SyncStatusDto,
  type UpdateSyncDto,
} from '@lockstep/contracts';
import { newId } from '@lockstep/domain';
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { transition } from '@lockstep/domain';
import { JobProducer, SYNC_JOBS } from '@lockstep/jobs';
import {
  CredentialCipher,
  type DeleteApproval,
  resolveCredentialIssues,
  SchemaStore,
  type SideName,
  sideOwner,
  listSyncViews,
  type SyncEntity,
  type SyncSideEntity,
  queuedOperations,
  SyncStore,
  type SyncView,
} from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { CursorService, parseLimit } from '../common/pagination/cursor.service';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { type BuiltSide, SideBuilder } from './side-builder';
import { SideConnections } from './side-connections';
import { isConnected, isSideName, type LoadedSync, SIDES, SyncAccess } from './sync-access';
import { SyncLinks } from './sync-links';
import { type SyncCounts, toStatusDto, toSyncDto } from './syncs.mapper';

/** A side of a create request after the static checks: built now, or deferred to a person. */
type SidePlan =
  | { kind: 'built'; declaration: ConnectorDeclaration; auth: Record<string, unknown>; base: string }
  | { kind: 'deferred'; declaration: ConnectorDeclaration };

/** What a PATCH does to one side. */
type SideChange =
  | { kind: 'none' }
  | { kind: 'build'; built: BuiltSide; rebuild: boolean }
  | { kind: 'defer'; declaration: ConnectorDeclaration };

const LIST_LIMIT = { min: 1, max: 100, default: 20 };

@Injectable()
export class SyncsService {
  private readonly syncs: SyncStore;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly catalog: ConnectorCatalog,
    private readonly builder: SideBuilder,
    private readonly connections: SideConnections,
    private readonly cipher: CredentialCipher,
    private readonly access: SyncAccess,
    private readonly links: SyncLinks,
    private readonly cursors: CursorService,
    private readonly jobs: JobProducer,
  ) {
    this.syncs = new SyncStore(dataSource.manager);
  }

  // ---- reads ----

  async list(auth: AuthContext, rawLimit: unknown, cursor: unknown): Promise<SyncListDto> {
    const limit = parseLimit(rawLimit, LIST_LIMIT);
    const endpoint = 'GET /sync/syncs';
    const position = this.cursors.decode(cursor, endpoint, auth.accountId);
    const before = position ? { createdAt: position.createdAt, id: position.id } : undefined;
    const views = await listSyncViews(this.dataSource, {
      accountId: auth.accountId,
      syncId: auth.syncId,
      before,
      limit: limit + 1,
    });
    return this.cursors.page(
      views,
      limit,
      endpoint,
      auth.accountId,
      (view) => ({ createdAt: view.sync.createdAt.toISOString(), id: view.sync.id }),
      (view) => this.toDto(view),
    );
  }

  async get(auth: AuthContext, syncId: string): Promise<SyncDto> {
    const view = await this.access.loadView(auth, syncId);
    return this.toDto(view);
  }

  private toDto(view: SyncView): SyncDto {
    return toSyncDto(view.sync, view.sides, view, this.catalog, this.links);
  }

  async view(loaded: LoadedSync): Promise<SyncDto> {
    const counts = await this.counts([loaded.sync.id]);
    return toSyncDto(loaded.sync, loaded.sides, counts.get(loaded.sync.id)!, this.catalog, this.links);
  }

  async status(auth: AuthContext, syncId: string): Promise<SyncStatusDto> {
    const loaded = await this.access.load(auth, syncId);
    const counts = (await this.counts([syncId])).get(syncId)!;
    return toStatusDto(loaded.sync, loaded.sides, {
      ...counts,
      queued: await queuedOperations(this.dataSource.manager, syncId),
    });
  }

  async bases(auth: AuthContext, syncId: string, side: unknown): Promise<BaseListDto> {
    if (!isSideName(side)) throw new DomainError(ErrorCode.InvalidSide, 'side must be left or right.');
    const loaded = await this.access.load(auth, syncId);
    const entity = loaded.sides[side];
    if (!entity || !isConnected(entity)) {
      throw new DomainError(
        ErrorCode.RequiresAction,
        `The ${side} side is not connected yet; a person must connect it before its bases can be listed.`,
        { side },
        this.access.connectAction(loaded, side),
      );
    }
    const bases = await this.connections.withStoredSide(entity, (connection) => connection.listBases());
    return {
      data: bases.map((base) => ({ id: base.id, name: base.name })),
      has_more: false,
      next_cursor: null,
    };
  }

  /** Open issues and held deletes per sync, in one query. */
  private async counts(syncIds: string[]): Promise<Map<string, SyncCounts>> {
    if (syncIds.length === 0) return new Map();
    const rows = await this.syncs.counts(syncIds);
    return new Map(
      rows.map((row) => [row.id, { openIssues: row.open_issues, pendingDeletes: row.pending_deletes }]),
    );
  }

  // ---- create (spec 4.2 rules 1-4) ----

  async create(auth: AuthContext, input: CreateSyncDto): Promise<SyncDto> {
    // Every static check of both sides first, then the live checks; nothing is written before all pass.
    const plans = {
      left: this.planSide(input.left, 'left', auth.plan),
      right: this.planSide(input.right, 'right', auth.plan),
    };
    this.assertPairAllowed(plans.left.declaration, plans.right.declaration);
    const built: Partial<Record<SideName, BuiltSide>> = {};
    for (const side of SIDES) {
      const plan = plans[side];
      if (plan.kind === 'built') {
        const credentials = this.builder.credentialsFrom(plan.declaration, plan.auth, `${side}.auth`);
        built[side] = await this.builder.build(plan.declaration, credentials, plan.base, side);
      }
    }
    if (built.left && built.right) this.assertNoBaseConflict(built.left, built.right);

    // When only one side is built, it occupies the left slot (spec 2.3).
    let slots: Record<SideName, BuiltSide | ConnectorDeclaration> = {
      left: built.left ?? plans.left.declaration,
      right: built.right ?? plans.right.declaration,
    };
    if (!built.left && built.right) slots = { left: built.right, right: plans.left.declaration };

    const syncId = newId('sync');
    await this.dataSource.transaction(async (manager) => {
      const store = new SyncStore(manager);
      await store.insert({ id: syncId, accountId: auth.accountId, name: input.name.trim() || input.name });
      for (const side of SIDES) {
        const slot = slots[side];
        await store.insertSide(
          'credentials' in slot
            ? this.builtSideRow(syncId, side, slot, 'api')
            : this.deferredSideRow(syncId, side, slot),
        );
      }
    });
    return this.view(await this.access.load(auth, syncId));
  }

  private planSide(input: SideInputDto, side: SideName, plan: string): SidePlan {
    const declaration = this.catalog.available(input.connector, plan);
    if (!declaration) {
      const known = this.catalog.find(input.connector);
      throw new DomainError(
        ErrorCode.UnknownConnector,
        known
          ? `The ${side} side's connector "${input.connector}" needs the ${known.plan} plan; this ` +
              `account is on ${plan}.`
          : `The ${side} side's connector "${input.connector}" does not exist; see GET /v1/sync/connectors.`,
        { side, connector: input.connector, ...(known ? { required_plan: known.plan } : {}) },
      );
    }
    const hasAuth = input.auth !== undefined;
    const hasBase = input.base !== undefined;
    if (declaration.auth.method === 'oauth') {
      if (hasAuth)
        throw new DomainError(
          ErrorCode.AuthNotSupported,
          `${declaration.displayName} is connected by a person signing in through the browser; omit ` +
            `auth on the ${side} side.`,
          { side },
        );
      if (hasBase)
        throw new DomainError(
          ErrorCode.BaseNotSupported,
          `${declaration.displayName} is connected by a person signing in through the browser, who ` +
            `picks the base; omit base on the ${side} side.`,
          { side },
        );
      return { kind: 'deferred', declaration };
    }
    if (hasBase && !hasAuth)
      throw new DomainError(
        ErrorCode.MissingAuth,
        `The ${side} side has base but no auth; send both, or neither to let a person connect it.`,
        { side },
      );
    if (hasAuth && !hasBase)
      throw new DomainError(
        ErrorCode.MissingBase,
        `The ${side} side has auth but no base; send both, or neither to let a person connect it.`,
        { side },
      );
    if (hasAuth && hasBase) {
      this.builder.credentialsFrom(declaration, input.auth!, `${side}.auth`);
      return { kind: 'built', declaration, auth: input.auth!, base: input.base! };
    }
    return { kind: 'deferred', declaration };
  }

  private assertPairAllowed(left: ConnectorDeclaration, right: ConnectorDeclaration): void {
    if (left.type === right.type && !left.capabilities.syncToItself) {
      throw new DomainError(
        ErrorCode.ConnectorPairNotAllowed,
        `${left.displayName} cannot sync to itself; pick another connector for one side.`,
        { connector: left.type },
      );
    }
  }

  private assertNoBaseConflict(
    left: Pick<BuiltSide, 'declaration' | 'base' | 'fingerprint'>,
    right: Pick<BuiltSide, 'declaration' | 'base' | 'fingerprint'>,
  ): void {
    if (
      left.declaration.type === right.declaration.type &&
      left.base.id === right.base.id &&
      left.fingerprint === right.fingerprint
    ) {
      throw new DomainError(
        ErrorCode.BaseConflict,
        `Both sides point to the same base "${left.base.id}" with the same credentials; a sync joins ` +
          `two different places.`,
        { base: left.base.id },
      );
    }
  }

  private builtSideRow(
    syncId: string,
    side: SideName,
    built: BuiltSide,
    via: 'api' | 'console' | 'cli',
  ): QueryDeepPartialEntity<SyncSideEntity> {
    return {
      syncId,
      side,
      connector: built.declaration.type,
      authMethod: 'api_key',
      baseId: built.base.id,
      baseName: built.base.name,
      credentials: this.cipher.encrypt(built.credentials, sideOwner(syncId, side)),
      credentialFingerprint: built.fingerprint,
      connectedVia: via,
      authStatus: 'ok',
      authError: null,
      connectedAt: new Date(),
      tablesFetchedAt: null,
      updatedAt: new Date(),
    };
  }

  private deferredSideRow(
    syncId: string,
    side: SideName,
    declaration: ConnectorDeclaration,
  ): QueryDeepPartialEntity<SyncSideEntity> {
    return {
      syncId,
      side,
      connector: declaration.type,
      authMethod: declaration.auth.method,
      baseId: null,
      baseName: null,
      credentials: null,
      credentialFingerprint: null,
      connectedVia: null,
      authStatus: 'pending',
      authError: null,
      connectedAt: null,
      tablesFetchedAt: null,
      updatedAt: new Date(),
    };
  }

  // ---- update (spec 4.2 rules 5-7) ----

  async update(
    auth: AuthContext,
    syncId: string,
    input: UpdateSyncDto,
    via: 'api' | 'cli' | 'console' = 'api',
  ): Promise<SyncDto> {
    const loaded = await this.access.load(auth, syncId);
    const changes: Record<SideName, SideChange> = { left: { kind: 'none' }, right: { kind: 'none' } };
    for (const side of SIDES) {
      const patch = input[side];
      if (patch) changes[side] = await this.planSideChange(loaded, side, patch, auth.plan);
    }
    this.assertSidesFit(loaded, changes);
    await this.dataSource.transaction(async (manager) => {
      const store = new SyncStore(manager);
      const now = new Date();
      const syncUpdate: QueryDeepPartialEntity<SyncEntity> = { updatedAt: now };
      if (input.name !== undefined) syncUpdate.name = input.name.trim() || input.name;
      let resetMappings = false;
      for (const side of SIDES) {
        const change = changes[side];
        if (await this.writeSideChange(manager, { syncId, loaded, side, change, via, now }))
          resetMappings = true;
      }
      if (resetMappings && (loaded.sync.mappings.tables ?? []).length > 0) {
        // The mapped tables of a rebuilt side belong to another app or base: start the mappings over.
        syncUpdate.mappings = { tables: [] };
        syncUpdate.mappingsRevision = loaded.sync.mappingsRevision + 1;
      }
      await store.update(syncId, syncUpdate);
    });
    return this.view(await this.access.load(auth, syncId));
  }

  /** The sides as they would be after the change may be paired (connector types, not the same base twice). */
  private assertSidesFit(loaded: LoadedSync, changes: Record<SideName, SideChange>): void {
    const after = (side: SideName) => {
      const change = changes[side];
      const entity = loaded.sides[side]!;
      if (change.kind === 'build')
        return {
          declaration: change.built.declaration,
          base: change.built.base,
          fingerprint: change.built.fingerprint,
        };
      if (change.kind === 'defer') return { declaration: change.declaration, base: null, fingerprint: null };
      return {
        declaration: this.catalog.find(entity.connector),
        base: entity.baseId ? { id: entity.baseId, name: entity.baseName ?? entity.baseId } : null,
        fingerprint: entity.credentialFingerprint,
      };
    };
    const left = after('left');
    const right = after('right');
    if (changes.left.kind !== 'none' || changes.right.kind !== 'none') {
      if (left.declaration && right.declaration) this.assertPairAllowed(left.declaration, right.declaration);
      if (
        left.declaration &&
        right.declaration &&
        left.base &&
        right.base &&
        left.fingerprint &&
        right.fingerprint
      ) {
        this.assertNoBaseConflict(
          { declaration: left.declaration, base: left.base, fingerprint: left.fingerprint },
          { declaration: right.declaration, base: right.base, fingerprint: right.fingerprint },
        );
      }
    }
  }

  /**
   * Writes one side's change inside the update's transaction: a rotation keeps the side's history; a rebuilt
   * or deferred side starts over (engine state and schema cache forgotten). True when the side was rebuilt.
   */
  private async writeSideChange(
    manager: EntityManager,
    {
      syncId,
      loaded,
      side,
      change,
      via,
      now,
    }: {
      syncId: string;
      loaded: LoadedSync;
      side: SideName;
      change: SideChange;
      via: 'api' | 'cli' | 'console';
      now: Date;
    },
  ): Promise<boolean> {
    if (change.kind === 'none') return false;
    const store = new SyncStore(manager);
    const row =
      change.kind === 'build'
        ? this.builtSideRow(syncId, side, change.built, via)
        : this.deferredSideRow(syncId, side, change.declaration);
    await resolveCredentialIssues(manager, syncId, side);
    if (change.kind === 'build' && !change.rebuild) {
      // Rotation keeps the side's history (connected_at, engine state) and fixes a broken credential.
      const current = loaded.sides[side]!;
      row.connectedAt = current.connectedAt ?? now;
      row.tablesFetchedAt = current.tablesFetchedAt;
      row.connectedVia = current.connectedVia ?? via;
      await store.updateSide(syncId, side, row);
      return false;
    }
    await store.updateSide(syncId, side, {
      ...row,
      checkpoint: null,
      changeDetection: null,
      pollingState: 'idle',
      lastPolledAt: null,
      lastChangeDetectedAt: null,
    });
    await new SchemaStore(manager).forgetSide(syncId, side);
    return true;
  }

  private async planSideChange(
    loaded: LoadedSync,
    side: SideName,
    patch: SidePatchDto,
    plan: string,
  ): Promise<SideChange> {
    const entity = loaded.sides[side]!;
    const changesConnector = patch.connector !== undefined && patch.connector !== entity.connector;
    const rebuild =
      changesConnector ||
      (patch.base !== undefined && (!isConnected(entity) || patch.base !== entity.baseId));

    if (rebuild || patch.connector !== undefined || patch.base !== undefined)
      return this.planReconnect(loaded, side, patch, plan, { changesConnector, rebuild });
    if (patch.auth === undefined) return { kind: 'none' };
    return this.planRotation(loaded, side, patch.auth);
  }

  /** A new connector or base (rebuilds the side: drafts only), or connecting a side not connected yet. */
  private async planReconnect(
    loaded: LoadedSync,
    side: SideName,
    patch: SidePatchDto,
    plan: string,
    { changesConnector, rebuild }: { changesConnector: boolean; rebuild: boolean },
  ): Promise<SideChange> {
    const entity = loaded.sides[side]!;
    const current = this.catalog.find(entity.connector);
    if (rebuild) {
      const outcome = transition(
        { status: loaded.sync.status, initialSync: loaded.sync.initialSyncPhase, bothSidesConnected: true },
        'rebuild_side',
      );
      if (!outcome.ok) throw new DomainError(ErrorCode.SyncNotDraft, outcome.message, { side });
    }
    const declaration =
      patch.connector !== undefined ? this.catalog.available(patch.connector, plan) : current;
    if (!declaration) {
      throw new DomainError(
        ErrorCode.UnknownConnector,
        `The ${side} side's connector "${patch.connector ?? entity.connector}" does not exist ` +
          "or is not available on this account's plan.",
        { side },
      );
    }
    if (
      patch.auth !== undefined &&
      isConnected(entity) &&
      entity.authMethod === 'oauth' &&
      declaration.type === entity.connector
    ) {
      // Spec 2.6 and rule 6 of 4.2: a side a person signed in keeps that method, even when rebuilt.
      throw new DomainError(
        ErrorCode.InvalidAuth,
        `The ${side} side was connected by a person signing in; it keeps that method and cannot be ` +
          'switched to a pasted credential.',
        { side },
      );
    }
    if (declaration.auth.method === 'oauth') {
      if (patch.auth !== undefined)
        throw new DomainError(
          ErrorCode.OauthConnectorNotSupported,
          `${declaration.displayName} is connected by a person signing in through the browser; ` +
            'its credentials cannot be set over the API.',
          { side },
        );
      if (patch.base !== undefined)
        throw new DomainError(
          ErrorCode.BaseNotSupported,
          `${declaration.displayName} is connected by a person signing in through the browser, who ` +
            `picks the base.`,
          { side },
        );
      return changesConnector ? { kind: 'defer', declaration } : { kind: 'none' };
    }
    if (
      patch.auth === undefined &&
      (changesConnector || !isConnected(entity) || entity.authMethod !== 'api_key')
    ) {
      throw new DomainError(
        ErrorCode.MissingAuth,
        `Changing the ${side} side's connector or connecting it needs auth and base together.`,
        { side },
      );
    }
    const base =
      patch.base ?? (changesConnector || !isConnected(entity) ? undefined : (entity.baseId ?? undefined));
    if (base === undefined)
      throw new DomainError(ErrorCode.MissingBase, `The ${side} side needs a base together with its auth.`, {
        side,
      });
    if (!rebuild && patch.auth === undefined) return { kind: 'none' };
    const credentials =
      patch.auth !== undefined
        ? this.builder.credentialsFrom(declaration, patch.auth, `${side}.auth`)
        : this.connections.credentials(entity);
    return {
      kind: 'build',
      built: await this.builder.build(declaration, credentials, base, side),
      rebuild,
    };
  }

  /** Auth alone: fills nothing, rotates the credentials of a connected api_key side. */
  private async planRotation(
    loaded: LoadedSync,
    side: SideName,
    auth: NonNullable<SidePatchDto['auth']>,
  ): Promise<SideChange> {
    const entity = loaded.sides[side]!;
    const current = this.catalog.find(entity.connector);
    if (!current)
      throw new DomainError(
        ErrorCode.UnknownConnector,
        `The ${side} side's connector "${entity.connector}" is no longer offered.`,
        { side },
      );
    if (current.auth.method === 'oauth') {
      if (!isConnected(entity)) {
        throw new DomainError(
          ErrorCode.RequiresAction,
          `The ${side} side (${current.displayName}) is connected by a person signing in through the ` +
            'browser; relay the action.',
          { side },
          this.access.connectAction(loaded, side),
        );
      }
      throw new DomainError(
        ErrorCode.OauthConnectorNotSupported,
        `${current.displayName} credentials cannot be set or rotated over the API; ` +
          'a person reconnects it in the app.',
        { side },
      );
    }
    if (!isConnected(entity))
      throw new DomainError(
        ErrorCode.MissingBase,
        `The ${side} side is not connected yet: send connector, auth and base together to connect it.`,
        { side },
      );
    if (entity.authMethod === 'oauth') {
      throw new DomainError(
        ErrorCode.InvalidAuth,
        `The ${side} side was connected by a person signing in; it keeps that method and cannot be ` +
          'switched to a pasted credential.',
        { side },
      );
    }
    const credentials = this.builder.credentialsFrom(current, auth, `${side}.auth`);
    return {
      kind: 'build',
      built: await this.builder.build(current, credentials, entity.baseId!, side),
      rebuild: false,
    };
  }

  // ---- delete ----

  async remove(auth: AuthContext, syncId: string): Promise<DeletedSyncDto> {
    const loaded = await this.access.load(auth, syncId);
    // Hidden at once (every read is 404 from now on); the worker undoes table setup in both apps and
    // removes the rows (job `syncs/teardown`).
    if (!(await this.syncs.markDeleted(loaded.sync.id)))
      throw new DomainError(ErrorCode.NotFound, `No sync ${syncId}.`);
    await this.jobs.add('syncs', SYNC_JOBS.teardown, { syncId }, { jobId: `teardown:${syncId}` });
    return { id: syncId, deleted: true };
  }

  /** Sets how the sync's deletes are approved (the console and the CLI set it once a start succeeded). */
  async setDeleteApproval(syncId: string, deleteApproval: DeleteApproval): Promise<void> {
    await this.syncs.update(syncId, { deleteApproval, updatedAt: new Date() });
  }
}
