import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '@lockstep/config';
import { newId } from '@lockstep/contracts';
import { postgresConnector } from '@lockstep/connector-postgres';
import { QUEUES, SYNC_JOBS } from '@lockstep/jobs';
import { CredentialCipher, sideOwner } from '@lockstep/persistence';
import { EngineScheduler } from '../src/engine/engine.scheduler';
import { WorkerModule } from '../src/worker.module';

const PG_URL = process.env['TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('worker: syncs queue', () => {
  let worker: INestApplicationContext;
  let db: DataSource;
  let queue: Queue;
  let client: Client;
  const schema = `e2e_teardown_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    // Queues of its own: the workers of other test files running meanwhile would otherwise take these jobs.
    const QUEUE_PREFIX = `${process.env['QUEUE_PREFIX'] ?? 'lockstep-test'}-syncs-${randomBytes(3).toString('hex')}`;
    const config = loadConfig(process.env, {
      LOCKSTEP_MASTER_KEY: Buffer.alloc(32, 3).toString('base64'),
      ENGINE_ENABLED: false,
      QUEUE_PREFIX,
    });
    worker = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { logger: false });
    await worker.init();
    db = worker.get(DataSource);
    queue = worker.get<Queue>(getQueueToken(QUEUES.syncs));
    client = new Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(
      `CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.items (id serial PRIMARY KEY, name text)`,
    );
  });
  afterAll(async () => {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
    await worker.close();
  });

  async function syncRow(status: string, activating: boolean, deleted: boolean): Promise<string> {
    const accountId = newId('account');
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
    const syncId = newId('sync');
    await db.query(
      `INSERT INTO syncs (id, account_id, name, status, activating, deleted_at) VALUES ($1, $2, 'w', $3, $4, $5)`,
      [syncId, accountId, status, activating, deleted ? new Date() : null],
    );
    return syncId;
  }

  it('activate clears `activating` once the worker has the sync, and wakes the engine', async () => {
    const wake = jest.spyOn(worker.get(EngineScheduler), 'wake');
    try {
      const syncId = await syncRow('active', true, false);
      const result = await (await queue.add(SYNC_JOBS.activate, { syncId })).finished();
      expect(result).toEqual({ picked_up: true });
      expect((await db.query(`SELECT activating FROM syncs WHERE id = $1`, [syncId]))[0].activating).toBe(
        false,
      );
      expect(wake).toHaveBeenCalledTimes(1);
      // A started sync (not activating) wakes the engine too: it looks for syncs to run now, not at its next tick.
      const started = await syncRow('active', false, false);
      expect(await (await queue.add(SYNC_JOBS.activate, { syncId: started })).finished()).toEqual({
        picked_up: false,
      });
      expect(wake).toHaveBeenCalledTimes(2);
    } finally {
      wake.mockRestore();
    }
  });

  it("teardown undoes the sync's table setup in the app (a table another sync reads keeps its capture) and removes the deleted sync", async () => {
    const syncId = await syncRow('paused', false, true);
    // Set up as the engine does it: the sync's connection, with the sync as its write origin (its reader of the table).
    const connection = await postgresConnector.connect({ connectionString: PG_URL }, schema, {
      egress: { allowPrivate: true, allowLoopback: true },
      writeOrigin: syncId,
    });
    await connection.prepareTable('items', { changeCapture: true });
    await connection.close();
    // Another sync reads the table as well while this one is torn down: its capture stays.
    const other = await postgresConnector.connect({ connectionString: PG_URL }, schema, {
      egress: { allowPrivate: true, allowLoopback: true },
      writeOrigin: 'sync_other',
    });
    await other.prepareTable('items', { changeCapture: true });
    const triggers = async () =>
      Number(
        (
          await client.query(
            `SELECT count(*) AS n FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT t.tgisinternal`,
            [schema],
          )
        ).rows[0].n,
      );
    expect(await triggers()).toBeGreaterThan(0);

    const sealed = worker
      .get(CredentialCipher)
      .encrypt({ connectionString: PG_URL }, sideOwner(syncId, 'left'));
    await db.query(
      `INSERT INTO sync_sides (sync_id, side, connector, auth_method, base_id, credentials, auth_status) VALUES ($1, 'left', 'postgres', 'api_key', $2, $3, 'ok')`,
      [syncId, schema, sealed],
    );
    await db.query(
      `INSERT INTO sync_tables (id, sync_id, side, remote_id, name, prepared_at) VALUES ($1, $2, 'left', 'items', 'items', now())`,
      [newId('table'), syncId],
    );

    const result = await (await queue.add(SYNC_JOBS.teardown, { syncId })).finished();
    expect(result).toEqual({ unprepared: 1, deleted: true });
    expect(await triggers()).toBeGreaterThan(0);
    expect(
      (
        await client.query(
          `SELECT reader FROM lockstep.capture_readers WHERE table_schema = $1 AND table_name = 'items'`,
          [schema],
        )
      ).rows,
    ).toEqual([{ reader: 'lockstep:sync_other' }]);
    // The other sync goes too: now the table's setup is removed.
    await other.unprepareTable('items');
    await other.close();
    expect(await triggers()).toBe(0);
    expect(await db.query(`SELECT id FROM syncs WHERE id = $1`, [syncId])).toEqual([]);
    expect(await db.query(`SELECT side FROM sync_sides WHERE sync_id = $1`, [syncId])).toEqual([]);
  });

  it('teardown leaves a sync that is not deleted alone', async () => {
    const syncId = await syncRow('draft', false, false);
    expect(await (await queue.add(SYNC_JOBS.teardown, { syncId })).finished()).toEqual({
      unprepared: 0,
      deleted: false,
    });
    expect((await db.query(`SELECT id FROM syncs WHERE id = $1`, [syncId])).length).toBe(1);
  });
});
