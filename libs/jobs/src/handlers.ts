/**
 * The worker's handlers checked against the `JobMap` at start-up: every job name of every queue has exactly
 * one handler, and no handler waits for a name nothing queues. A job without a handler would sit in Redis
 * forever; a handler for a renamed job would never run.
 */
import { type JobName, type QueueName, QUEUES } from './queues';

/** Every job name per queue. Typed from `JobMap`: a name missing here or unknown to it does not compile. */
const EVERY_JOB: { [Q in QueueName]: { [N in JobName<Q>]: true } } = {
  maintenance: { 'purge-expired-idempotency-keys': true },
  syncs: { activate: true, teardown: true },
  'live-export': { run: true, tick: true, 'release-captures': true },
};

/** A handler the worker registered: the queue it consumes and the job name it handles. */
export interface JobHandlerRef {
  queue: string;
  name: string;
}

/** Every `queue/name` pair of the `JobMap`, in its order. */
export function queuedJobs(): JobHandlerRef[] {
  return Object.values(QUEUES).flatMap((queue) =>
    Object.keys(EVERY_JOB[queue]).map((name) => ({ queue, name })),
  );
}

/** What is wrong with `handlers` against the `JobMap`, one message per problem; empty when they match. */
export function jobHandlerProblems(handlers: readonly JobHandlerRef[]): string[] {
  const count = new Map<string, number>();
  for (const handler of handlers) {
    const key = `${handler.queue}/${handler.name}`;
    count.set(key, (count.get(key) ?? 0) + 1);
  }
  const expected = new Set(queuedJobs().map((job) => `${job.queue}/${job.name}`));
  const problems: string[] = [];
  for (const key of expected) if (!count.has(key)) problems.push(`no handler for job "${key}"`);
  for (const [key, times] of count) {
    if (!expected.has(key)) problems.push(`a handler for job "${key}", which the JobMap does not declare`);
    else if (times > 1) problems.push(`${times} handlers for job "${key}"`);
  }
  return problems;
}

export class JobHandlersError extends Error {
  override name = 'JobHandlersError';
}

/** Throws `JobHandlersError` naming every missing, duplicate or unknown handler. */
export function assertJobHandlers(handlers: readonly JobHandlerRef[]): void {
  const problems = jobHandlerProblems(handlers);
  if (problems.length > 0)
    throw new JobHandlersError(`job handlers do not match the JobMap: ${problems.join('; ')}`);
}
