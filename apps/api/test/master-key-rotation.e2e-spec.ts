/**
 * Rotating the master key while the service runs: credentials sealed under key A stay readable by a service
 * configured with key B and previous key A; `master-key rotate` re-seals them under B; a worker with key B alone
 * then syncs. A credential sealed under a key that is not configured is a clear error, never a crash.
 *
 * The rotation re-seals every credential in the store, so this file runs on a service store (and queue prefix)
 * of its own: the other test files' rows, sealed under the shared test key, are not its business.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '@lockstep/config';
import { CredentialCipher, runMigrations } from '@lockstep/persistence';
import { cliWithEnv } from './support/cli';
import { liveSync, type LiveSync, type LiveSyncOptions, waitUntil } from './support/live-sync';
import { bearer, createTestApp, TEST_MASTER_KEY, type TestApp } from './support/test-app';

jest.setTimeout(240_000);

const KEY_A = TEST_MASTER_KEY;
const KEY_B = Buffer.alloc(32, 11).toString('base64');
const KEY_C = Buffer.alloc(32, 12).toString('base64');
const ROTATING = { LOCKSTEP_MASTER_KEY: KEY_B, LOCKSTEP_MASTER_KEY_PREVIOUS: KEY_A };
const cipherOf = (key: string) =>
  new CredentialCipher(loadConfig({ DATABASE_URL: 'postgres://unused/unused', LOCKSTEP_MASTER_KEY: key }));

const ADMIN_URL = process.env['TEST_DATABASE_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const STORE = `lockstep_rotation_${Date.now()}_${randomBytes(3).toString('hex')}`;

async function admin(sql: string): Promise<void> {
  const client = new Client({ connectionString: ADMIN_URL });
  await client.connect();
  await client.query(sql);
  await client.end();
}

/** The sealed credential columns of the sync's sides, as stored. */
async function sides(
  db: DataSource,
  syncId: string,
): Promise<{ side: string; credentials: Buffer; credential_fingerprint: string }[]> {
  return db.query(
    `SELECT side, credentials, credential_fingerprint FROM sync_sides WHERE sync_id = $1 ORDER BY side`,
    [syncId],
  );
}

