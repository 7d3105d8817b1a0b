/**
 * Queue contracts shared by the API (producer) and the worker (consumer). Payloads carry ids only; a
 * processor reloads state and returns early when it no longer fits, so a repeated job is harmless.
 */
export const QUEUES = {
  maintenance: 'maintenance',
  /** Lifecycle work on one sync (activation hand-over, teardown after delete). */
  syncs: 'syncs',
  /** Live export: runs (one job per run) and the schedule tick (a Bull repeatable job). */
  liveExport: 'live-export',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Job name -> payload, per queue. */
export interface JobMap {
  maintenance: {
    'purge-expired-idempotency-keys': Record<string, never>;
  };
  syncs: {
    /**
     * The sync was started or activated: a worker looks for syncs to run now (not at its next one-second
     * tick) and clears `activating`.
     */
    activate: { syncId: string };
    /** The sync was deleted: undo table setup in both apps, then remove its rows. */
    teardown: { syncId: string };
  };
  'live-export': {
    /** Carry out one run (`live_export_runs` row, state `queued`); job id `run:<runId>`. */
    run: { runId: string };
    /**
     * Find schedules whose slot is due and queue one run per slot (repeatable; safe to run on every worker).
     */
    tick: Record<string, never>;
    /**
     * The export was deleted: remove its change capture from the source database (released
     * `live_export_captures` rows).
     */
    'release-captures': { liveExportId: string };
  };
}

export type JobName<Q extends QueueName> = keyof JobMap[Q] & string;

export const MAINTENANCE_JOBS = {
  purgeIdempotency: 'purge-expired-idempotency-keys',
} as const satisfies Record<string, JobName<'maintenance'>>;

export const SYNC_JOBS = {
  activate: 'activate',
  teardown: 'teardown',
} as const satisfies Record<string, JobName<'syncs'>>;

export const LIVE_EXPORT_JOBS = {
  run: 'run',
  tick: 'tick',
  releaseCaptures: 'release-captures',
} as const satisfies Record<string, JobName<'live-export'>>;

/** Default options: bounded retries with exponential backoff; finished jobs do not pile up in Redis. */
export const DEFAULT_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: 1000,
  removeOnFail: 5000,
} as const;

/** Every queue, for metrics (queue depth) and the worker's registrations. */
export const ALL_QUEUES: readonly QueueName[] = Object.values(QUEUES);
