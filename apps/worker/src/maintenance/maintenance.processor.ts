import { InjectQueue, Process, Processor } from '@nestjs/bull';
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Queue } from 'bull';
import { LessThan, type Repository } from 'typeorm';
import { MAINTENANCE_JOBS, QUEUES } from '@lockstep/jobs';
import { IdempotencyRecordEntity } from '@lockstep/persistence';

/** Housekeeping: drops idempotency keys past their 24 hours (hourly, a Bull repeatable job). */
@Processor(QUEUES.maintenance)
@Injectable()
export class MaintenanceProcessor implements OnApplicationBootstrap {
  private readonly logger = new Logger('Maintenance');

  constructor(
    @InjectQueue(QUEUES.maintenance) private readonly queue: Queue,
    @InjectRepository(IdempotencyRecordEntity)
    private readonly idempotency: Repository<IdempotencyRecordEntity>,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // A repeatable job is keyed by name and cron, so every worker adding it leaves exactly one schedule.
    await this.queue.add(
      MAINTENANCE_JOBS.purgeIdempotency,
      {},
      { repeat: { cron: '17 * * * *' }, removeOnComplete: 10, removeOnFail: 10 },
    );
  }

  @Process(MAINTENANCE_JOBS.purgeIdempotency)
  async purgeExpiredIdempotencyKeys(): Promise<{ deleted: number }> {
    const result = await this.idempotency.delete({ expiresAt: LessThan(new Date()) });
    const deleted = result.affected ?? 0;
    this.logger.log({ deleted }, 'purged expired idempotency keys');
    return { deleted };
  }
}
