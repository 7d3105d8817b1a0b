/**
 * The notification endpoint apps' webhooks call (`POST /hooks/nocodb/<channel>`): a call signed for its channel
 * wakes the channel's subscribers through Redis (as a worker subscribes) and passes only the keys of deleted
 * records on, as hints; an unsigned or wrongly signed call is refused in the spec's error shape and publishes
 * nothing. (The whole path with a real NocoDB: nocodb-sync.e2e-spec.ts.)
 */
import Redis from 'ioredis';
import { hookKey } from '@lockstep/config';
import {
  coordinationPrefix,
  hookSignalChannel,
  hookSignature,
  RedisSignals,
} from '@lockstep/connectors-http';
import { createTestApp, TEST_MASTER_KEY, type TestApp } from './support/test-app';

describe('POST /hooks/nocodb/:channel', () => {
  let t: TestApp;
  let redis: Redis;
  let signals: RedisSignals;
  const channel = 'a1b2c3d4e5f6.mtable123';
  const key = hookKey(TEST_MASTER_KEY, 'nocodb')!;

  beforeAll(async () => {
    t = await createTestApp();
    redis = new Redis(t.config.REDIS_URL);
    signals = new RedisSignals(redis, coordinationPrefix(t.config.QUEUE_PREFIX));
  });

  afterAll(async () => {
    signals.close();
    redis.disconnect();
    await t.close();
  });

  it('wakes the channel and passes the deleted keys on as hints', async () => {
    let woken = 0;
    const stop = await signals.subscribe(hookSignalChannel('nocodb', channel), () => (woken += 1));
    const before = (await signals.read(hookSignalChannel('nocodb', channel), 0, 100)).last;
    await t
      .http()
      .post(`/hooks/nocodb/${channel}`)
      .set('x-lockstep-signature', hookSignature(key, channel))
      .send({ type: 'records.after.delete', ids: ['12', '13'] })
      .expect(204);
    await t
      .http()
      .post(`/hooks/nocodb/${channel}`)
      .set('x-lockstep-signature', hookSignature(key, channel))
      .send({ type: 'records.after.update', ids: ['14'] })
      .expect(204);
    const deadline = Date.now() + 5000;
    while (woken < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await stop();
    expect(woken).toBe(2);
    const read = await signals.read(hookSignalChannel('nocodb', channel), before, 100);
    expect(read.hints.map((entry) => entry.hint)).toEqual(['12', '13']);
  });

  it.each([
    ['no signature', undefined, 403, 'forbidden'],
    ['a signature for another channel', 'other', 403, 'forbidden'],
  ])('refuses a call with %s', async (_what, signedFor, status, code) => {
    const request = t.http().post(`/hooks/nocodb/${channel}`);
    if (signedFor) request.set('x-lockstep-signature', hookSignature(key, signedFor));
    const response = await request.send({ type: 'records.after.delete', ids: ['1'] });
    expect(response.status).toBe(status);
    expect(response.body.error).toMatchObject({ code });
  });

  it('answers an impossible channel 404 in the spec error shape', async () => {
    const response = await t.http().post('/hooks/nocodb/..%2Fadmin').send({});
    expect(response.status).toBe(404);
    expect(response.body.error).toMatchObject({ code: 'not_found' });
  });
});
