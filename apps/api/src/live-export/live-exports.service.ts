import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { newId } from '@lockstep/domain';
import type { BaseInfo, ConnectorDeclaration, Credentials } from '@lockstep/connectors-core';
import { JobProducer, LIVE_EXPORT_JOBS, QUEUES } from '@lockstep/jobs';
import {
  CaptureStore,
  type LiveExportChanges,
  type LiveExportEntity,
  LiveExportStore,
  RunStore,
} from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { CursorService, type LimitRule, parseLimit } from '../common/pagination/cursor.service';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { LiveExportAccess, LiveExportLinks, type LiveExportSide } from './live-export-access';
import { LiveExportConnections, resolveLocation } from './live-export-connections';
import type {
  CreateLiveExportDto,
  DeletedLiveExportDto,
  DestinationPatchDto,
  LiveExportDto,
  LiveExportListDto,
  SourcePatchDto,
  UpdateLiveExportDto,
} from '@lockstep/contracts';
import { toLiveExportDto } from './live-export.mapper';

export const LIVE_EXPORT_LIST_LIMIT: LimitRule = { min: 1, max: 25, default: 10 };
const LIST_ENDPOINT = 'GET /live-export/live-exports';

interface SourcePlan {
  declaration: ConnectorDeclaration;
  credentials: Credentials | null;
  base: string | undefined;
}

interface DestinationPlan {
  declaration: ConnectorDeclaration;
  credentials: Credentials | null;
  location: string | undefined;
}

/** A location sent on the source (which has none). */
function refuseSourceLocation(location: unknown): void {
  if (location !== undefined)
    throw new DomainError(
      ErrorCode.InvalidLocation,
      'The source has no location: only the destination does (`destination.location`). The source ' +
        'reads from `source.base`.',
      { side: 'source' },
    );
}

/**
 * Live exports (spec 2.15, 4.8): create (every check before anything is stored), list, get, PATCH (rename,
 * complete a withheld side, set the location), DELETE (the export, its schedule and runs go; destination
 * tables stay).
 */
