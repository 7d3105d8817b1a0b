import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '@lockstep/config';
import { type ConnectContext, type Connection, defineConnector } from '@lockstep/connectors-core';
import { postgresConnector } from '@lockstep/connector-postgres';
import type { CredentialCipher } from '@lockstep/persistence';
import type { ConnectorCatalog } from '../connectors/connector-catalog';
import type { RedisClient } from '../common/redis/redis.module';
import { SideConnections } from './side-connections';

describe("the API's connections share rate budgets with the workers through Redis", () => {
  const queuePrefix = `lockstep-test:${randomUUID()}`;
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

  afterAll(async () => {
    const keys = await redis.keys(`${queuePrefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('passes the Redis-backed budget in the ConnectContext', async () => {
    const contexts: ConnectContext[] = [];
    const probe = defineConnector({
      ...postgresConnector,
      type: 'probe_shared',
      connect: async (_credentials, _base, context) => {
        contexts.push(context);
        return { type: 'probe_shared', close: async () => undefined } as unknown as Connection;
      },
    });
    const config = {
      EGRESS_ALLOW_PRIVATE: true,
      EGRESS_ALLOW_LOOPBACK: false,
      QUEUE_PREFIX: queuePrefix,
      connectorOAuthClient: () => undefined,
    } as unknown as AppConfig;
    const sides = new SideConnections(
      config,
      {} as CredentialCipher,
      {} as ConnectorCatalog,
      {} as DataSource,
      { client: redis } as unknown as RedisClient,
    );
    await sides.with(probe, {}, null, async () => undefined);
    const context = contexts[0]!;
    expect(context.egress).toEqual({ allowPrivate: true, allowLoopback: false });
    expect(await context.shared!.budget.take([{ key: 'probe:base', ratePerSecond: 1 }])).toBe(0);
    expect(await redis.exists(`${queuePrefix}:connectors:budget:probe:base`)).toBe(1);
  });
});
