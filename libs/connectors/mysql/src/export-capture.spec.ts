/**
 * The live export's source change capture: checkpoint and hole bookkeeping (pure), then against the real
 * MariaDB server: install and token, every kind of change read exactly once across pages, out-of-order
 * commits and rollbacks, coexistence with the sync's capture, removal, tables that cannot be captured, the
 * setup lock, the short metadata-lock wait and a role without the TRIGGER privilege.
 */
import { randomBytes } from 'node:crypto';
import { exportCaptureOf, type LiveExportSourceCapture } from '@lockstep/connectors-core';
import { createPool, type Connection as DriverConnection, type Pool } from 'mysql2/promise';
import { triggerName } from './change-capture';
import { decodeCheckpoint, encodeCheckpoint } from './change-feed';
import { capHoles, gapRanges, splitHoles, subtractIds, type HoleRange } from './log-window';
import type { MysqlConnection } from './connection';
import { mysqlConnector } from './declaration';
import {
  EXPORT_LOG_TABLE,
  exportTriggerBody,
  exportTriggerDdl,
  exportTriggerName,
  installExportCapture,
} from './export-capture';
import { decodeExportCheckpoint, encodeExportCheckpoint, readExportChanges } from './export-feed';
import { derivedName } from './sql';
import { createTestDatabase, nativeClient, testUrl, type TestDatabase } from './test/server';

const egress = { allowPrivate: true, allowLoopback: true };

describe('export checkpoints and holes', () => {
  it("round-trip, and refuse the sync's checkpoints and anything else (and the sync refuses these)", () => {
    const checkpoint = {
      high: 90,
      holes: [
        [3, 3, 1700000000000],
        [40, 52, 1700000000500],
      ] as HoleRange[],
    };
    const text = encodeExportCheckpoint(checkpoint);
    expect(text.startsWith('myxl1.')).toBe(true);
    expect(decodeExportCheckpoint(text)).toEqual(checkpoint);
    const sync = encodeCheckpoint({ high: 90, holes: [[3, 1700000000000]] });
    const bad = (value: unknown) => 'myxl1.' + Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const refused of [
      sync,
      '',
      '90',
      'myxl1.bm9wZQ',
      bad({ h: 'x', r: [] }),
      bad({ h: 5, r: [[3, 9, 0]] }), // a hole above the high-water mark
      bad({ h: 9, r: [[5, 4, 0]] }), // a run that ends before it starts
      bad({
        h: 9,
        r: [
          [5, 6, 0],
          [6, 7, 0],
        ],
      }), // overlapping runs
      bad({ h: 9, r: [[5, 6]] }),
    ]) {
      expect(() => decodeExportCheckpoint(refused)).toThrow(
        expect.objectContaining({ kind: 'invalid_data' }),
      );
    }
    expect(() => decodeCheckpoint(text)).toThrow(expect.objectContaining({ kind: 'invalid_data' }));
  });

  it.each<[number, number, number[], [number, number][]]>([
    [0, 5, [1, 2, 3, 4, 5], []],
    [
      0,
      5,
      [1, 2, 4],
      [
        [3, 3],
        [5, 5],
      ],
    ],
    [10, 14, [], [[11, 14]]],
    [
      10,
      20,
      [9, 12, 13, 17, 21],
      [
        [11, 11],
        [14, 16],
        [18, 20],
      ],
    ],
  ])('runs of ids missing in (%i, %i] given %j', (from, to, present, gaps) => {
    expect(gapRanges(from, to, present)).toEqual(gaps);
  });

  it.each<[HoleRange[], number[], HoleRange[]]>([
    [[[5, 9, 1]], [], [[5, 9, 1]]],
    [[[5, 9, 1]], [5, 9], [[6, 8, 1]]],
    [
      [[5, 9, 1]],
      [7],
      [
        [5, 6, 1],
        [8, 9, 1],
      ],
    ],
    [
      [
        [5, 9, 1],
        [20, 22, 2],
      ],
      [1, 5, 6, 7, 8, 9, 21, 30],
      [
        [20, 20, 2],
        [22, 22, 2],
      ],
    ],
  ])('holes %j without the visible ids %j', (holes, present, rest) => {
    expect(subtractIds(holes, present)).toEqual(rest);
  });

  it('splits runs at the cutoff and keeps the newest ids within the caps', () => {
    expect(
      splitHoles(
        [
          [1, 3, 0],
          [5, 9, 1],
          [12, 12, 2],
        ],
        6,
      ),
    ).toEqual([
      [
        [1, 3, 0],
        [5, 6, 1],
      ],
      [
        [7, 9, 1],
        [12, 12, 2],
      ],
    ]);
    expect(
      capHoles(
        [
          [12, 12, 2],
          [1, 3, 0],
          [5, 9, 1],
        ],
        4,
        10,
      ),
    ).toEqual([
      [7, 9, 1],
      [12, 12, 2],
    ]);
    expect(
      capHoles(
        [
          [12, 12, 2],
          [1, 3, 0],
          [5, 9, 1],
        ],
        100,
        2,
      ),
    ).toEqual([
      [5, 9, 1],
      [12, 12, 2],
    ]);
    // One open transaction of a million ids is one run, not a million entries.
    expect(capHoles([[1, 1_000_000, 0]], 1_000_000, 1)).toEqual([[1, 1_000_000, 0]]);
  });

  it("names its triggers apart from the sync's, within 64 characters, with the installation label in the body", () => {
    const long = 'b'.repeat(64);
    expect(exportTriggerName('update', long).length).toBeLessThanOrEqual(64);
    expect(exportTriggerName('insert', 'items')).not.toBe(triggerName('insert', 'items'));
    expect(exportTriggerName('insert', 'items')).toMatch(/^lockstep_xai_items_[0-9a-f]{10}$/);
    expect(exportTriggerBody('update', 'we`ird', 'id', 'abcdef012345')).toBe(
      'lx_abcdef012345: BEGIN IF NOT (OLD.`id` <=> NEW.`id`) THEN ' +
        "INSERT INTO `lockstep_export_log` (table_name, pk, changed_at) VALUES ('we`ird', CAST(OLD.`id` AS CHAR), UTC_TIMESTAMP(6)); END IF; " +
        "INSERT INTO `lockstep_export_log` (table_name, pk, changed_at) VALUES ('we`ird', CAST(NEW.`id` AS CHAR), UTC_TIMESTAMP(6)); END lx_abcdef012345",
    );
    expect(exportTriggerDdl('delete', 'items', 'id', 'abcdef012345')).toContain(
      'AFTER DELETE ON `items` FOR EACH ROW lx_abcdef012345: BEGIN',
    );
  });
});

