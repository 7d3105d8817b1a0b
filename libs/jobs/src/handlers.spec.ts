import {
  assertJobHandlers,
  type JobHandlerRef,
  jobHandlerProblems,
  JobHandlersError,
  queuedJobs,
} from './handlers';
import { LIVE_EXPORT_JOBS, MAINTENANCE_JOBS, QUEUES, SYNC_JOBS } from './queues';

const all: JobHandlerRef[] = [
  { queue: QUEUES.maintenance, name: MAINTENANCE_JOBS.purgeIdempotency },
  { queue: QUEUES.syncs, name: SYNC_JOBS.activate },
  { queue: QUEUES.syncs, name: SYNC_JOBS.teardown },
  { queue: QUEUES.liveExport, name: LIVE_EXPORT_JOBS.run },
  { queue: QUEUES.liveExport, name: LIVE_EXPORT_JOBS.tick },
  { queue: QUEUES.liveExport, name: LIVE_EXPORT_JOBS.releaseCaptures },
];
const without = (name: string) => all.filter((handler) => handler.name !== name);

describe('job handlers against the JobMap', () => {
  it('lists every job of every queue, each once', () => {
    expect(queuedJobs()).toEqual(expect.arrayContaining(all));
    expect(queuedJobs()).toHaveLength(all.length);
  });

  it('accepts exactly one handler per job, in any order', () => {
    expect(jobHandlerProblems([...all].reverse())).toEqual([]);
    expect(() => assertJobHandlers(all)).not.toThrow();
  });

  it.each([
    ['a missing handler', without(SYNC_JOBS.teardown), ['no handler for job "syncs/teardown"']],
    [
      'a duplicate handler',
      [...all, all[0]!],
      ['2 handlers for job "maintenance/purge-expired-idempotency-keys"'],
    ],
    [
      'an unknown job',
      [...all, { queue: QUEUES.syncs, name: 'resume' }],
      ['a handler for job "syncs/resume", which the JobMap does not declare'],
    ],
    [
      'a job on the wrong queue',
      [...without(LIVE_EXPORT_JOBS.tick), { queue: QUEUES.syncs, name: 'tick' }],
      [
        'no handler for job "live-export/tick"',
        'a handler for job "syncs/tick", which the JobMap does not declare',
      ],
    ],
    ['no handlers at all', [], queuedJobs().map((job) => `no handler for job "${job.queue}/${job.name}"`)],
  ])('reports %s', (_label, handlers, problems) => {
    expect(jobHandlerProblems(handlers)).toEqual(problems);
  });

  it('fails with a message naming every problem', () => {
    const handlers = [...without(LIVE_EXPORT_JOBS.run), all[1]!];
    expect(() => assertJobHandlers(handlers)).toThrow(JobHandlersError);
    expect(() => assertJobHandlers(handlers)).toThrow(
      'job handlers do not match the JobMap: no handler for job "live-export/run"; ' +
        '2 handlers for job "syncs/activate"',
    );
  });
});