@Injectable()
export class LiveExportsService {
  private readonly exports: LiveExportStore;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly access: LiveExportAccess,
    private readonly connections: LiveExportConnections,
    private readonly catalog: ConnectorCatalog,
    private readonly links: LiveExportLinks,
    private readonly cursors: CursorService,
    private readonly jobs: JobProducer,
  ) {
    this.exports = new LiveExportStore(dataSource.manager);
  }

  dto(entity: LiveExportEntity): LiveExportDto {
    return toLiveExportDto(entity, this.links, (type) => this.catalog.find(type));
  }

  async create(auth: AuthContext, body: CreateLiveExportDto): Promise<LiveExportDto> {
    await this.access.requireWritable(auth);
    // 1. Everything that needs no app: connectors, roles, field shapes.
    refuseSourceLocation(body.source.location);
    const source = this.sourcePlan(auth, body.source.connector, body.source.auth, body.source.base);
    const destination = this.destinationPlan(
      auth,
      body.destination.connector,
      body.destination.auth,
      body.destination.location,
    );
    // 2. Live checks, source first; nothing is stored unless both pass.
    const base = source.credentials
      ? await this.connections.checkSource(source.declaration, source.credentials, source.base!)
      : null;
    const location = destination.credentials
      ? await this.checkedLocation(destination.declaration, destination.credentials, destination.location)
      : null;

    const id = newId('liveExport');
    const now = new Date();
    await this.exports.insert({
      id,
      accountId: auth.accountId,
      name: body.name,
      sourceConnector: source.declaration.type,
      sourceAuthMethod: source.declaration.auth.method,
      sourceBase: base?.id ?? null,
      sourceCredentials: source.credentials ? this.connections.seal(id, 'source', source.credentials) : null,
      sourceConnectedAt: source.credentials ? now : null,
      destinationConnector: destination.declaration.type,
      destinationAuthMethod: destination.declaration.auth.method,
      destinationLocation: location?.id ?? null,
      destinationCredentials: destination.credentials
        ? this.connections.seal(id, 'destination', destination.credentials)
        : null,
      destinationConnectedAt: destination.credentials ? now : null,
      mappings: { tables: [] },
      mappingsVersion: 1,
      savedVersion: null,
      savedAt: null,
    });
    return this.dto(await this.exports.get(id));
  }

  async list(auth: AuthContext, rawLimit: unknown, rawCursor: unknown): Promise<LiveExportListDto> {
    const limit = parseLimit(rawLimit, LIVE_EXPORT_LIST_LIMIT);
    const position = this.cursors.decode(rawCursor, LIST_ENDPOINT, auth.accountId);
    const gate = await this.access.gate(auth);
    // Without live export the account's exports are hidden, as their ids are (404).
    if (!gate.available) return { data: [], has_more: false, next_cursor: null };
    const rows = await this.exports.page(auth.accountId, limit + 1, position);
    const entities = await this.exports.findByIds(rows.map((row) => row.id));
    const byId = new Map(entities.map((entity) => [entity.id, entity]));
    const present = rows.filter((row) => byId.has(row.id));
    return this.cursors.page(
      present,
      limit,
      LIST_ENDPOINT,
      auth.accountId,
      (row) => ({ createdAt: row.key, id: row.id }),
      (row) => this.dto(byId.get(row.id)!),
    );
  }

  async get(auth: AuthContext, id: string): Promise<LiveExportDto> {
    const { entity } = await this.access.load(auth, id, 'read');
    return this.dto(entity);
  }

  async update(auth: AuthContext, id: string, body: UpdateLiveExportDto): Promise<LiveExportDto> {
    const { entity } = await this.access.load(auth, id, 'write');
    const set: LiveExportChanges = {};
    if (body.name !== undefined) set.name = body.name;

    // Checks that need no app first, then live checks; nothing is written unless all pass.
    const sourceCredentials = body.source ? this.sourcePatch(entity, body.source) : null;
    const destinationCredentials = body.destination
      ? this.destinationPatchCredentials(entity, body.destination)
      : null;
    if (
      body.destination?.location !== undefined &&
      !destinationCredentials &&
      entity.destinationCredentials === null
    ) {
      throw new DomainError(
        ErrorCode.InvalidLocation,
        'The destination is not connected yet, so its locations are unknown: send `destination.auth` ' +
          'with the location (or after it).',
        { side: 'destination' },
      );
    }
    const now = new Date();
    if (sourceCredentials) {
      const base = await this.connections.checkSource(
        this.connections.declaration(entity, 'source'),
        sourceCredentials,
        body.source!.base!,
      );
      Object.assign(set, {
        sourceCredentials: this.connections.seal(entity.id, 'source', sourceCredentials),
        sourceBase: base.id,
        sourceConnectedAt: now,
      });
    }
    if (destinationCredentials || body.destination?.location !== undefined) {
      const declaration = this.connections.declaration(entity, 'destination');
      const credentials = destinationCredentials ?? this.connections.credentials(entity, 'destination');
      const location = await this.checkedLocation(declaration, credentials, body.destination?.location);
      if (destinationCredentials)
        Object.assign(set, {
          destinationCredentials: this.connections.seal(entity.id, 'destination', destinationCredentials),
          destinationConnectedAt: now,
        });
      if (location && location.id !== entity.destinationLocation) set.destinationLocation = location.id;
    }
    if (Object.keys(set).length === 0) return this.dto(entity);
    // A location change after a save is an unsaved change: runs keep the saved plan's location until the next
    // save.
    const bump = set.destinationLocation !== undefined && entity.savedVersion !== null;
    await this.dataSource.transaction((m) => new LiveExportStore(m).update(entity.id, set, bump));
    return this.dto(await this.exports.get(entity.id));
  }

  async remove(auth: AuthContext, id: string): Promise<DeletedLiveExportDto> {
    const { entity } = await this.access.load(auth, id, 'write');
    const outcome = await this.dataSource.transaction(async (m) => {
      const runs = await new RunStore(m).cancelActiveOf(entity.id);
      // The export's change capture in the source database is removed by the worker afterwards.
      const released = await new CaptureStore(m).releaseAll(entity.id);
      await new LiveExportStore(m).delete(entity.id);
      return { run: runs[0] ?? null, released };
    });
    const canceled = outcome.run;
    if (canceled) await this.removeQueuedJob(canceled.id);
    // Best effort: the worker's sweep also picks up released captures whose job never arrived.
    if (outcome.released > 0)
      await this.jobs
        .add(
          QUEUES.liveExport,
          LIVE_EXPORT_JOBS.releaseCaptures,
          { liveExportId: entity.id },
          { jobId: `release:${entity.id}` },
        )
        .catch(() => undefined);
    return {
      id: entity.id,
      deleted: true,
      canceled_run: canceled?.id ?? null,
      note:
        'The live export, its schedule and its run history are deleted. Tables it created in the ' +
        'destination stay, with their rows; the change capture it installed in the source database is ' +
        'removed shortly.',
    };
  }

  /** Best effort: a queued run's Bull job; the worker also ignores a job whose run is gone or not queued. */
  async removeQueuedJob(runId: string): Promise<void> {
    try {
      const job = await this.jobs.queue(QUEUES.liveExport).getJob(`run:${runId}`);
      if (job && !(await job.isActive())) await job.remove();
    } catch {
      // The worker skips it anyway.
    }
  }

  // ---- helpers ----

  private sourcePlan(
    auth: AuthContext,
    connector: string,
    rawAuth: Record<string, unknown> | undefined,
    base: string | undefined,
  ): SourcePlan {
    const declaration = this.connections.connectorFor(connector, 'source', auth.plan);
    const credentials =
      rawAuth !== undefined ? this.connections.credentialsFrom(declaration, rawAuth, 'source') : null;
    if (declaration.auth.method === 'oauth' && base !== undefined) {
      throw new DomainError(
        ErrorCode.BaseNotSupported,
        `${declaration.displayName} is connected by a person; its base is chosen then, not in this request.`,
        { side: 'source' },
      );
    }
    if (credentials && base === undefined)
      throw new DomainError(
        ErrorCode.MissingBase,
        'source.auth needs source.base: the schema (PostgreSQL) or database (MySQL) to read the tables from.',
        { side: 'source' },
      );
    if (!credentials && base !== undefined)
      throw new DomainError(
        ErrorCode.MissingAuth,
        'source.base needs source.auth: the base is checked with the credentials.',
        { side: 'source' },
      );
    return { declaration, credentials, base };
  }

  private destinationPlan(
    auth: AuthContext,
    connector: string,
    rawAuth: Record<string, unknown> | undefined,
    location: string | undefined,
  ): DestinationPlan {
    const declaration = this.connections.connectorFor(connector, 'destination', auth.plan);
    const credentials =
      rawAuth !== undefined ? this.connections.credentialsFrom(declaration, rawAuth, 'destination') : null;
    if (!credentials && location !== undefined) {
      throw new DomainError(
        ErrorCode.InvalidLocation,
        'destination.location needs a connected destination (send destination.auth with it, or set ' +
          'the location later with PATCH once connected).',
        { side: 'destination' },
      );
    }
    return { declaration, credentials, location };
  }

  private async checkedLocation(
    declaration: ConnectorDeclaration,
    credentials: Credentials,
    location: string | undefined,
  ): Promise<BaseInfo | null> {
    const locations = await this.connections.checkDestination(declaration, credentials);
    return location === undefined ? null : resolveLocation(locations, location);
  }

  /** Credentials completing a withheld source, or null when the patch does not touch them. */
  private sourcePatch(entity: LiveExportEntity, patch: SourcePatchDto): Credentials | null {
    refuseSourceLocation(patch.location);
    if (patch.auth === undefined && patch.base === undefined) return null;
    this.refuseConnected(entity, 'source');
    const declaration = this.connections.declaration(entity, 'source');
    const credentials =
      patch.auth !== undefined ? this.connections.credentialsFrom(declaration, patch.auth, 'source') : null;
    if (credentials && patch.base === undefined)
      throw new DomainError(
        ErrorCode.MissingBase,
        'source.auth needs source.base: the schema (PostgreSQL) or database (MySQL) to read the tables from.',
        { side: 'source' },
      );
    if (!credentials)
      throw new DomainError(ErrorCode.MissingAuth, 'source.base needs source.auth.', { side: 'source' });
    return credentials;
  }

  private destinationPatchCredentials(
    entity: LiveExportEntity,
    patch: DestinationPatchDto,
  ): Credentials | null {
    if (patch.auth === undefined) return null;
    this.refuseConnected(entity, 'destination');
    return this.connections.credentialsFrom(
      this.connections.declaration(entity, 'destination'),
      patch.auth,
      'destination',
    );
  }

  private refuseConnected(entity: LiveExportEntity, side: LiveExportSide): void {
    const connected =
      side === 'source' ? entity.sourceCredentials !== null : entity.destinationCredentials !== null;
    if (connected) {
      throw new DomainError(
        ErrorCode.SideAlreadyConnected,
        `The ${side} is already connected; its credentials cannot be replaced over the API (create a ` +
          `new live export to use other credentials).`,
        { side },
      );
    }
  }
}
