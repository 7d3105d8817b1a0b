import type { INestApplication, Type } from '@nestjs/common';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { type AppConfig, loadConfig } from '@lockstep/config';
import { type Scope } from '@lockstep/contracts';
import { newId } from '@lockstep/domain';
import { createApp } from '../../src/app.factory';
import { AccountsService, type CreateAccountInput } from '../../src/accounts/accounts.service';
import { ApiKeysService } from '../../src/api-keys/api-keys.service';
import { ProbeModule } from './probe.module';

export const TEST_MASTER_KEY = Buffer.alloc(32, 7).toString('base64');

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  http: () => ReturnType<typeof request>;
  accounts: AccountsService;
  keys: ApiKeysService;
  /** A new account (unique email) and a key on it. */
  account(input?: Partial<CreateAccountInput>): Promise<{ id: string }>;
  key(accountId: string, scope: Scope, syncId?: string | null): Promise<string>;
  /** A bare draft sync row (both sides unconnected) for tests that only need a sync to exist. */
  bareSync(accountId: string): Promise<string>;
  close(): Promise<void>;
}

let counter = 0;

/** The real API (real PostgreSQL and Redis from the test environment) plus the test-only probe endpoints. */
export async function createTestApp(
  overrides: Partial<Record<keyof AppConfig, unknown>> = {},
  extraModules: Type[] = [ProbeModule],
): Promise<TestApp> {
  const config = loadConfig(process.env, {
    LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
    RATE_LIMIT_PER_MINUTE: 100000,
    PUBLIC_URL: 'http://lockstep.test',
    ...overrides,
  });
  const app = await createApp(config, extraModules);
  const accounts = app.get(AccountsService);
  const keys = app.get(ApiKeysService);
  return {
    app,
    config,
    http: () => request(app.getHttpServer()),
    accounts,
    keys,
    account: async (input = {}) => {
      counter += 1;
      return accounts.create({
        email: `owner-${process.pid}-${Date.now()}-${counter}@example.com`,
        password: 'correct horse battery',
        ...input,
      });
    },
    key: async (accountId, scope, syncId = null) =>
      (await keys.create(accountId, { name: `${scope} key`, scope, syncId })).secret,
    bareSync: async (accountId) => {
      const id = newId('sync');
      await app
        .get(DataSource)
        .query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'bare')`, [id, accountId]);
      for (const side of ['left', 'right']) {
        await app
          .get(DataSource)
          .query(
            `INSERT INTO sync_sides (sync_id, side, connector, auth_method) VALUES ($1, $2, 'postgres', 'api_key')`,
            [id, side],
          );
      }
      return id;
    },
    close: () => app.close(),
  };
}

export const bearer = (secret: string) => ({ Authorization: `Bearer ${secret}` });
