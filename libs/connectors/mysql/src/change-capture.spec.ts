/**
 * Change capture: the checkpoint format, hole bookkeeping, and the out-of-order commit case against the real
 * server (an AUTO_INCREMENT id handed out before a later one, but committed after it).
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_EGRESS_POLICY, type Change } from '@lockstep/connectors-core';
import type { Connection as DriverConnection } from 'mysql2/promise';
import { triggerDdl, triggerName } from './change-capture';
import { decodeCheckpoint, encodeCheckpoint, missingIds } from './change-feed';
import type { MysqlConnection } from './connection';
import { openMysqlConnection } from './declaration';
import { createTestDatabase, nativeClient, TEST_MYSQL_URL, type TestDatabase } from './test/server';

describe('checkpoints', () => {
  it('round-trip and refuse what this connector did not issue', () => {
    const checkpoint = { high: 41, holes: [[39, 1700000000000] as [number, number]] };
    expect(decodeCheckpoint(encodeCheckpoint(checkpoint))).toEqual(checkpoint);
    for (const bad of [
      '',
      '41',
      'mycl1.bm9wZQ',
      'mycl1.' + Buffer.from('{"h":"x","o":[]}').toString('base64url'),
    ]) {
      expect(() => decodeCheckpoint(bad)).toThrow(expect.objectContaining({ kind: 'invalid_data' }));
    }
  });

  it.each<[number, number, number[], number[]]>([
    [0, 5, [1, 2, 3, 4, 5], []],
    [0, 5, [1, 2, 4], [3, 5]],
    [10, 14, [], [11, 12, 13, 14]],
    [10, 14, [9, 12, 15], [11, 13, 14]],
  ])('missing ids in (%i, %i] given %j', (from, to, present, missing) => {
    expect(missingIds(from, to, present)).toEqual(missing);
  });

  it('keeps only the newest holes past the cap', () => {
    expect(missingIds(0, 10, [], 3)).toEqual([8, 9, 10]);
  });

  it('names triggers within 64 characters, distinct per table', () => {
    const long = 'a'.repeat(64);
    expect(triggerName('insert', long).length).toBeLessThanOrEqual(64);
    expect(triggerName('insert', `${long}x`)).not.toBe(triggerName('insert', `${long}y`));
    expect(triggerDdl('update', 'we`ird', 'id')).toContain('IF NOT (OLD.`id` <=> NEW.`id`)');
  });
});

describe('reading changes against the server', () => {
  let database: TestDatabase;
  let conn: MysqlConnection;
  let eager: MysqlConnection;
  const clients: DriverConnection[] = [];

  const client = async () => {
    const created = await nativeClient(database.name);
    clients.push(created);
    return created;
  };

  const readAll = async (connection: MysqlConnection, table: string, since: string) => {
    const changes: Change[] = [];
    let checkpoint = since;
    for (;;) {
      const batch = await connection.readChanges(table, checkpoint, { limit: 2 });
      changes.push(...batch.changes);
      checkpoint = batch.checkpoint;
      if (!batch.hasMore) return { changes, checkpoint };
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase('lockstep_cc');
    await database.admin.query('CREATE TABLE items (id INT PRIMARY KEY, title VARCHAR(40)) ENGINE=InnoDB');
    await database.admin.query('CREATE TABLE others (id INT PRIMARY KEY) ENGINE=InnoDB');
    const context = { egress: DEFAULT_EGRESS_POLICY };
    conn = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, context);
    // A hold window of zero: a missing id is given up at the next read (to see holes expire).
    eager = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, context, {
      holdWindowMs: 0,
      retentionDays: 7,
    });
    await conn.prepareTable('items', { changeCapture: true });
    await conn.prepareTable('others', { changeCapture: true });
  });

  afterAll(async () => {
    for (const created of clients) await created.end();
    await conn?.close();
    await eager?.close();
    await database?.drop();
  });

  it('delivers a change whose transaction commits after a later one (no loss, no repeat)', async () => {
    const since = await conn.currentCheckpoint('items');
    const slow = await client();
    const fast = await client();
    await slow.query('START TRANSACTION');
    await slow.query("INSERT INTO items VALUES (1, 'slow')"); // log id n, not visible yet
    await fast.query("INSERT INTO items VALUES (2, 'fast')"); // log id n+1, committed
    await fast.query('INSERT INTO others VALUES (1)'); // another table's change in between

    const first = await readAll(conn, 'items', since);
    expect(first.changes.map((change) => change.remoteId)).toEqual(['2']);
    expect(decodeCheckpoint(first.checkpoint).holes).toHaveLength(1);

    await slow.query('COMMIT');
    const second = await readAll(conn, 'items', first.checkpoint);
    expect(second.changes).toEqual([
      expect.objectContaining({
        kind: 'upsert',
        remoteId: '1',
        own: false,
        record: expect.objectContaining({ values: { id: 1, title: 'slow' } }),
      }),
    ]);
    expect(decodeCheckpoint(second.checkpoint).holes).toEqual([]);

    const third = await readAll(conn, 'items', second.checkpoint);
    expect(third.changes).toEqual([]);
  });

  it('a checkpoint taken while a transaction is open still sees its change when it commits', async () => {
    const slow = await client();
    await slow.query('START TRANSACTION');
    await slow.query("INSERT INTO items VALUES (3, 'open at checkpoint')");
    await (await client()).query("INSERT INTO items VALUES (4, 'committed before checkpoint')");
    const since = await conn.currentCheckpoint('items');
    await slow.query('COMMIT');
    const { changes } = await readAll(conn, 'items', since);
    expect(changes.map((change) => change.remoteId)).toEqual(['3']);
  });

  it('keeps waiting for a rolled-back id within the hold window, and gives it up after it', async () => {
    const since = await conn.currentCheckpoint('items');
    const doomed = await client();
    await doomed.query('START TRANSACTION');
    await doomed.query("INSERT INTO items VALUES (5, 'rolled back')");
    await doomed.query('ROLLBACK'); // its log id stays unused forever
    await (await client()).query("INSERT INTO items VALUES (6, 'kept')");

    const patient = await readAll(conn, 'items', since);
    expect(patient.changes.map((change) => change.remoteId)).toEqual(['6']);
    expect(decodeCheckpoint(patient.checkpoint).holes).toHaveLength(1);
    expect(
      decodeCheckpoint((await readAll(conn, 'items', patient.checkpoint)).checkpoint).holes,
    ).toHaveLength(1);

    const hasty = await readAll(eager, 'items', patient.checkpoint);
    expect(hasty.changes).toEqual([]);
    expect(decodeCheckpoint(hasty.checkpoint).holes).toEqual([]);
  });

  it('records a key change as a delete of the old key and an upsert of the new one; own writes of the only reader are not logged', async () => {
    const since = await conn.currentCheckpoint('items');
    await (await client()).query('UPDATE items SET id = 60 WHERE id = 6');
    const [created] = await conn.createRecords('items', [
      { serviceId: randomUUID(), values: { id: 7, title: 'own' } },
    ]);
    expect(created).toMatchObject({ ok: true, remoteId: '7' });
    const { changes } = await readAll(conn, 'items', since);
    expect(changes.map(({ kind, remoteId, own }) => ({ kind, remoteId, own }))).toEqual([
      { kind: 'delete', remoteId: '6', own: false },
      { kind: 'upsert', remoteId: '60', own: false },
    ]);
    // Not even in the log: nobody else reads the table.
    const [logged] = await database.admin.query(
      "SELECT COUNT(*) AS n FROM lockstep_change_log WHERE table_name = 'items' AND pk = '7'",
    );
    expect(logged).toEqual([{ n: '0' }]);
    const { changes: outsideOnly } = await conn.readChanges('items', since, {
      limit: 10,
      ignoreOwnWrites: true,
    });
    expect(outsideOnly.map((change) => change.remoteId)).toEqual(['6', '60']);
  });

  it("with a writeOrigin, only that connection's writes are its own: two syncs on one table see each other's", async () => {
    const context = { egress: DEFAULT_EGRESS_POLICY };
    const syncA = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, {
      ...context,
      writeOrigin: 'sync_a',
    });
    const syncB = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, {
      ...context,
      writeOrigin: 'sync_b',
    });
    try {
      const since = await syncA.currentCheckpoint('items');
      expect(
        await syncA.createRecords('items', [{ serviceId: randomUUID(), values: { id: 21, title: 'by a' } }]),
      ).toMatchObject([{ ok: true }]);
      expect(
        await syncB.createRecords('items', [{ serviceId: randomUUID(), values: { id: 22, title: 'by b' } }]),
      ).toMatchObject([{ ok: true }]);
      const seenBy = async (connection: MysqlConnection) =>
        (await connection.readChanges('items', since, { limit: 10, ignoreOwnWrites: true })).changes.map(
          ({ remoteId, own }) => ({ remoteId, own }),
        );
      expect(await seenBy(syncA)).toEqual([{ remoteId: '22', own: false }]);
      expect(await seenBy(syncB)).toEqual([{ remoteId: '21', own: false }]);
      const [logged] = await database.admin.query(
        "SELECT GROUP_CONCAT(origin ORDER BY pk) AS origins FROM lockstep_change_log WHERE pk IN ('21', '22')",
      );
      expect(logged).toEqual([{ origins: 'lockstep:sync_a,lockstep:sync_b' }]);
    } finally {
      await syncA.close();
      await syncB.close();
    }
  });

  it('purges change-log entries past the retention, without waiting on open transactions', async () => {
    const open = await client();
    await open.query('START TRANSACTION');
    await open.query('INSERT INTO others VALUES (99)'); // an uncommitted, fresh log row
    await database.admin.query(
      "INSERT INTO lockstep_change_log (table_name, op, pk, origin, changed_at) VALUES ('others', 'insert', '0', NULL, UTC_TIMESTAMP(6) - INTERVAL 8 DAY)",
    );
    const fresh = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, {
      egress: DEFAULT_EGRESS_POLICY,
    });
    try {
      await fresh.readChanges('others', await fresh.currentCheckpoint('others'), { limit: 10 });
    } finally {
      await fresh.close();
    }
    await open.query('COMMIT');
    const [old] = await database.admin.query("SELECT COUNT(*) AS n FROM lockstep_change_log WHERE pk = '0'");
    expect(old).toEqual([{ n: '0' }]);
  });

  it('readers: a table set up before readers existed logs own writes; a writer waits for a reader registering meanwhile', async () => {
    await database.admin.query('CREATE TABLE fresh (id INT PRIMARY KEY, title VARCHAR(40)) ENGINE=InnoDB');
    await database.admin.query('DROP TABLE lockstep_capture_readers');
    await conn.prepareTable('fresh', { changeCapture: true });
    const readersOf = async (table: string) =>
      (
        (
          await database.admin.query(
            'SELECT reader FROM lockstep_capture_readers WHERE table_name = ? ORDER BY reader',
            [table],
          )
        )[0] as { reader: string }[]
      ).map((row) => row.reader);
    // Created again: the tables that had triggers get the unknown reader.
    expect(await readersOf('items')).toEqual(['*']);
    expect(await readersOf('fresh')).toEqual(['', 'lockstep']);
    const since = {
      items: await conn.currentCheckpoint('items'),
      fresh: await conn.currentCheckpoint('fresh'),
    };
    await conn.createRecords('items', [
      { serviceId: randomUUID(), values: { id: 8, title: 'own, unknown readers' } },
    ]);
    await conn.createRecords('fresh', [
      { serviceId: randomUUID(), values: { id: 1, title: 'own, only reader' } },
    ]);
    const ids = async (table: 'items' | 'fresh') =>
      (await conn.readChanges(table, since[table], { limit: 10 })).changes.map((change) => change.remoteId);
    expect(await ids('items')).toEqual(['8']);
    expect(await ids('fresh')).toEqual([]);

    // A write transaction that checked the readers holds them until it commits: a second sync registering meanwhile
    // waits for it, so the write (not logged) has committed before the new reader starts reading.
    const writer = await client();
    await writer.query('START TRANSACTION');
    await writer.query(
      "SELECT reader FROM lockstep_capture_readers WHERE table_name = 'fresh' LOCK IN SHARE MODE",
    );
    const other = await openMysqlConnection({ connectionString: TEST_MYSQL_URL }, database.name, {
      egress: DEFAULT_EGRESS_POLICY,
      writeOrigin: 'sync_c',
    });
    try {
      let registered = false;
      const registering = other
        .prepareTable('fresh', { changeCapture: true })
        .then(() => (registered = true));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(registered).toBe(false);
      await writer.query('COMMIT');
      await registering;
      expect(await readersOf('fresh')).toEqual(['', 'lockstep', 'lockstep:sync_c']);
      // Now the connection's own writes are logged, for the other sync.
      const otherSince = await other.currentCheckpoint('fresh');
      await conn.createRecords('fresh', [
        { serviceId: randomUUID(), values: { id: 2, title: 'own, shared' } },
      ]);
      expect(
        (await other.readChanges('fresh', otherSince, { limit: 10, ignoreOwnWrites: true })).changes.map(
          (change) => [change.remoteId, change.own],
        ),
      ).toEqual([['2', false]]);
      // The other sync leaves; the connection's capture stays, and its own writes are not logged again.
      await other.unprepareTable('fresh');
      expect(await readersOf('fresh')).toEqual(['', 'lockstep']);
      const stayed = await conn.currentCheckpoint('fresh');
      await conn.createRecords('fresh', [{ serviceId: randomUUID(), values: { id: 3, title: 'own again' } }]);
      await (await client()).query("INSERT INTO fresh VALUES (4, 'outside')");
      expect(
        (await conn.readChanges('fresh', stayed, { limit: 10 })).changes.map((change) => change.remoteId),
      ).toEqual(['4']);
      // The last reader leaves: triggers and readers go.
      await conn.unprepareTable('fresh');
      expect(await readersOf('fresh')).toEqual([]);
      const [triggers] = await database.admin.query(
        "SELECT COUNT(*) AS n FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'fresh'",
      );
      expect(triggers).toEqual([{ n: '0' }]);
    } finally {
      await other.close();
    }
  });

  it('readers: a user granted only the table (not the readers) still writes, and its writes are logged', async () => {
    const user = `lockstep_r_${randomUUID().slice(0, 8)}`;
    const host = new URL(TEST_MYSQL_URL).hostname;
    await database.admin.query('CREATE USER ?@? IDENTIFIED BY ?', [user, host, 'pw-readers']);
    try {
      await database.admin.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${database.name}\`.items TO ?@?`,
        [user, host],
      );
      const url = new URL(TEST_MYSQL_URL);
      url.username = user;
      url.password = 'pw-readers';
      const limited = await openMysqlConnection({ connectionString: url.toString() }, database.name, {
        egress: DEFAULT_EGRESS_POLICY,
        writeOrigin: 'sync_r',
      });
      try {
        expect(
          await limited.createRecords('items', [
            { serviceId: randomUUID(), values: { id: 90, title: 'limited' } },
          ]),
        ).toMatchObject([{ ok: true }]);
      } finally {
        await limited.close();
      }
      const [logged] = await database.admin.query(
        "SELECT origin FROM lockstep_change_log WHERE table_name = 'items' AND pk = '90'",
      );
      expect(logged).toEqual([{ origin: 'lockstep:sync_r' }]);
    } finally {
      await database.admin.query('DROP USER ?@?', [user, host]);
    }
  });

  it('a table without change capture has no changes rather than an error', async () => {
    await database.admin.query('CREATE TABLE plain (id INT PRIMARY KEY)');
    const since = await conn.currentCheckpoint('plain');
    await database.admin.query('INSERT INTO plain VALUES (1)');
    expect(await conn.readChanges('plain', since, { limit: 10 })).toMatchObject({
      changes: [],
      hasMore: false,
    });
  });
});
