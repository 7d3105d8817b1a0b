/**
 * The worker container's healthcheck (docker/compose.yaml): exits 0 when a worker process of this host (the
 * container) has beaten within the stale window, 1 otherwise. Worker ids start with the host name
 * (heartbeat/worker-heartbeat.ts), and a container's host name is its own.
 */
import Redis from 'ioredis';
import { hostname } from 'node:os';
import { loadConfig } from '@lockstep/config';
import { readWorkerHeartbeats } from '@lockstep/jobs';

async function main(): Promise<number> {
  const config = loadConfig();
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, connectTimeout: 3000 });
  redis.on('error', () => undefined);
  try {
    const { alive, lastBeatAt } = await readWorkerHeartbeats(
      redis,
      config.QUEUE_PREFIX,
      Date.now(),
      `${hostname()}:`,
    );
    process.stdout.write(
      `workers alive on ${hostname()}: ${alive} (last beat ${lastBeatAt?.toISOString() ?? 'never'})\n`,
    );
    return alive > 0 ? 0 : 1;
  } finally {
    redis.disconnect();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `worker healthcheck failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
