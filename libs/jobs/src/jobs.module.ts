import { BullModule, getQueueToken } from '@nestjs/bull';
import { type DynamicModule, Global, Inject, Injectable, Module } from '@nestjs/common';
import type { Queue } from 'bull';
import { AppConfig } from '@lockstep/config';
import { ALL_QUEUES, DEFAULT_JOB_OPTIONS, type JobMap, type JobName, type QueueName } from './queues';

export const QUEUE_LIST = Symbol('QUEUE_LIST');

/** Typed producer: `jobs.add('maintenance', 'purge-expired-idempotency-keys', {})`. */
@Injectable()
export class JobProducer {
  private readonly queues: Map<QueueName, Queue>;

  constructor(@Inject(QUEUE_LIST) queues: Queue[]) {
    this.queues = new Map(queues.map((q) => [q.name as QueueName, q]));
  }

  queue(name: QueueName): Queue {
    const queue = this.queues.get(name);
    if (!queue) throw new Error(`queue ${name} is not registered`);
    return queue;
  }

  async add<Q extends QueueName, N extends JobName<Q>>(
    queue: Q,
    name: N,
    payload: JobMap[Q][N],
    options: { jobId?: string; delay?: number } = {},
  ) {
    return this.queue(queue).add(name, payload, { ...DEFAULT_JOB_OPTIONS, ...options });
  }

  /** Waiting + active + delayed jobs per queue (the `/metrics` queue depth). */
  async depths(): Promise<Record<string, Record<string, number>>> {
    const result: Record<string, Record<string, number>> = {};
    for (const [name, queue] of this.queues) {
      const counts = await queue.getJobCounts();
      result[name] = {
        waiting: counts.waiting,
        active: counts.active,
        delayed: counts.delayed,
        failed: counts.failed,
      };
    }
    return result;
  }
}

/**
 * Bull on Redis with every queue of `QUEUES` registered, for the API (producer) and the worker (consumers).
 */
@Global()
@Module({})
export class JobsModule {
  static forRoot(): DynamicModule {
    const queues = ALL_QUEUES.map((name) => BullModule.registerQueue({ name }));
    return {
      module: JobsModule,
      imports: [
        BullModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ url: config.REDIS_URL, prefix: config.QUEUE_PREFIX }),
        }),
        ...queues,
      ],
      providers: [
        {
          provide: QUEUE_LIST,
          inject: ALL_QUEUES.map((n) => getQueueToken(n)),
          useFactory: (...qs: Queue[]) => qs,
        },
        JobProducer,
      ],
      exports: [...queues, JobProducer],
    };
  }
}