describe('master key rotation', () => {
  let t: TestApp;
  let live: LiveSync;
  const options: LiveSyncOptions = {
    pgSetup: `CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL);
              INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace');`,
    mySetup: ['CREATE TABLE contacts (id INT PRIMARY KEY, full_name VARCHAR(60) NOT NULL)'],
    tables: [
      {
        left_table: 'people',
        right_table: 'contacts',
        direction: 'two_way',
        fields: [
          { left_field: 'id', right_field: 'id' },
          { left_field: 'name', right_field: 'full_name' },
        ],
      },
    ],
  };

  beforeAll(async () => {
    await admin(`CREATE DATABASE ${STORE}`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${STORE}`;
    process.env['DATABASE_URL'] = url.toString();
    process.env['QUEUE_PREFIX'] = `lockstep-rotation-${randomBytes(4).toString('hex')}`;
    await runMigrations(process.env['DATABASE_URL']);
    t = await createTestApp();
    live = await liveSync(t, options);
  });

  afterAll(async () => {
    await live?.close();
    await t?.close();
    await admin(`DROP DATABASE IF EXISTS ${STORE} WITH (FORCE)`);
  });

  it('reads under the previous key, re-seals every credential, then syncs with the new key alone', async () => {
    await live.stopWorker();
    const sealedUnderA = await sides(live.db, live.id);
    expect(
      sealedUnderA.every((side) => side.credentials.subarray(0, 9).equals(cipherOf(KEY_A).currentPrefix)),
    ).toBe(true);
    await t.bareSync(live.accountId);
    const cursorUnderA = (await t.http().get('/v1/sync/syncs?limit=1').set(bearer(live.keys.read))).body
      .next_cursor as string;
    expect(cursorUnderA).toEqual(expect.any(String));

    // Every process restarts with key B and previous key A: what A sealed and signed still works.
    const rotating = await createTestApp(ROTATING);
    try {
      const bases = await rotating
        .http()
        .get(`/v1/sync/syncs/${live.id}/sides/left/bases`)
        .set(bearer(live.keys.read));
      expect(bases.status).toBe(200);
      const next = await rotating
        .http()
        .get(`/v1/sync/syncs?limit=1&cursor=${encodeURIComponent(cursorUnderA)}`)
        .set(bearer(live.keys.read));
      expect(next.status).toBe(200);
      expect(next.body.data).toHaveLength(1);
    } finally {
      await rotating.close();
    }

    // Batches of one walk the keyset order across several batches.
    const run = cliWithEnv(ROTATING, 'master-key', 'rotate', '--batch', '1');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.json()).toEqual({ rotated: 2, changed_concurrently: 0, unreadable: [], remaining: 0 });
    const sealedUnderB = await sides(live.db, live.id);
    const b = cipherOf(KEY_B);
    expect(sealedUnderB.map((side) => side.credentials.subarray(0, 9).equals(b.currentPrefix))).toEqual([
      true,
      true,
    ]);
    expect(sealedUnderB.map((side) => side.credential_fingerprint)).toEqual([
      b.fingerprint('postgres', { connectionString: live.pg.url }),
      b.fingerprint('mysql', { connectionString: live.my.url }),
    ]);
    expect(cliWithEnv(ROTATING, 'master-key', 'rotate').json()).toEqual({
      rotated: 0,
      changed_concurrently: 0,
      unreadable: [],
      remaining: 0,
    });

    // The old key is dropped: a worker with key B alone carries the sync both ways.
    options.workerEnv = { LOCKSTEP_MASTER_KEY: KEY_B };
    live.startWorker();
    await live.pg.sql(`INSERT INTO people VALUES (3, 'Hedy')`);
    await live.my.sql(`UPDATE contacts SET full_name = 'Ada L.' WHERE id = 1`);
    await waitUntil(
      'the insert to reach MariaDB',
      async () =>
        ((await live.my.sql(`SELECT full_name FROM contacts WHERE id = 3`)) as { full_name: string }[])[0]
          ?.full_name === 'Hedy',
      60_000,
    );
    await waitUntil(
      'the update to reach PostgreSQL',
      async () => (await live.pg.sql(`SELECT name FROM people WHERE id = 1`))[0]?.['name'] === 'Ada L.',
      60_000,
    );
    const onlyB = await createTestApp({ LOCKSTEP_MASTER_KEY: KEY_B });
    try {
      expect(
        (await onlyB.http().get(`/v1/sync/syncs/${live.id}/sides/right/bases`).set(bearer(live.keys.read)))
          .status,
      ).toBe(200);
    } finally {
      await onlyB.close();
    }
  });

  it('refuses credentials sealed under a key that is not configured with a clear error, and keeps serving', async () => {
    const before = await sides(live.db, live.id);
    const run = cliWithEnv({ LOCKSTEP_MASTER_KEY: KEY_C }, 'master-key', 'rotate');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'still not sealed with LOCKSTEP_MASTER_KEY; keep LOCKSTEP_MASTER_KEY_PREVIOUS set',
    );
    expect(run.stderr).toContain(`"row": "${live.id} left"`);
    expect(run.stderr).toContain(
      'which is neither LOCKSTEP_MASTER_KEY nor listed in LOCKSTEP_MASTER_KEY_PREVIOUS',
    );
    expect(await sides(live.db, live.id)).toEqual(before);

    const wrongKey = await createTestApp({ LOCKSTEP_MASTER_KEY: KEY_C });
    try {
      const bases = await wrongKey
        .http()
        .get(`/v1/sync/syncs/${live.id}/sides/left/bases`)
        .set(bearer(live.keys.read));
      expect(bases.status).toBe(500);
      expect(bases.body.error).toMatchObject({ code: 'internal_error', request_id: expect.any(String) });
      expect(
        (await wrongKey.http().get(`/v1/sync/syncs/${live.id}`).set(bearer(live.keys.read))).status,
      ).toBe(200);
    } finally {
      await wrongKey.close();
    }
  });
});
