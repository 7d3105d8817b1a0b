import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { DomainError, ErrorCode, type SyncDto } from '@lockstep/contracts';
import { type LifecycleEvent, type LifecycleOutcome, transition } from '@lockstep/domain';
import { JobProducer, SYNC_JOBS } from '@lockstep/jobs';
import { SyncEntity } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { reviewInstruction } from './review-instruction';
import { lifecycleState, type LoadedSync, SyncAccess } from './sync-access';
import { SyncLinks } from './sync-links';
import { SyncsService } from './syncs.service';

/**
 * Pause and activate (spec 3.1). The domain's `transition` decides; the new state is written with a
 * conditional update on the state it was decided from, so two concurrent calls cannot both apply.
 */
@Injectable()
export class SyncLifecycleService {
  constructor(
    @InjectRepository(SyncEntity) private readonly syncs: Repository<SyncEntity>,
    private readonly access: SyncAccess,
    private readonly service: SyncsService,
    private readonly links: SyncLinks,
    private readonly jobs: JobProducer,
    private readonly catalog: ConnectorCatalog,
  ) {}

  async pause(auth: AuthContext, syncId: string): Promise<SyncDto> {
    const loaded = await this.apply(auth, syncId, 'pause');
    return this.service.view(loaded);
  }

  async activate(auth: AuthContext, syncId: string): Promise<SyncDto> {
    const loaded = await this.apply(auth, syncId, 'activate');
    await this.jobs.add('syncs', SYNC_JOBS.activate, { syncId });
    return this.service.view(loaded);
  }

  /** Decides and persists one event; retries once when the sync changed in between. */
  private async apply(auth: AuthContext, syncId: string, event: LifecycleEvent): Promise<LoadedSync> {
    for (let attempt = 0; ; attempt += 1) {
      const loaded = await this.access.load(auth, syncId);
      const { sync } = loaded;
      const outcome = transition(lifecycleState(loaded), event);
      if (!outcome.ok) {
        if (outcome.code === 'auth_required') this.access.requireBothConnected(loaded);
        throw this.refusal(loaded, outcome);
      }
      if (!outcome.changed && outcome.activating === sync.activating) return loaded;
      const result = await this.syncs.update(
        { id: sync.id, status: sync.status, initialSyncPhase: sync.initialSyncPhase },
        {
          status: outcome.status,
          activating: outcome.activating,
          initialSyncPhase: outcome.initialSync,
          updatedAt: new Date(),
        },
      );
      if (result.affected) return this.access.load(auth, syncId);
      if (attempt > 0)
        throw new DomainError(ErrorCode.Conflict, 'The sync changed while this request ran; retry.');
    }
  }

  private refusal(loaded: LoadedSync, outcome: Extract<LifecycleOutcome, { ok: false }>): DomainError {
    switch (outcome.code) {
      case 'confirmation_required':
        return new DomainError(
          ErrorCode.ConfirmationRequired,
          outcome.message,
          undefined,
          this.links.reviewAction(
            loaded.sync.id,
            reviewInstruction(loaded.sync.name, loaded.sides, this.catalog),
          ),
        );
      case 'initial_sync_running':
        return new DomainError(ErrorCode.InitialSyncRunning, outcome.message);
      case 'initial_sync_preparing':
        return new DomainError(ErrorCode.InitialSyncPreparing, outcome.message, undefined, undefined, {
          'Retry-After': '30',
        });
      case 'sync_active':
        return new DomainError(ErrorCode.SyncActive, outcome.message);
      case 'sync_not_draft':
        return new DomainError(ErrorCode.SyncNotDraft, outcome.message);
      case 'auth_required':
      case 'conflict':
        return new DomainError(ErrorCode.Conflict, outcome.message);
    }
  }
}
