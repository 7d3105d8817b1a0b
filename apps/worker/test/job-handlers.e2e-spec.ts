import type { DynamicModule, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@lockstep/config';
import { queuedJobs } from '@lockstep/jobs';
import { checkJobHandlers, registeredJobHandlers } from '../src/job-handlers';
import { MaintenanceProcessor } from '../src/maintenance/maintenance.processor';
import { WorkerModule } from '../src/worker.module';

/** The real worker module's handlers, as Bull holds them after boot, against the JobMap. */
describe('worker: job handlers at start-up', () => {
  const config = loadConfig(process.env, {
    LOCKSTEP_MASTER_KEY: Buffer.alloc(32, 3).toString('base64'),
    ENGINE_ENABLED: false,
  });
  const boot = async (module: DynamicModule): Promise<INestApplicationContext> => {
    const app = await NestFactory.createApplicationContext(module, { logger: false });
    await app.init();
    return app;
  };

  it('has exactly one handler for every job of every queue', async () => {
    const worker = await boot(WorkerModule.forRoot(config));
    try {
      const registered = registeredJobHandlers(worker);
      expect(registered).toEqual(expect.arrayContaining(queuedJobs()));
      expect(registered).toHaveLength(queuedJobs().length);
      expect(() => checkJobHandlers(worker)).not.toThrow();
    } finally {
      await worker.close();
    }
  });

  it('fails start-up naming the job whose handler is missing', async () => {
    const module = WorkerModule.forRoot(config);
    const worker = await boot({
      ...module,
      providers: module.providers!.filter((provider) => provider !== MaintenanceProcessor),
    });
    try {
      expect(() => checkJobHandlers(worker)).toThrow(
        'job handlers do not match the JobMap: ' +
          'no handler for job "maintenance/purge-expired-idempotency-keys"',
      );
    } finally {
      await worker.close();
    }
  });
});
