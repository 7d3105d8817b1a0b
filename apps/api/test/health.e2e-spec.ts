import { randomBytes } from 'node:crypto';
import { recordWorkerHeartbeat, removeWorkerHeartbeat, WORKER_HEARTBEAT } from '@lockstep/jobs';
import { RedisClient } from '../src/common/redis/redis.module';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * `/healthz` reports the workers' heartbeats (written to Redis by every worker process) without making a
 * missing worker a 503: the API serves while a worker restarts. The app runs under its own queue prefix, so
 * the workers of other test files are not counted.
 */
describe('GET /healthz: worker heartbeats', () => {
  const prefix = `lockstep-health-${randomBytes(4).toString('hex')}`;
  let t: TestApp;
  let redis: RedisClient['client'];

  beforeAll(async () => {
    t = await createTestApp({ QUEUE_PREFIX: prefix });
    redis = t.app.get(RedisClient).client;
  });
  afterAll(async () => {
    await redis.del(`${prefix}:workers:heartbeat`);
    await t.close();
  });

  it('is 200 degraded with the worker missing when no worker has ever beaten', async () => {
    const res = await t.http().get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'degraded',
      checks: {
        database: 'ok',
        redis: 'ok',
        worker: { status: 'missing', alive: 0, last_heartbeat_at: null },
      },
    });
  });

  it('is 503 unavailable with Redis unavailable and the worker unknown when Redis does not answer', async () => {
    const spy = jest.spyOn(redis, 'zrange').mockRejectedValue(new Error('connection refused'));
    try {
      const res = await t.http().get('/healthz');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        status: 'unavailable',
        checks: {
          database: 'ok',
          redis: 'unavailable',
          worker: { status: 'unknown', alive: 0, last_heartbeat_at: null },
        },
      });
    } finally {
      spy.mockRestore();
    }
  });

  it('counts the workers alive, shows the newest beat, and leaves out a silent worker and one that left', async () => {
    const now = Date.now();
    const stale = now - WORKER_HEARTBEAT.staleAfterMs - 1000;
    await recordWorkerHeartbeat(redis, prefix, 'host-a:1:dead', stale);
    await recordWorkerHeartbeat(redis, prefix, 'host-a:2:live', now - 2000);
    await recordWorkerHeartbeat(redis, prefix, 'host-b:3:live', now);
    const res = await t.http().get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      checks: {
        database: 'ok',
        redis: 'ok',
        worker: { status: 'ok', alive: 2, last_heartbeat_at: new Date(now).toISOString() },
      },
    });

    await removeWorkerHeartbeat(redis, prefix, 'host-a:2:live');
    const one = await t.http().get('/healthz');
    expect(one.body.checks.worker).toMatchObject({ status: 'ok', alive: 1 });
  });

  it('shows when the last worker was seen once every worker has gone silent', async () => {
    const silent = Date.now() - WORKER_HEARTBEAT.staleAfterMs - 1000;
    await redis.del(`${prefix}:workers:heartbeat`);
    await recordWorkerHeartbeat(redis, prefix, 'host-a:4:killed', silent);
    const gone = await t.http().get('/healthz');
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({
      status: 'degraded',
      checks: {
        database: 'ok',
        redis: 'ok',
        worker: { status: 'missing', alive: 0, last_heartbeat_at: new Date(silent).toISOString() },
      },
    });
  });
});
