import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { DomainError, ErrorCode, type SyncDto } from '@lockstep/contracts';
import { isCreate, type MappingsDocument, transition } from '@lockstep/domain';
import { JobProducer, SYNC_JOBS } from '@lockstep/jobs';
import { type StartOptions, SyncEntity } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { lifecycleState, SyncAccess } from '../syncs/sync-access';
import { SyncsService } from '../syncs/syncs.service';
import { MappingsService } from './mappings.service';

export interface StartInput {
  /**
   * Match field per table pair for the initial sync: pair index, left field, right field (refs as in
   * mappings).
   */
  match?: { tablePair: number; leftField: string; rightField: string }[];
  /** The side whose values win for matched records that differ (default left). */
  prefer?: 'left' | 'right';
}

/**
 * A person reviews and starts a draft (the console's "Start" button and `lockstep sync start`). Refused while
 * a side is unconnected (`auth_required`) or while the stored mappings have validation errors, nothing mapped
 * (`nothing_mapped`) included (`invalid_mappings` with `details.issues`, the issues `POST .../validate`
 * reports). Starting makes the sync active with its initial sync in `preparing`; the worker prepares and runs
 * it.
 */
@Injectable()
export class SyncStartService {
  constructor(
    @InjectRepository(SyncEntity) private readonly syncs: Repository<SyncEntity>,
    private readonly access: SyncAccess,
    private readonly mappings: MappingsService,
    private readonly jobs: JobProducer,
    private readonly service: SyncsService,
  ) {}

  async start(auth: AuthContext, syncId: string, input: StartInput = {}): Promise<SyncDto> {
    const loaded = await this.access.load(auth, syncId);
    const { sync } = loaded;
    const outcome = transition(lifecycleState(loaded), 'start');
    if (!outcome.ok) {
      if (outcome.code === 'auth_required') this.access.requireBothConnected(loaded);
      throw new DomainError(ErrorCode.Conflict, outcome.message);
    }
    const { document, issues } = await this.mappings.validateStored(loaded);
    const errors = issues.filter((issue) => issue.severity === 'error');
    if (errors.length > 0) {
      throw new DomainError(
        ErrorCode.InvalidMappings,
        `The sync cannot start: ${errors.length} validation error(s), ` +
          `first ${errors[0]!.path}: ${errors[0]!.message}`,
        { issues },
      );
    }
    const options: StartOptions = {
      prefer: input.prefer ?? 'left',
      match: await this.matchFields(auth, syncId, document, input.match ?? []),
    };
    const result = await this.syncs.update(
      { id: sync.id, status: 'draft', mappingsRevision: sync.mappingsRevision },
      {
        status: 'active',
        activating: false,
        initialSyncPhase: 'preparing',
        initialSyncStartedAt: new Date(),
        initialSyncFinishedAt: null,
        initialSyncProgress: null,
        reviewedRevision: sync.mappingsRevision,
        startOptions: options,
        startedAt: new Date(),
        updatedAt: new Date(),
      },
    );
    if (!result.affected)
      throw new DomainError(
        ErrorCode.Conflict,
        'The sync or its mappings changed while it was being started; review it again.',
      );
    // A worker picks the sync up now rather than at its next tick. The sync is started either way, so the
    // answer does not wait on an unreachable Redis for longer than a tick (every second) would take to find
    // it.
    const wake = this.jobs.add('syncs', SYNC_JOBS.activate, { syncId }).catch(() => undefined);
    await Promise.race([wake, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    return this.service.get(auth, syncId);
  }

  /** The match fields asked for, each checked to be a mapped field pair of its table pair. */
  private async matchFields(
    auth: AuthContext,
    syncId: string,
    document: MappingsDocument,
    requested: NonNullable<StartInput['match']>,
  ): Promise<NonNullable<StartOptions['match']>> {
    const chosen: NonNullable<StartOptions['match']> = [];
    // Match fields may be named as stored (prefixed ids) or as read (remote ids); the document is rendered
    // once.
    const rendered = requested.length ? (await this.mappings.get(auth, syncId)).document.tables : [];
    for (const match of requested) {
      const pair = document.tables[match.tablePair];
      if (!pair)
        throw new DomainError(
          ErrorCode.InvalidRequest,
          `--match names table pair ${match.tablePair}, but the mappings have ${document.tables.length}.`,
        );
      const byId = pair.fields.some(
        (field) =>
          !isCreate(field.leftField) &&
          !isCreate(field.rightField) &&
          field.leftField === match.leftField &&
          field.rightField === match.rightField,
      );
      const renderedFields = (rendered[match.tablePair]?.['fields'] ?? []) as {
        left_field: string;
        right_field: string;
      }[];
      const byRemote = renderedFields.some(
        (field) => field.left_field === match.leftField && field.right_field === match.rightField,
      );
      if (!byId && !byRemote) {
        throw new DomainError(
          ErrorCode.InvalidRequest,
          `Table pair ${match.tablePair} maps no field pair ${match.leftField} = ${match.rightField}; ` +
            'pick a mapped pair as the match field.',
        );
      }
      chosen.push(match);
    }
    return chosen;
  }
}
