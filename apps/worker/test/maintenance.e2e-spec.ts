import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getQueueToken } from '@nestjs/bull';
import { getRepositoryToken } from '@nestjs/typeorm';
import type { Queue } from 'bull';
import type { Repository } from 'typeorm';
import { loadConfig } from '@lockstep/config';
import { newId } from '@lockstep/contracts';
import { MAINTENANCE_JOBS, QUEUES } from '@lockstep/jobs';
import { AccountEntity, IdempotencyRecordEntity } from '@lockstep/persistence';
import { WorkerModule } from '../src/worker.module';

describe('worker: maintenance queue', () => {
  let worker: INestApplicationContext;
  beforeAll(async () => {
    const config = loadConfig(process.env, {
      LOCKSTEP_MASTER_KEY: Buffer.alloc(32, 3).toString('base64'),
      ENGINE_ENABLED: false,
    });
    worker = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { logger: false });
    await worker.init();
  });
  afterAll(() => worker.close());

  it('purges expired idempotency keys through a real Bull job, keeping live ones', async () => {
    const accounts = worker.get<Repository<AccountEntity>>(getRepositoryToken(AccountEntity));
    const records = worker.get<Repository<IdempotencyRecordEntity>>(
      getRepositoryToken(IdempotencyRecordEntity),
    );
    const accountId = newId('account');
    await accounts.insert({
      id: accountId,
      email: `${accountId}@example.com`,
      passwordHash: 'x',
      plan: 'free',
      apiEnabled: true,
      subscription: 'active',
    });
    const row = (key: string, expiresAt: Date) => ({
      accountId,
      endpoint: 'POST /v1/sync/syncs',
      key,
      fingerprint: 'f',
      state: 'completed' as const,
      expiresAt,
    });
    await records.insert([
      row('old', new Date(Date.now() - 1000)),
      row('live', new Date(Date.now() + 3600_000)),
    ]);

    const queue = worker.get<Queue>(getQueueToken(QUEUES.maintenance));
    const job = await queue.add(MAINTENANCE_JOBS.purgeIdempotency, {});
    const result = await job.finished();
    // Other test files' workers share this queue and store and purge too: the expired key may already be gone
    // when this job runs (a count of 0). What must hold is the state below.
    expect(Number.isInteger(result.deleted) && result.deleted >= 0).toBe(true);
    const left = await records.find({ where: { accountId } });
    expect(left.map((r) => r.key)).toEqual(['live']);
    const repeatable = await queue.getRepeatableJobs();
    expect(repeatable.map((r) => r.name)).toContain(MAINTENANCE_JOBS.purgeIdempotency);
  });
});
