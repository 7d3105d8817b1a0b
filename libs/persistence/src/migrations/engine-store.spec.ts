import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createDataSource } from '../data-source';
import { runMigrations } from '../migrate';

/** The test store (migrated by the jest global setup) and a scratch database for the down/up round trip. */
const STORE_URL = process.env['DATABASE_URL']!;

const id = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function seed(client: Client, accountId: string): Promise<string> {
  const syncId = id('sync');
  await client.query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'store writes')`, [
    syncId,
    accountId,
  ]);
  for (let index = 0; index < 3; index += 1) {
    const recordId = id('rec');
    await client.query(
      `INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id) VALUES ($1, $2, 0, gen_random_uuid(), $3)`,
      [recordId, syncId, String(index)],
    );
    await client.query(
      `INSERT INTO operations (id, sync_id, record_id, action, trigger) VALUES ($1, $2, $3, 'created', 'push')`,
      [id('op'), syncId, recordId],
    );
    await client.query(`INSERT INTO record_queue (sync_id, record_id, type) VALUES ($1, $2, 'push')`, [
      syncId,
      recordId,
    ]);
  }
  return syncId;
}

async function counts(
  client: Client,
  syncId: string,
): Promise<{ links: number; operations: number; queue: number }> {
  const [row] = (
    await client.query(
      `SELECT (SELECT count(*) FROM record_links WHERE sync_id = $1)::int AS links, (SELECT count(*) FROM operations WHERE sync_id = $1)::int AS operations,
              (SELECT count(*) FROM record_queue WHERE sync_id = $1)::int AS queue`,
      [syncId],
    )
  ).rows;
  return row;
}

describe('migrations EngineStoreWrites, EngineStoreValues and LinkChangeTimes: cheaper links and operations, pending change times', () => {
  it("removes a deleted sync's links and operations (and only its own), also when its account is deleted", async () => {
    await withClient(STORE_URL, async (client) => {
      const accountId = id('acct');
      await client.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
        accountId,
        `${accountId}@example.com`,
      ]);
      const first = await seed(client, accountId);
      const second = await seed(client, accountId);
      await client.query(`DELETE FROM syncs WHERE id = $1`, [first]);
      expect(await counts(client, first)).toEqual({ links: 0, operations: 0, queue: 0 });
      expect(await counts(client, second)).toEqual({ links: 3, operations: 3, queue: 3 });
      await client.query(`DELETE FROM accounts WHERE id = $1`, [accountId]);
      expect(await counts(client, second)).toEqual({ links: 0, operations: 0, queue: 0 });
    });
  });

  it("stores values as json, without foreign keys on sync_id or operations_remote, with record_links_unplaced and the links' change times; down restores all of it and up applies again", async () => {
    const name = `lockstep_migration_${randomBytes(4).toString('hex')}`;
    const admin = new URL(STORE_URL);
    admin.pathname = '/postgres';
    await withClient(admin.toString(), (client) => client.query(`CREATE DATABASE ${name}`));
    const url = new URL(STORE_URL);
    url.pathname = `/${name}`;
    const shape = () =>
      withClient(url.toString(), async (client) => {
        const keys = await client.query(
          `SELECT conname FROM pg_constraint WHERE conname IN ('record_links_sync_id_fkey', 'operations_sync_id_fkey') ORDER BY conname`,
        );
        const indexes = await client.query(
          `SELECT indexname FROM pg_indexes WHERE indexname IN ('operations_remote', 'record_links_unplaced') ORDER BY indexname`,
        );
        const triggers = await client.query(
          `SELECT tgname FROM pg_trigger WHERE tgname = 'syncs_delete_rows'`,
        );
        const changeTimes = await client.query(
          `SELECT column_name FROM information_schema.columns WHERE table_name = 'record_links' AND column_name LIKE '%_changed_at' ORDER BY column_name`,
        );
        const types = await client.query(
          `SELECT table_name || '.' || column_name AS name, data_type FROM information_schema.columns
           WHERE (table_name, column_name) IN (('record_links', 'left_shadow'), ('record_links', 'right_shadow'), ('operations', 'field_changes'), ('operations', 'details'))`,
        );
        return {
          keys: keys.rows.map((row) => row.conname),
          indexes: indexes.rows.map((row) => row.indexname),
          trigger: triggers.rowCount,
          types: [...new Set(types.rows.map((row) => row.data_type))],
          changeTimes: changeTimes.rows.map((row) => row.column_name),
        };
      });
    try {
      await runMigrations(url.toString());
      expect(await shape()).toEqual({
        keys: [],
        indexes: ['record_links_unplaced'],
        trigger: 1,
        types: ['json'],
        changeTimes: ['left_changed_at', 'right_changed_at'],
      });
      await withClient(url.toString(), async (client) => {
        await client.query(
          `INSERT INTO accounts (id, email, password_hash) VALUES ('acct_m', 'm@example.com', 'x')`,
        );
        await client.query(`INSERT INTO syncs (id, account_id, name) VALUES ('sync_m', 'acct_m', 'm')`);
        await client.query(
          `INSERT INTO record_links (id, sync_id, table_pair, service_id, left_shadow) VALUES ('rec_m', 'sync_m', 0, gen_random_uuid(), $1)`,
          [JSON.stringify({ b: 1, a: 'x' })],
        );
        await client.query(
          `INSERT INTO operations (id, sync_id, record_id, action, trigger) VALUES ('op_m', 'sync_m', 'rec_m', 'created', 'push')`,
        );
      });
      const dataSource = createDataSource(url.toString());
      await dataSource.initialize();
      try {
        // Back to before the two above (LinkChangeTimes and any later migration first).
        const applied = async () =>
          ((await dataSource.query(`SELECT name FROM migrations`)) as { name: string }[]).map(
            (row) => row.name,
          );
        while ((await applied()).includes('EngineStoreWrites1764400000000'))
          await dataSource.undoLastMigration({ transaction: 'all' });
      } finally {
        await dataSource.destroy();
      }
      expect(await shape()).toEqual({
        keys: ['operations_sync_id_fkey', 'record_links_sync_id_fkey'],
        indexes: ['operations_remote'],
        trigger: 0,
        types: ['jsonb'],
        changeTimes: [],
      });
      await runMigrations(url.toString());
      expect(await shape()).toEqual({
        keys: [],
        indexes: ['record_links_unplaced'],
        trigger: 1,
        types: ['json'],
        changeTimes: ['left_changed_at', 'right_changed_at'],
      });
      // The values came through both ways (the operation's default `field_changes` too).
      const [row] = await withClient(
        url.toString(),
        async (client) =>
          (
            await client.query(
              `SELECT l.left_shadow, o.field_changes FROM record_links l JOIN operations o ON o.record_id = l.id WHERE l.id = 'rec_m'`,
            )
          ).rows,
      );
      expect(row).toEqual({ left_shadow: { a: 'x', b: 1 }, field_changes: [] });
    } finally {
      await withClient(admin.toString(), (client) =>
        client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      );
    }
  });
});
