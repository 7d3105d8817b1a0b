import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { AppConfig } from '@lockstep/config';
import type { ConnectContext, Connection } from '@lockstep/connectors-core';
import { postgresConnector } from '@lockstep/connector-postgres';
import { registerConnectors } from '@lockstep/connectors-registry';
import type { CredentialCipher, SyncSideEntity } from '@lockstep/persistence';
import { ConnectorCoordinationProvider } from './connector-coordination';
import { SideSession } from './engine/side-session';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A connector that only records the context it was connected with. */
const contexts: ConnectContext[] = [];
registerConnectors([
  {
    ...postgresConnector,
    type: 'probe_shared',
    connect: async (_credentials: unknown, _base: unknown, context: ConnectContext) => {
      contexts.push(context);
      return { type: 'probe_shared', close: async () => undefined } as unknown as Connection;
    },
  },
]);

describe("the worker's connections share rate budgets through Redis", () => {
  const queuePrefix = `lockstep-test:${randomUUID()}`;
  const provider = new ConnectorCoordinationProvider({ REDIS_URL, QUEUE_PREFIX: queuePrefix } as AppConfig);
  const redis = new Redis(REDIS_URL);

  afterAll(async () => {
    const keys = await redis.keys(`${queuePrefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    provider.onApplicationShutdown();
    redis.disconnect();
  });

  it('keeps the budgets in Redis under the queue prefix', async () => {
    expect(await provider.shared.budget.take([{ key: 'probe:base', ratePerSecond: 1 }])).toBe(0);
    expect(await redis.exists(`${queuePrefix}:connectors:budget:probe:base`)).toBe(1);
    // Another process (another connection) sees the same bucket empty.
    const other = new ConnectorCoordinationProvider({ REDIS_URL, QUEUE_PREFIX: queuePrefix } as AppConfig);
    expect(await other.shared.budget.take([{ key: 'probe:base', ratePerSecond: 1 }])).toBeGreaterThan(0);
    other.onApplicationShutdown();
  });

  it("a sync side's connection gets them in its ConnectContext", async () => {
    const cipher = { decrypt: () => ({}) } as unknown as CredentialCipher;
    const side = {
      connector: 'probe_shared',
      credentials: Buffer.from('sealed'),
      baseId: 'base',
    } as SyncSideEntity;
    const session = new SideSession(
      'sync_1',
      'left',
      side,
      cipher,
      { allowPrivate: true, allowLoopback: true },
      provider.shared,
    );
    await session.use(async () => undefined);
    await session.close();
    expect(contexts.at(-1)).toMatchObject({ writeOrigin: 'sync_1', poolSize: 1 });
    expect(contexts.at(-1)!.shared).toBe(provider.shared);
  });
});
