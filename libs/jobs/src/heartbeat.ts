/**
 * Worker heartbeats, shared by the worker (writer), the API's `/healthz` (reader) and the worker image's
 * healthcheck. Every worker process adds itself to one Redis sorted set under the queue prefix, scored by the
 * time of its last beat; a worker counts as alive while its score is younger than `staleAfterMs`. One key for
 * all workers keeps the read a single round trip (no SCAN), and a stale entry stays until a live worker
 * prunes it, so `/healthz` can still say when the last worker was seen after all of them died.
 */
import type Redis from 'ioredis';

export const WORKER_HEARTBEAT = {
  /** How often a worker beats. */
  everyMs: 5_000,
  /** A worker silent this long is no longer counted (three missed beats: a busy event loop may delay one). */
  staleAfterMs: 15_000,
  /** The whole set expires when no worker has beaten for this long. */
  keyTtlMs: 24 * 3_600_000,
} as const;

export interface WorkerHeartbeats {
  /** Workers whose last beat is younger than `staleAfterMs`. */
  alive: number;
  /** The newest beat of any worker, alive or not; null when none is recorded. */
  lastBeatAt: Date | null;
}

export const workerHeartbeatKey = (queuePrefix: string): string => `${queuePrefix}:workers:heartbeat`;

/** Records one beat of `workerId` and prunes workers silent for longer than `staleAfterMs`. */
export async function recordWorkerHeartbeat(
  redis: Redis,
  queuePrefix: string,
  workerId: string,
  now = Date.now(),
): Promise<void> {
  const key = workerHeartbeatKey(queuePrefix);
  await redis
    .multi()
    .zadd(key, now, workerId)
    .zremrangebyscore(key, '-inf', `(${now - WORKER_HEARTBEAT.staleAfterMs}`)
    .pexpire(key, WORKER_HEARTBEAT.keyTtlMs)
    .exec();
}

/** A worker shutting down cleanly leaves the set at once instead of going stale. */
export async function removeWorkerHeartbeat(
  redis: Redis,
  queuePrefix: string,
  workerId: string,
): Promise<void> {
  await redis.zrem(workerHeartbeatKey(queuePrefix), workerId);
}

/** The workers alive now and the newest beat; `memberPrefix` counts only workers whose id starts with it. */
export async function readWorkerHeartbeats(
  redis: Redis,
  queuePrefix: string,
  now = Date.now(),
  memberPrefix = '',
): Promise<WorkerHeartbeats> {
  const entries = await redis.zrange(workerHeartbeatKey(queuePrefix), 0, -1, 'WITHSCORES');
  let alive = 0;
  let newest: number | null = null;
  for (let index = 0; index < entries.length; index += 2) {
    if (!entries[index]!.startsWith(memberPrefix)) continue;
    const at = Number(entries[index + 1]);
    if (at > now - WORKER_HEARTBEAT.staleAfterMs) alive += 1;
    newest = newest === null ? at : Math.max(newest, at);
  }
  return { alive, lastBeatAt: newest === null ? null : new Date(newest) };
}
