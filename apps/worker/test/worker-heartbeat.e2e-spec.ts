import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Redis from 'ioredis';
import { readWorkerHeartbeats, recordWorkerHeartbeat, workerHeartbeatKey } from '@lockstep/jobs';
import { inProcessWorker, waitFor } from './support/fixture';

const ROOT = join(__dirname, '..', '..', '..');

/**
 * A worker beats into Redis from start to shutdown, and the container healthcheck
 * (`dist/apps/worker/src/healthcheck.js`) passes exactly while a worker of this host beats.
 */
describe('worker heartbeat and the container healthcheck', () => {
  const prefix = `${process.env['QUEUE_PREFIX']}-beat-${randomBytes(3).toString('hex')}`;
  let redis: Redis;

  const healthcheck = () =>
    spawnSync(process.execPath, [join(ROOT, 'dist/apps/worker/src/healthcheck.js')], {
      encoding: 'utf8',
      env: {
        ...process.env,
        QUEUE_PREFIX: prefix,
        LOCKSTEP_MASTER_KEY: Buffer.alloc(32, 5).toString('base64'),
      },
    });

  beforeAll(() => {
    redis = new Redis(process.env['REDIS_URL']!);
  });
  afterAll(async () => {
    await redis.del(workerHeartbeatKey(prefix));
    redis.disconnect();
  });

  it('beats while it runs, leaves on shutdown, and the healthcheck follows', async () => {
    expect(healthcheck().status).toBe(1);
    // Another host's worker does not make this container healthy.
    await recordWorkerHeartbeat(redis, prefix, 'some-other-host:1:abcd');
    expect(healthcheck().status).toBe(1);

    const worker = await inProcessWorker(`acc_${randomBytes(6).toString('hex')}`, { QUEUE_PREFIX: prefix });
    try {
      await waitFor(
        'the worker beating',
        async () => (await readWorkerHeartbeats(redis, prefix)).alive === 2,
      );
      const passed = healthcheck();
      expect(passed.stdout).toMatch(/workers alive on .*: 1 \(last beat \d{4}-/);
      expect(passed.status).toBe(0);
    } finally {
      await worker.close();
    }
    expect((await readWorkerHeartbeats(redis, prefix)).alive).toBe(1);
    expect(healthcheck().status).toBe(1);
  });
});
