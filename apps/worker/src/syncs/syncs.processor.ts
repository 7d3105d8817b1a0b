import { Process, Processor } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Job } from 'bull';
import { DataSource, Not, IsNull } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { findConnector } from '@lockstep/connectors-registry';
import { type JobMap, QUEUES, SYNC_JOBS } from '@lockstep/jobs';
import {
  CredentialCipher,
  SideCredentialStore,
  sideOwner,
  SyncEntity,
  SyncSideEntity,
  SyncTableEntity,
} from '@lockstep/persistence';
import { EngineScheduler } from '../engine/engine.scheduler';
import { ConnectorCoordinationProvider } from '../connector-coordination';

/** Lifecycle work on one sync. Payloads carry ids only; each handler reloads and returns early when moot. */
@Processor(QUEUES.syncs)
@Injectable()
export class SyncsProcessor {
  private readonly logger = new Logger('Syncs');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly config: AppConfig,
    private readonly engine: EngineScheduler,
    private readonly coordination: ConnectorCoordinationProvider,
  ) {}

  /**
   * The sync was started or activated: the worker has it again, so it is no longer reported as activating,
   * and the engine looks for syncs to run now instead of at its next tick (a started sync begins preparing at
   * once).
   */
  @Process(SYNC_JOBS.activate)
  async activate(job: Job<JobMap['syncs']['activate']>): Promise<{ picked_up: boolean }> {
    const result = await this.dataSource
      .getRepository(SyncEntity)
      .update(
        { id: job.data.syncId, status: 'active', activating: true, deletedAt: IsNull() },
        { activating: false },
      );
    this.engine.wake(job.data.syncId);
    return { picked_up: Boolean(result.affected) };
  }

  /**
   * The sync was deleted: undo table setup in both apps (`unprepareTable` of every table it prepared:
   * triggers, the service id column and the change log go where no other sync reads them), then remove its
   * rows. An app that cannot be reached is retried with backoff; after the last attempt the rows go anyway
   * (the app keeps inert triggers a person can drop; logged).
   */
  @Process(SYNC_JOBS.teardown)
  async teardown(job: Job<JobMap['syncs']['teardown']>): Promise<{ unprepared: number; deleted: boolean }> {
    const { syncId } = job.data;
    const sync = await this.dataSource
      .getRepository(SyncEntity)
      .findOneBy({ id: syncId, deletedAt: Not(IsNull()) });
    if (!sync) return { unprepared: 0, deleted: false };
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    let unprepared = 0;
    const sides = await this.dataSource.getRepository(SyncSideEntity).findBy({ syncId });
    for (const side of sides) {
      const tables = await this.dataSource
        .getRepository(SyncTableEntity)
        .findBy({ syncId, side: side.side, preparedAt: Not(IsNull()) });
      const declaration = findConnector(side.connector);
      if (tables.length === 0 || !side.credentials || !declaration) continue;
      try {
        const credentials = this.cipher.decrypt(side.credentials, sideOwner(syncId, side.side));
        const oauthClient = this.config.connectorOAuthClient(side.connector);
        // The sync's own write origin: its tables' setup is removed as this sync's (a table another sync
        // still reads keeps its triggers).
        const connection = await declaration.connect(credentials, side.baseId, {
          egress: {
            allowPrivate: this.config.EGRESS_ALLOW_PRIVATE,
            allowLoopback: this.config.EGRESS_ALLOW_LOOPBACK,
          },
          poolSize: 1,
          writeOrigin: syncId,
          shared: this.coordination.shared,
          settings: this.config.connectorSettings,
          ...(oauthClient ? { oauthClient } : {}),
          credentialStore: new SideCredentialStore(this.dataSource.manager, this.cipher, syncId, side.side),
        });
        try {
          for (const table of tables) {
            await connection.unprepareTable(table.remoteId);
            await this.dataSource
              .getRepository(SyncTableEntity)
              .update({ id: table.id }, { preparedAt: null });
            unprepared += 1;
          }
        } finally {
          await connection.close();
        }
      } catch (error) {
        if (!lastAttempt) throw error;
        this.logger.warn(
          { syncId, side: side.side, error: error instanceof Error ? error.message : String(error) },
          'could not undo table setup of a deleted sync; removing it anyway',
        );
      }
    }
    await this.dataSource.getRepository(SyncEntity).delete({ id: syncId });
    this.logger.log({ syncId, unprepared }, 'deleted sync torn down');
    return { unprepared, deleted: true };
  }
}