describe('export change capture against the server', () => {
  let db: TestDatabase;
  let connection: MysqlConnection;
  let capture: LiveExportSourceCapture;
  let pool: Pool;
  const clients: DriverConnection[] = [];

  const client = async () => {
    const created = await nativeClient(db.name);
    clients.push(created);
    return created;
  };

  const sql = async (statement: string, values: unknown[] = []) => {
    const [result] = await db.admin.query(statement, values);
    return result as Record<string, unknown>[];
  };

  const readAll = async (table: string, since: string, limit = 3) => {
    const ids: string[] = [];
    let checkpoint = since;
    let pages = 0;
    for (;;) {
      const page = await capture.readSourceChanges(table, checkpoint, { limit });
      pages += 1;
      expect(new Set(page.ids).size).toBe(page.ids.length);
      ids.push(...page.ids);
      checkpoint = page.checkpoint;
      if (!page.hasMore) return { ids, checkpoint, pages };
    }
  };

  const triggersOn = async (table: string) =>
    (
      await sql(
        'SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? ORDER BY TRIGGER_NAME',
        [db.name, table],
      )
    ).map((row) => String(row['name']));

  const created = async (name: string) =>
    String(
      (
        await sql(
          'SELECT CAST(CREATED AS CHAR) AS created FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME = ?',
          [db.name, name],
        )
      )[0]?.['created'],
    );

  const start = async (table: string) => {
    const started = await capture.startSourceCapture(table);
    if (!started) throw new Error(`no capture for ${table}`);
    return started;
  };

  beforeAll(async () => {
    db = await createTestDatabase('ls_my_xc');
    // A transaction a failed test left open fails the next DDL soon instead of blocking it for a day.
    await db.admin.query('SET SESSION lock_wait_timeout = 20');
    connection = (await mysqlConnector.connect({ connectionString: testUrl() }, db.name, {
      egress,
      poolSize: 3,
    })) as MysqlConnection;
    capture = exportCaptureOf(connection)!;
    pool = createPool({
      uri: testUrl({ database: db.name }),
      connectionLimit: 2,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
  });

  afterAll(async () => {
    for (const opened of clients) await opened.end().catch(() => undefined);
    await pool?.end();
    await connection?.close();
    await db?.drop();
  });

  it('is offered by the connection', () => {
    expect(capture).not.toBeNull();
  });

  it('installs the log and three AFTER triggers once; the token is stable and changes before the checkpoint are not returned', async () => {
    await sql('CREATE TABLE items (id INT PRIMARY KEY, title VARCHAR(40)) ENGINE=InnoDB');
    await sql("INSERT INTO items VALUES (1, 'before')");
    const [first, second] = await Promise.all([start('items'), start('items')]);
    expect(first.token).toMatch(/^myxt1\.[0-9a-f]{32}$/);
    expect(first.checkpoint.startsWith('myxl1.')).toBe(true);
    expect(second.token).toBe(first.token);
    expect((await start('items')).token).toBe(first.token);
    expect(await capture.sourceCaptureToken('items')).toBe(first.token);
    expect(await triggersOn('items')).toEqual(
      ['insert', 'update', 'delete'].map((event) => exportTriggerName(event as 'insert', 'items')).sort(),
    );
    const timings = await sql(
      'SELECT DISTINCT ACTION_TIMING AS t FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?',
      [db.name, 'items'],
    );
    expect(timings).toEqual([{ t: 'AFTER' }]);
    const [log] = await sql(
      'SELECT ENGINE AS engine, TABLE_COMMENT AS comment FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
      [db.name, EXPORT_LOG_TABLE],
    );
    expect(log).toEqual({
      engine: 'InnoDB',
      comment: expect.stringContaining('Lockstep live export change capture'),
    });
    expect((await readAll('items', first.checkpoint)).ids).toEqual([]);
  });

  it('returns every insert, update, delete and both keys of a key change, each log entry exactly once', async () => {
    const { checkpoint } = await start('items');
    await sql("INSERT INTO items VALUES (2, 'a'), (3, 'b'), (4, 'c')");
    await sql("UPDATE items SET title = 'changed' WHERE id = 3");
    await sql('DELETE FROM items WHERE id = 4');
    await sql('UPDATE items SET id = 20 WHERE id = 2');
    // One entry a page: the exact sequence of what the triggers logged.
    const single = await readAll('items', checkpoint, 1);
    expect(single.ids).toEqual(['2', '3', '4', '3', '4', '2', '20']);
    expect(single.pages).toBe(7);
    // One page: each id once.
    const whole = await capture.readSourceChanges('items', checkpoint, { limit: 100 });
    expect(whole).toMatchObject({ ids: ['2', '3', '4', '20'], hasMore: false });
    expect(whole.checkpoint).toBe(single.checkpoint);
    expect((await readAll('items', single.checkpoint)).ids).toEqual([]);
  });

  it('reads a 5,000-row insert once across small pages', async () => {
    await sql('CREATE TABLE bulk (id INT PRIMARY KEY, v INT) ENGINE=InnoDB');
    const { checkpoint } = await start('bulk');
    const values = Array.from({ length: 5000 }, (_, index) => `(${index + 1}, ${index})`).join(', ');
    await sql(`INSERT INTO bulk VALUES ${values}`);
    const { ids, pages, checkpoint: after } = await readAll('bulk', checkpoint, 700);
    expect(ids).toHaveLength(5000);
    expect(new Set(ids).size).toBe(5000);
    expect(ids[0]).toBe('1');
    expect(ids[4999]).toBe('5000');
    expect(pages).toBe(8);
    expect((await readAll('bulk', after)).ids).toEqual([]);
  });

  it('does not lose a transaction that wrote before the checkpoint and commits after it', async () => {
    const slow = await client();
    const fast = await client();
    let checkpoint: string;
    try {
      await slow.query('START TRANSACTION');
      await slow.query("INSERT INTO items VALUES (100, 'open at the checkpoint')");
      await fast.query("INSERT INTO items VALUES (101, 'committed before the checkpoint')");
      checkpoint = (await start('items')).checkpoint;
      expect(decodeExportCheckpoint(checkpoint).holes).toHaveLength(1);
      await slow.query('COMMIT');
    } finally {
      await slow.query('ROLLBACK');
    }
    const { ids, checkpoint: after } = await readAll('items', checkpoint);
    expect(ids).toEqual(['100']);
    expect(decodeExportCheckpoint(after).holes).toEqual([]);
  });

  it('does not lose it either when many ids were committed after its write and before the checkpoint', async () => {
    const slow = await client();
    let checkpoint: string;
    try {
      await slow.query('START TRANSACTION');
      await slow.query("INSERT INTO items VALUES (110, 'open, far below the checkpoint')");
      // 3,000 later log ids, committed: more than the sync's look-back of 1,000 ids below the newest.
      await (
        await client()
      ).query(
        `INSERT INTO bulk VALUES ${Array.from({ length: 3000 }, (_, index) => `(${50_001 + index}, 0)`).join(', ')}`,
      );
      checkpoint = (await start('items')).checkpoint;
      await slow.query('COMMIT');
    } finally {
      await slow.query('ROLLBACK');
    }
    expect((await readAll('items', checkpoint)).ids).toEqual(['110']);
  });

  it('keeps a big transaction still open as one run of holes and returns all of it once it commits', async () => {
    const { checkpoint } = await start('bulk');
    const slow = await client();
    let first: Awaited<ReturnType<typeof readAll>>;
    try {
      await slow.query('START TRANSACTION');
      await slow.query(
        `INSERT INTO bulk VALUES ${Array.from({ length: 5000 }, (_, index) => `(${10_001 + index}, 0)`).join(', ')}`,
      );
      await (await client()).query('INSERT INTO bulk VALUES (9999, 0)');
      first = await readAll('bulk', checkpoint, 1000);
      expect(first.ids).toEqual(['9999']);
      // The sync's checkpoints list holes id by id and keep 2,000: here the open transaction is one run.
      const holes = decodeExportCheckpoint(first.checkpoint).holes;
      expect(holes).toHaveLength(1);
      expect(holes[0]![1] - holes[0]![0] + 1).toBe(5000);
      await slow.query('COMMIT');
    } finally {
      await slow.query('ROLLBACK');
    }
    const second = await readAll('bulk', first.checkpoint, 1000);
    expect(second.ids).toHaveLength(5000);
    expect(new Set(second.ids)).toEqual(
      new Set(Array.from({ length: 5000 }, (_, index) => String(10_001 + index))),
    );
    expect(decodeExportCheckpoint(second.checkpoint).holes).toEqual([]);
  });

  it('returns nothing for a rolled-back transaction, holds its ids for the hold window and gives them up after it', async () => {
    const { checkpoint } = await start('items');
    // Ids rolled back recently (by earlier tests) are holes of a new checkpoint too, for the hold window.
    const earlier = decodeExportCheckpoint(checkpoint).holes.length;
    const doomed = await client();
    await doomed.query('START TRANSACTION');
    await doomed.query("INSERT INTO items VALUES (200, 'x'), (201, 'y')");
    await doomed.query('ROLLBACK');
    await (await client()).query("INSERT INTO items VALUES (202, 'kept')");
    const patient = await readAll('items', checkpoint);
    expect(patient.ids).toEqual(['202']);
    expect(decodeExportCheckpoint(patient.checkpoint).holes).toHaveLength(earlier + 1);
    const pooled = await pool.getConnection();
    try {
      const hasty = await readExportChanges(pooled, {
        database: db.name,
        table: 'items',
        since: patient.checkpoint,
        limit: 10,
        holdWindowMs: 0,
      });
      expect(hasty).toMatchObject({ ids: [], hasMore: false });
      expect(decodeExportCheckpoint(hasty.checkpoint).holes).toEqual([]);
    } finally {
      pooled.release();
    }
  });

  it("refuses the sync's checkpoints, and the sync refuses the export's", async () => {
    const { checkpoint } = await start('items');
    await expect(
      capture.readSourceChanges('items', await connection.currentCheckpoint('items'), { limit: 10 }),
    ).rejects.toMatchObject({ kind: 'invalid_data' });
    await expect(connection.readChanges('items', checkpoint, { limit: 10 })).rejects.toMatchObject({
      kind: 'invalid_data',
    });
  });

  it("coexists with the sync's change capture; removing either leaves the other working", async () => {
    await sql('CREATE TABLE shared (id INT PRIMARY KEY, v INT) ENGINE=InnoDB');
    await connection.prepareTable('shared', { changeCapture: true });
    const started = await start('shared');
    expect(await triggersOn('shared')).toHaveLength(6);
    const syncSince = await connection.currentCheckpoint('shared');
    await sql('INSERT INTO shared VALUES (1, 1)');
    expect(
      (await connection.readChanges('shared', syncSince, { limit: 10 })).changes.map(
        (change) => change.remoteId,
      ),
    ).toEqual(['1']);
    const afterInsert = await readAll('shared', started.checkpoint);
    expect(afterInsert.ids).toEqual(['1']);

    await connection.unprepareTable('shared');
    expect(await triggersOn('shared')).toEqual(
      ['insert', 'update', 'delete'].map((event) => exportTriggerName(event as 'insert', 'shared')).sort(),
    );
    expect(await capture.sourceCaptureToken('shared')).toBe(started.token);
    await sql('UPDATE shared SET v = 2 WHERE id = 1');
    expect((await readAll('shared', afterInsert.checkpoint)).ids).toEqual(['1']);

    await connection.prepareTable('shared', { changeCapture: true });
    await capture.stopSourceCapture('shared');
    expect(await triggersOn('shared')).toHaveLength(3);
    const again = await connection.currentCheckpoint('shared');
    await sql('INSERT INTO shared VALUES (2, 2)');
    expect(
      (await connection.readChanges('shared', again, { limit: 10 })).changes.map((change) => change.remoteId),
    ).toEqual(['2']);
    expect(await capture.sourceCaptureToken('shared')).toBeNull();
  });

  it("stops idempotently: triggers and the table's entries go, other tables' stay; a new start has a new token", async () => {
    await sql('CREATE TABLE gone (id INT PRIMARY KEY) ENGINE=InnoDB');
    const before = await start('gone');
    await sql('INSERT INTO gone VALUES (1), (2)');
    const count = async (table: string) =>
      Number(
        (await sql(`SELECT COUNT(*) AS n FROM ${EXPORT_LOG_TABLE} WHERE table_name = ?`, [table]))[0]!['n'],
      );
    expect(await count('gone')).toBe(2);
    const others = await count('items');
    await capture.stopSourceCapture('gone');
    expect(await capture.sourceCaptureToken('gone')).toBeNull();
    expect(await triggersOn('gone')).toEqual([]);
    expect(await count('gone')).toBe(0);
    expect(await count('items')).toBe(others);
    await capture.stopSourceCapture('gone');
    await capture.stopSourceCapture('no_such_table');
    await sql('INSERT INTO gone VALUES (3)');
    expect(await count('gone')).toBe(0);
    const after = await start('gone');
    expect(after.token).not.toBe(before.token);
    await sql('INSERT INTO gone VALUES (4)');
    expect((await readAll('gone', after.checkpoint)).ids).toEqual(['4']);
  });

  it('changes the token when a trigger was dropped (re-creating only that one) or the log was emptied or re-created', async () => {
    const original = await start('items');
    const update = exportTriggerName('update', 'items');
    const insert = exportTriggerName('insert', 'items');
    const insertCreated = await created(insert);
    await sql(`DROP TRIGGER ${update}`);
    expect(await capture.sourceCaptureToken('items')).toBeNull();
    const repaired = await start('items');
    expect(repaired.token).not.toBe(original.token);
    expect(await created(insert)).toBe(insertCreated);

    // TRUNCATE keeps the table's CREATE_TIME and resets AUTO_INCREMENT below every checkpoint: the marker goes.
    await sql(`TRUNCATE TABLE ${EXPORT_LOG_TABLE}`);
    expect(await capture.sourceCaptureToken('items')).toBeNull();
    const refilled = await start('items');
    expect(refilled.token).not.toBe(repaired.token);
    expect(await created(insert)).toBe(insertCreated);

    await sql(`DROP TABLE ${EXPORT_LOG_TABLE}`);
    expect(await capture.sourceCaptureToken('items')).toBeNull();
    const recreated = await start('items');
    expect(recreated.token).not.toBe(refilled.token);
    await sql("INSERT INTO items VALUES (300, 'after re-creation')");
    expect((await readAll('items', recreated.checkpoint)).ids).toEqual(['300']);
  });

  it('re-creates a trigger that logs the wrong key (the key column changed)', async () => {
    await sql(
      'CREATE TABLE rekeyed (id INT NOT NULL, code VARCHAR(10) NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB',
    );
    const first = await start('rekeyed');
    await sql('ALTER TABLE rekeyed DROP PRIMARY KEY, ADD PRIMARY KEY (code)');
    expect(await capture.sourceCaptureToken('rekeyed')).toBeNull();
    const second = await start('rekeyed');
    expect(second.token).not.toBe(first.token);
    await sql("INSERT INTO rekeyed VALUES (1, 'k-1')");
    expect((await readAll('rekeyed', second.checkpoint)).ids).toEqual(['k-1']);
  });

  it.each<[string, string, string[]]>([
    ['INT', '(5), (-7)', ['5', '-7']],
    ['BIGINT UNSIGNED', "('18446744073709551615')", ['18446744073709551615']],
    ['VARCHAR(100)', "('ünï ✓ ''q'' \\\\'), ('Key')", ["ünï ✓ 'q' \\", 'Key']],
    ['VARCHAR(20) COLLATE utf8mb4_bin', "('A'), ('a')", ['A', 'a']],
    ['DECIMAL(10,2)', "('12.5'), ('-0.01')", ['12.50', '-0.01']],
    ['DATE', "('2024-02-29')", ['2024-02-29']],
    ['DATETIME(3)', "('2024-02-29 13:45:30.5')", ['2024-02-29 13:45:30.500']],
    ["ENUM('red','it''s')", "('it''s')", ["it's"]],
  ])('logs a %s key as the text the source reads give', async (type, values, expected) => {
    const table = `k_${randomBytes(3).toString('hex')}`;
    await sql(`CREATE TABLE ${table} (k ${type} NOT NULL PRIMARY KEY, v INT NULL) ENGINE=InnoDB`);
    const { checkpoint } = await start(table);
    await sql(`INSERT INTO ${table} (k) VALUES ${values}`);
    const { ids } = await readAll(table, checkpoint);
    expect(ids).toEqual(expected);
    const source = connection.liveExport;
    const salt = '0123456789abcdef0123';
    const hashed = await source.readSourceHashes(table, { fields: ['v'], salt, limit: 100 });
    expect(new Set(hashed.rows.map((row) => row.id))).toEqual(new Set(expected));
    expect(
      (await source.readSourceRowsById(table, ids, { fields: ['v'], salt })).map((row) => row.id).sort(),
    ).toEqual([...expected].sort());
  });

  it('logs a table keyed by its service id (lockstep_id) by that id', async () => {
    await sql('CREATE TABLE keyless_prepared (title VARCHAR(20)) ENGINE=InnoDB');
    await connection.prepareTable('keyless_prepared', { changeCapture: false });
    const { checkpoint } = await start('keyless_prepared');
    await sql("INSERT INTO keyless_prepared (title) VALUES ('x')");
    const [row] = await sql('SELECT lockstep_id AS id FROM keyless_prepared');
    expect((await readAll('keyless_prepared', checkpoint)).ids).toEqual([String(row!['id'])]);
  });

  it('gives no capture to views, keyless tables, keys whose text is not the remote id, cascading foreign keys and its own log', async () => {
    await sql('CREATE TABLE plain (title VARCHAR(20)) ENGINE=InnoDB');
    await sql('CREATE VIEW items_view AS SELECT id, title FROM items');
    await sql('CREATE TABLE stamped (at TIMESTAMP(3) NOT NULL PRIMARY KEY) ENGINE=InnoDB');
    await sql('CREATE TABLE floaty (f DOUBLE NOT NULL PRIMARY KEY) ENGINE=InnoDB');
    await sql('CREATE TABLE wide (k VARCHAR(1500) CHARACTER SET latin1 NOT NULL PRIMARY KEY) ENGINE=InnoDB');
    await sql('CREATE TABLE parent (id INT PRIMARY KEY) ENGINE=InnoDB');
    await sql(
      'CREATE TABLE child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE) ENGINE=InnoDB',
    );
    await sql(
      'CREATE TABLE strict_child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id)) ENGINE=InnoDB',
    );
    for (const table of ['plain', 'items_view', 'stamped', 'floaty', 'wide', 'child']) {
      expect(await capture.startSourceCapture(table)).toBeNull();
      expect(await capture.sourceCaptureToken(table)).toBeNull();
      expect(await triggersOn(table)).toEqual([]);
    }
    // The log itself is hidden like the sync's change log: not a table an export can map.
    await expect(capture.startSourceCapture(EXPORT_LOG_TABLE)).rejects.toMatchObject({ kind: 'not_found' });
    expect(await triggersOn(EXPORT_LOG_TABLE)).toEqual([]);
    // A foreign key without a cascade changes nothing behind the triggers' back.
    expect(await capture.startSourceCapture('strict_child')).not.toBeNull();
    await expect(capture.startSourceCapture('no_such_table')).rejects.toMatchObject({ kind: 'not_found' });
    expect(await capture.sourceCaptureToken('no_such_table')).toBeNull();
  });

  it('purges entries past the retention (the marker and fresh entries stay, the token too)', async () => {
    const { token, checkpoint } = await start('items');
    await sql(
      `INSERT INTO ${EXPORT_LOG_TABLE} (table_name, pk, changed_at) VALUES ('items', 'ancient', UTC_TIMESTAMP(6) - INTERVAL 8 DAY)`,
    );
    await sql("INSERT INTO items VALUES (400, 'fresh')");
    const fresh = (await mysqlConnector.connect({ connectionString: testUrl() }, db.name, {
      egress,
      poolSize: 1,
    })) as MysqlConnection;
    try {
      // The purge runs before the read: the old entry is gone before it could be returned.
      expect(
        (await exportCaptureOf(fresh)!.readSourceChanges('items', checkpoint, { limit: 100 })).ids,
      ).toEqual(['400']);
    } finally {
      await fresh.close();
    }
    expect(await sql(`SELECT pk FROM ${EXPORT_LOG_TABLE} WHERE pk IN ('ancient', '400')`)).toEqual([
      { pk: '400' },
    ]);
    expect(await capture.sourceCaptureToken('items')).toBe(token);
  });

  it('waits for the setup lock the sync uses', async () => {
    await sql('CREATE TABLE locked (id INT PRIMARY KEY) ENGINE=InnoDB');
    const holder = await client();
    const lock = derivedName('lockstep_setup', db.name);
    await holder.query('SELECT GET_LOCK(?, 5)', [lock]);
    let done = false;
    const installing = capture.startSourceCapture('locked').then((started) => {
      done = true;
      return started;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(done).toBe(false);
      expect(await triggersOn('locked')).toEqual([]);
    } finally {
      await holder.query('SELECT RELEASE_LOCK(?)', [lock]);
    }
    expect(await installing).not.toBeNull();
    expect(await triggersOn('locked')).toHaveLength(3);
  });

  it('gives up creating triggers while a transaction holds the table, instead of stalling it', async () => {
    await sql('CREATE TABLE busy (id INT PRIMARY KEY) ENGINE=InnoDB');
    const writer = await client();
    await writer.query('START TRANSACTION');
    await writer.query('INSERT INTO busy VALUES (1)');
    const pooled = await pool.getConnection();
    try {
      const began = Date.now();
      await expect(
        installExportCapture(
          pooled,
          db.name,
          'busy',
          { column: 'id', serviceId: false, integer: true },
          { lockWaitSeconds: 1 },
        ),
      ).rejects.toMatchObject({
        code: 'ER_LOCK_WAIT_TIMEOUT',
      });
      expect(Date.now() - began).toBeLessThan(5000);
      const [row] = await pooled.query(
        'SELECT @@SESSION.lock_wait_timeout = @@GLOBAL.lock_wait_timeout AS restored',
      );
      expect(row).toEqual([{ restored: 1 }]);
    } finally {
      pooled.release();
      await writer.query('COMMIT');
    }
    const { checkpoint } = await start('busy');
    await sql('INSERT INTO busy VALUES (2)');
    expect((await readAll('busy', checkpoint)).ids).toEqual(['2']);
  });

  it('reports a role without the TRIGGER privilege as a permission error', async () => {
    const user = `lsx_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    await sql('CREATE TABLE guarded (id INT PRIMARY KEY) ENGINE=InnoDB');
    await sql(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
    let limited: MysqlConnection | null = null;
    try {
      await sql(
        `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER ON \`${db.name}\`.* TO '${user}'@'%'`,
      );
      limited = (await mysqlConnector.connect({ connectionString: testUrl({ user, password }) }, db.name, {
        egress,
        poolSize: 1,
      })) as MysqlConnection;
      await expect(exportCaptureOf(limited)!.startSourceCapture('guarded')).rejects.toMatchObject({
        kind: 'permission',
        message: expect.stringContaining('TRIGGER'),
      });
      expect(await triggersOn('guarded')).toEqual([]);
    } finally {
      await limited?.close();
      await sql(`DROP USER '${user}'@'%'`);
    }
  });
});
