import type { INestApplicationContext } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { ALL_QUEUES, assertJobHandlers, type JobHandlerRef } from '@lockstep/jobs';

/**
 * The handlers Bull holds for each queue once the worker has booted: `@Process` methods and `queue.process`
 * calls alike end in the queue's handler table (one entry per job name; Bull refuses a second one).
 */
export function registeredJobHandlers(app: INestApplicationContext): JobHandlerRef[] {
  return ALL_QUEUES.flatMap((queueName) => {
    const handlers = (app.get<Queue>(getQueueToken(queueName)) as unknown as { handlers?: unknown }).handlers;
    // A Bull without this table cannot be checked: fail rather than pass an unchecked worker.
    if (typeof handlers !== 'object' || handlers === null)
      throw new Error(`queue "${queueName}" exposes no handler table`);
    return Object.keys(handlers).map((name) => ({ queue: queueName, name }));
  });
}

/** Start-up check: every job of the `JobMap` has exactly one handler here (throws naming each gap). */
export function checkJobHandlers(app: INestApplicationContext): void {
  assertJobHandlers(registeredJobHandlers(app));
}
