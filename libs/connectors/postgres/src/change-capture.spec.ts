/**
 * The sync's change capture (change-capture.ts) against the real PostgreSQL server: statement-level triggers
 * and what they log per statement, key changes, the key's text form (the remote id reads return), the
 * row-trigger fallback for partitioned tables, and the upgrade of tables prepared with the earlier row trigger.
 */
import { readAllChanges, readAllPages } from '@lockstep/connectors-core/testing';
import { Client } from 'pg';
import { loadTable } from './catalog';
import { LEGACY_TRIGGER_NAME, NOTIFY_CHANNEL, ROW_TRIGGER_NAME, STATEMENT_TRIGGERS } from './change-capture';
import type { PostgresConnection } from './connection';
import { postgresConnector } from './declaration';
import { createTestDatabase, type TestDatabase } from './test/pg-test-db';

const egress = { allowPrivate: true, allowLoopback: true };
const SCHEMA = 'cc';
const T = (table: string) => `${SCHEMA}.${table}`;
const STATEMENT_NAMES = STATEMENT_TRIGGERS.map((trigger) => trigger.name).sort();

let db: TestDatabase;
let connection: PostgresConnection;

beforeAll(async () => {
  db = await createTestDatabase('ls_pg_cc');
  await db.admin.query(`CREATE SCHEMA ${SCHEMA}`);
  connection = (await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, {
    egress,
    poolSize: 3,
  })) as PostgresConnection;
});

afterAll(async () => {
  await connection?.close().catch(() => undefined);
  await db?.drop();
});

/** The table's non-internal triggers: name -> [level, enabled]. */
async function triggers(table: string): Promise<Record<string, [string, string]>> {
  const { rows } = await db.admin.query(
    `SELECT tgname, CASE WHEN tgtype & 1 = 1 THEN 'row' ELSE 'statement' END AS level, tgenabled
     FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`,
    [T(table)],
  );
  return Object.fromEntries(
    rows.map((row: { tgname: string; level: string; tgenabled: string }) => [
      row.tgname,
      [row.level, row.tgenabled],
    ]),
  );
}

/** The readers registered for a table, sorted. */
async function readers(table: string): Promise<string[]> {
  const { rows } = await db.admin.query(
    `SELECT reader FROM lockstep.capture_readers WHERE table_schema = $1 AND table_name = $2 ORDER BY reader`,
    [SCHEMA, table],
  );
  return rows.map((row: { reader: string }) => row.reader);
}

/** A connection of another sync (its own write origin) on the same schema. */
async function otherReader(): Promise<PostgresConnection> {
  return (await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, {
    egress,
    poolSize: 1,
    writeOrigin: 'other-sync',
  })) as PostgresConnection;
}

/** The change-log rows of a table after log id `after`, in id order. */
async function logged(table: string, after = '0'): Promise<[string, string][]> {
  const { rows } = await db.admin.query(
    `SELECT op, pk FROM lockstep.change_log WHERE table_schema = $1 AND table_name = $2 AND id > $3::bigint ORDER BY id`,
    [SCHEMA, table, after],
  );
  return rows.map((row: { op: string; pk: string }) => [row.op, row.pk]);
}

async function lastLogId(): Promise<string> {
  const { rows } = await db.admin.query(`SELECT coalesce(max(id), 0)::text AS id FROM lockstep.change_log`);
  return rows[0].id as string;
}

const kinds = (changes: { kind: string; remoteId: string }[]) =>
  changes.map(({ kind, remoteId }) => [kind, remoteId]);

describe('statement-level capture', () => {
  it('installs three statement triggers with the default enablement and logs one row per changed row', async () => {
    await db.admin.query(`CREATE TABLE ${T('items')} (id integer PRIMARY KEY, name text)`);
    await connection.prepareTable('items', { changeCapture: true });
    expect(await triggers('items')).toEqual(
      Object.fromEntries(STATEMENT_NAMES.map((name) => [name, ['statement', 'O']])),
    );
    expect((await loadTable(db.admin, SCHEMA, 'items'))!.hasCaptureTrigger).toBe(true);

    const since = await connection.currentCheckpoint('items');
    const start = await lastLogId();
    await db.admin.query(`INSERT INTO ${T('items')} SELECT g, 'n' || g FROM generate_series(1, 5) g`);
    await db.admin.query(`UPDATE ${T('items')} SET name = 'changed' WHERE id IN (2, 3)`);
    await db.admin.query(`DELETE FROM ${T('items')} WHERE id = 4`);
    await db.admin.query(`UPDATE ${T('items')} SET name = 'none' WHERE false`);
    await db.admin.query(
      `INSERT INTO ${T('items')} VALUES (1, 'upserted'), (6, 'new') ON CONFLICT (id) DO UPDATE SET name = excluded.name`,
    );
    expect(await logged('items', start)).toEqual([
      ...[1, 2, 3, 4, 5].map((id) => ['upsert', String(id)]),
      ['upsert', '2'],
      ['upsert', '3'],
      ['delete', '4'],
      ['upsert', '1'], // the UPDATE part of the ON CONFLICT statement (its statement trigger fires first), then its INSERT part
      ['upsert', '6'],
    ]);
    const { changes } = await readAllChanges(connection, 'items', since);
    expect(kinds(changes)).toEqual([
      ['upsert', '5'],
      ['upsert', '2'],
      ['upsert', '3'],
      ['delete', '4'],
      ['upsert', '1'],
      ['upsert', '6'],
    ]);
    expect(changes.find((change) => change.remoteId === '1')?.record?.values['name']).toBe('upserted');
  });

  it('logs origin, xid and a timestamp as before (own writes marked, another session not); own writes only for another reader', async () => {
    const logRows = async (start: string) =>
      (
        await db.admin.query(
          `SELECT pk, origin, xid::text <> '' AS has_xid, committed_at IS NOT NULL AS has_at FROM lockstep.change_log WHERE id > $1::bigint ORDER BY id`,
          [start],
        )
      ).rows;
    // The connection is the table's only reader: its own write is not logged, another session's is.
    let start = await lastLogId();
    await connection.createRecords('items', [
      { serviceId: '6f1d3c2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f', values: { id: 10, name: 'own' } },
    ]);
    await db.admin.query(`INSERT INTO ${T('items')} VALUES (11, 'outside')`);
    expect(await logRows(start)).toEqual([{ pk: '11', origin: null, has_xid: true, has_at: true }]);
    // A second sync reads the table too: the connection's writes are logged for it, with their origin.
    const other = await otherReader();
    try {
      await other.prepareTable('items', { changeCapture: true });
      expect(await readers('items')).toEqual(['lockstep', 'lockstep:other-sync']);
      start = await lastLogId();
      await connection.createRecords('items', [
        { serviceId: '7f1d3c2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f', values: { id: 12, name: 'own, shared' } },
      ]);
      await other.createRecords('items', [
        { serviceId: '8f1d3c2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f', values: { id: 13, name: "the other's" } },
      ]);
      await db.admin.query(`INSERT INTO ${T('items')} VALUES (14, 'outside')`);
      expect(await logRows(start)).toEqual([
        { pk: '12', origin: 'lockstep', has_xid: true, has_at: true },
        { pk: '13', origin: 'lockstep:other-sync', has_xid: true, has_at: true },
        { pk: '14', origin: null, has_xid: true, has_at: true },
      ]);
      // The other sync leaves: the triggers stay for the connection, whose own writes are no longer logged.
      await other.unprepareTable('items');
      expect(await readers('items')).toEqual(['lockstep']);
      expect(Object.keys(await triggers('items'))).toEqual(STATEMENT_NAMES);
      start = await lastLogId();
      await connection.updateRecords('items', [{ remoteId: '12', values: { name: 'own again' } }]);
      await db.admin.query(`UPDATE ${T('items')} SET name = 'outside again' WHERE id = 14`);
      expect((await logRows(start)).map((row: { pk: string }) => row.pk)).toEqual(['14']);
    } finally {
      await other.close();
    }
  });

  it('a key change logs a delete of the old key and an upsert of the new one; keys moving between rows are not deleted', async () => {
    // Checked at the end of each statement, so one statement can move keys between rows.
    await db.admin.query(
      `CREATE TABLE ${T('moves')} (id integer PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE, name text)`,
    );
    await connection.prepareTable('moves', { changeCapture: true });
    await db.admin.query(`INSERT INTO ${T('moves')} SELECT g, 'n' || g FROM generate_series(1, 3) g`);

    let since = await connection.currentCheckpoint('moves');
    let start = await lastLogId();
    await db.admin.query(`UPDATE ${T('moves')} SET id = 20 WHERE id = 2`);
    expect(await logged('moves', start)).toEqual([
      ['delete', '2'],
      ['upsert', '20'],
    ]);
    let batch = await readAllChanges(connection, 'moves', since);
    expect(kinds(batch.changes)).toEqual([
      ['delete', '2'],
      ['upsert', '20'],
    ]);

    // A shift (1 -> 3 while 3 -> 5: key 3 is still there afterwards), then a swap of 3 and 5. Per-row pairs
    // would log "delete 3" after "upsert 3" in the shift and end with a delete of a key that exists.
    since = batch.checkpoint;
    start = await lastLogId();
    await db.admin.query(`UPDATE ${T('moves')} SET id = id + 2 WHERE id IN (1, 3)`);
    const shift = await lastLogId();
    await db.admin.query(`UPDATE ${T('moves')} SET id = CASE id WHEN 3 THEN 5 ELSE 3 END WHERE id IN (3, 5)`);
    const shiftLog = await logged('moves', start);
    expect(shiftLog[0]).toEqual(['delete', '1']);
    expect(shiftLog.slice(1, 3).sort()).toEqual([
      ['upsert', '3'],
      ['upsert', '5'],
    ]);
    expect((await logged('moves', shift)).sort()).toEqual([
      ['upsert', '3'],
      ['upsert', '5'],
    ]);
    batch = await readAllChanges(connection, 'moves', since);
    expect(kinds(batch.changes).sort()).toEqual([
      ['delete', '1'],
      ['upsert', '3'],
      ['upsert', '5'],
    ]);
    expect(
      Object.fromEntries(
        batch.changes
          .filter((change) => change.record)
          .map((change) => [change.remoteId, change.record!.values['name']]),
      ),
    ).toEqual({
      '3': 'n3',
      '5': 'n1',
    });
  });

  it('notifies once a statement changed rows, not for a statement that changed none', async () => {
    const listener = new Client({ connectionString: db.url() });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (message) => payloads.push(message.payload ?? ''));
    try {
      await listener.query(`LISTEN ${NOTIFY_CHANNEL}`);
      await db.admin.query(`UPDATE ${T('items')} SET name = 'x' WHERE false`);
      await db.admin.query(`DELETE FROM ${T('items')} WHERE id < 0`);
      await db.admin.query(`INSERT INTO ${T('items')} SELECT g, 'bulk' FROM generate_series(100, 199) g`);
      await listener.query('SELECT 1'); // notifications sent before this round trip have arrived
      expect(payloads.map((payload) => JSON.parse(payload))).toEqual([{ schema: SCHEMA, table: 'items' }]);
    } finally {
      await listener.end();
    }
  });

  it('captures writes of a statement that changes thousands of rows, each once', async () => {
    const since = await connection.currentCheckpoint('items');
    await db.admin.query(`INSERT INTO ${T('items')} SELECT g, 'big' FROM generate_series(1000, 5999) g`);
    await db.admin.query(`DELETE FROM ${T('items')} WHERE id BETWEEN 1000 AND 1999`);
    const { changes } = await readAllChanges(connection, 'items', since, { limit: 2000 });
    expect(changes).toHaveLength(5000);
    expect(changes.filter((change) => change.kind === 'delete')).toHaveLength(1000);
  });

  it('keeps capturing after the key column is renamed (the key travels by attribute number)', async () => {
    await db.admin.query(`CREATE TABLE ${T('renamed')} (id integer PRIMARY KEY, name text)`);
    await connection.prepareTable('renamed', { changeCapture: true });
    await db.admin.query(`ALTER TABLE ${T('renamed')} RENAME COLUMN id TO key`);
    const start = await lastLogId();
    await db.admin.query(`INSERT INTO ${T('renamed')} VALUES (7, 'after the rename')`);
    expect(await logged('renamed', start)).toEqual([['upsert', '7']]);
  });

  it('unprepareTable drops every capture trigger', async () => {
    await connection.unprepareTable('renamed');
    expect(await triggers('renamed')).toEqual({});
    expect((await loadTable(db.admin, SCHEMA, 'renamed'))!.hasCaptureTrigger).toBe(false);
  });
});

describe('the key text', () => {
  /** Every remote id a full read returns. */
  async function remoteIds(table: string): Promise<string[]> {
    return (await readAllPages(connection, table, 100)).flat().map((record) => record.remoteId);
  }

  it.each([
    ['char(n)', 'character(6)', ["'ab'", "'abcdef'"]],
    ['boolean', 'boolean', ['true', 'false']],
    ['inet', 'inet', ["'10.0.0.1'", "'10.0.0.0/8'"]],
  ])(
    'logs a %s key as the remote id reads return, so the change is read back with its record',
    async (_label, type, literals) => {
      const table = `key_${type.replace(/\W/g, '_')}`;
      await db.admin.query(`CREATE TABLE ${T(table)} (k ${type} PRIMARY KEY, note text)`);
      await connection.prepareTable(table, { changeCapture: true });
      const since = await connection.currentCheckpoint(table);
      await db.admin.query(
        `INSERT INTO ${T(table)} VALUES (${literals[0]}, 'first'), (${literals[1]}, 'second')`,
      );
      const idOf = Object.fromEntries(
        (await readAllPages(connection, table, 100))
          .flat()
          .map((record) => [record.values['note'], record.remoteId]),
      );
      const [edited, deleted] = [idOf['first'] as string, idOf['second'] as string];
      await db.admin.query(`UPDATE ${T(table)} SET note = 'edited' WHERE k = ${literals[0]}`);
      await db.admin.query(`DELETE FROM ${T(table)} WHERE k = ${literals[1]}`);

      const { changes } = await readAllChanges(connection, table, since);
      expect(changes).toEqual([
        expect.objectContaining({
          kind: 'upsert',
          remoteId: edited,
          record: expect.objectContaining({
            remoteId: edited,
            values: { k: expect.anything(), note: 'edited' },
          }),
        }),
        expect.objectContaining({ kind: 'delete', remoteId: deleted }),
      ]);
      expect((await connection.readByIds(table, [edited])).map((record) => record.remoteId)).toEqual([
        edited,
      ]);
    },
  );

  it('char(n): the padded text, as read (not the trimmed ::text)', async () => {
    const start = await lastLogId();
    await db.admin.query(`INSERT INTO ${T('key_character_6_')} VALUES ('xy', 'padded')`);
    expect(await logged('key_character_6_', start)).toEqual([['upsert', 'xy    ']]);
    expect(await remoteIds('key_character_6_')).toContain('xy    ');
  });

  it("logs a timestamptz key in the pool's settings whatever the writer's session uses", async () => {
    await db.admin.query(`CREATE TABLE ${T('stamped')} (at timestamptz PRIMARY KEY, note text)`);
    await connection.prepareTable('stamped', { changeCapture: true });
    const since = await connection.currentCheckpoint('stamped');
    const writer = new Client({ connectionString: db.url() });
    await writer.connect();
    try {
      await writer.query(`SET TimeZone = 'America/New_York'; SET DateStyle = 'SQL, DMY'`);
      await writer.query(`INSERT INTO ${T('stamped')} VALUES ('2024-02-29 13:45:30.5+02', 'x')`);
    } finally {
      await writer.end();
    }
    const [id] = await remoteIds('stamped');
    const { changes } = await readAllChanges(connection, 'stamped', since);
    expect(changes).toEqual([
      expect.objectContaining({
        kind: 'upsert',
        remoteId: id,
        record: expect.objectContaining({ remoteId: id }),
      }),
    ]);
  });
});

describe('partitioned tables and inheritance children', () => {
  it('a partitioned table gets the statement triggers: writes through it are captured, moves between partitions too', async () => {
    await db.admin.query(
      `CREATE TABLE ${T('parted')} (id integer PRIMARY KEY, name text) PARTITION BY RANGE (id)`,
    );
    await db.admin.query(
      `CREATE TABLE ${T('parted_low')} PARTITION OF ${T('parted')} FOR VALUES FROM (0) TO (100)`,
    );
    await db.admin.query(
      `CREATE TABLE ${T('parted_high')} PARTITION OF ${T('parted')} FOR VALUES FROM (100) TO (1000)`,
    );
    await connection.prepareTable('parted', { changeCapture: true });
    expect(await triggers('parted')).toEqual(
      Object.fromEntries(STATEMENT_NAMES.map((name) => [name, ['statement', 'O']])),
    );
    expect(await triggers('parted_low')).toEqual({});
    expect((await loadTable(db.admin, SCHEMA, 'parted'))!.hasCaptureTrigger).toBe(true);

    const since = await connection.currentCheckpoint('parted');
    await db.admin.query(`INSERT INTO ${T('parted')} VALUES (1, 'a'), (150, 'b'), (2, 'c')`);
    await db.admin.query(`UPDATE ${T('parted')} SET id = 151 WHERE id = 1`); // moves to the other partition
    await db.admin.query(`DELETE FROM ${T('parted')} WHERE id = 150`);
    await db.admin.query(`INSERT INTO ${T('parted_low')} VALUES (3, 'direct')`); // not captured: the full scan finds it
    const { changes } = await readAllChanges(connection, 'parted', since);
    expect(kinds(changes)).toEqual([
      ['upsert', '2'],
      ['delete', '1'],
      ['upsert', '151'],
      ['delete', '150'],
    ]);
  });

  it('an inheritance child gets one row trigger, which also captures writes made through its parent', async () => {
    await db.admin.query(`CREATE TABLE ${T('base')} (id integer PRIMARY KEY, name text)`);
    await db.admin.query(
      `CREATE TABLE ${T('derived')} (id integer PRIMARY KEY, name text) INHERITS (${T('base')})`,
    );
    await connection.prepareTable('derived', { changeCapture: true });
    expect(await triggers('derived')).toEqual({ [ROW_TRIGGER_NAME]: ['row', 'O'] });
    expect((await loadTable(db.admin, SCHEMA, 'derived'))!.hasCaptureTrigger).toBe(true);

    const since = await connection.currentCheckpoint('derived');
    await db.admin.query(`INSERT INTO ${T('derived')} VALUES (1, 'a'), (2, 'b')`);
    await db.admin.query(`UPDATE ${T('base')} SET id = 10 WHERE id = 1`);
    await db.admin.query(`DELETE FROM ${T('base')} WHERE id = 2`);
    const { changes } = await readAllChanges(connection, 'derived', since);
    expect(kinds(changes)).toEqual([
      ['delete', '1'],
      ['upsert', '10'],
      ['delete', '2'],
    ]);
    const start = await lastLogId();
    await db.admin.query(`UPDATE ${T('derived')} SET name = 'same key'`);
    expect(await logged('derived', start)).toEqual([['upsert', '10']]);
  });
});

describe('tables prepared by earlier versions', () => {
  const legacyFunction = async (): Promise<boolean> =>
    (
      await db.admin.query<{ present: boolean }>(
        `SELECT to_regprocedure('lockstep.capture_change()') IS NOT NULL AS present`,
      )
    ).rows[0]!.present;

  /** The row trigger and function earlier versions installed, as they installed them. */
  async function installLegacyCapture(table: string): Promise<void> {
    await db.admin.query(`CREATE SCHEMA IF NOT EXISTS lockstep`);
    await db.admin.query(`CREATE OR REPLACE FUNCTION lockstep.capture_change() RETURNS trigger
      LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
      DECLARE
        key_column text := TG_ARGV[0];
        origin text := nullif(current_setting('lockstep.origin', true), '');
        old_key text;
        new_key text;
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          EXECUTE format('SELECT ($1).%I::text', key_column) INTO old_key USING OLD;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
          EXECUTE format('SELECT ($1).%I::text', key_column) INTO new_key USING NEW;
        END IF;
        IF old_key IS NOT NULL AND (TG_OP = 'DELETE' OR old_key IS DISTINCT FROM new_key) THEN
          INSERT INTO lockstep.change_log (table_schema, table_name, op, pk, origin)
          VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, 'delete', old_key, origin);
        END IF;
        IF new_key IS NOT NULL THEN
          INSERT INTO lockstep.change_log (table_schema, table_name, op, pk, origin)
          VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, 'upsert', new_key, origin);
        END IF;
        PERFORM pg_notify('lockstep_changes', json_build_object('schema', TG_TABLE_SCHEMA, 'table', TG_TABLE_NAME)::text);
        RETURN NULL;
      END
      $fn$`);
    await db.admin.query(`CREATE TRIGGER lockstep_capture AFTER INSERT OR UPDATE OR DELETE ON ${T(table)}
      FOR EACH ROW EXECUTE FUNCTION lockstep.capture_change('id')`);
  }

  it('prepareTable replaces the old row trigger with the statement triggers; another old table keeps working meanwhile', async () => {
    await db.admin.query(`CREATE TABLE ${T('old_one')} (id integer PRIMARY KEY, name text)`);
    await db.admin.query(`CREATE TABLE ${T('old_two')} (id integer PRIMARY KEY, name text)`);
    await connection.prepareTable('old_one', { changeCapture: true }); // the log exists, as it did then
    await installLegacyCapture('old_one');
    await installLegacyCapture('old_two');
    for (const name of STATEMENT_NAMES)
      await db.admin.query(`DROP TRIGGER IF EXISTS ${name} ON ${T('old_one')}`);
    expect(Object.keys(await triggers('old_one'))).toEqual([LEGACY_TRIGGER_NAME]);
    expect((await loadTable(db.admin, SCHEMA, 'old_one'))!.hasCaptureTrigger).toBe(false);

    await connection.prepareTable('old_one', { changeCapture: true });
    expect(Object.keys(await triggers('old_one'))).toEqual(STATEMENT_NAMES);
    expect((await loadTable(db.admin, SCHEMA, 'old_one'))!.hasCaptureTrigger).toBe(true);

    const start = await lastLogId();
    await db.admin.query(`INSERT INTO ${T('old_one')} VALUES (1, 'a'), (2, 'b')`);
    await db.admin.query(`INSERT INTO ${T('old_two')} VALUES (1, 'still the old trigger')`);
    expect(await logged('old_one', start)).toEqual([
      ['upsert', '1'],
      ['upsert', '2'],
    ]);
    expect(await logged('old_two', start)).toEqual([['upsert', '1']]);
    expect(await legacyFunction()).toBe(true); // old_two still uses it

    await connection.unprepareTable('old_two');
    expect(await triggers('old_two')).toEqual({});
    expect(await legacyFunction()).toBe(false); // dropped with its last trigger
  });

  it('the old function stays while another table uses it, and is dropped when the last such table is prepared again', async () => {
    await db.admin.query(`CREATE TABLE ${T('old_three')} (id integer PRIMARY KEY, name text)`);
    await db.admin.query(`CREATE TABLE ${T('old_four')} (id integer PRIMARY KEY, name text)`);
    await connection.prepareTable('old_three', { changeCapture: true });
    await installLegacyCapture('old_three');
    await installLegacyCapture('old_four');
    await connection.unprepareTable('old_three');
    expect(await legacyFunction()).toBe(true);
    await connection.prepareTable('old_four', { changeCapture: true });
    expect(Object.keys(await triggers('old_four'))).toEqual(STATEMENT_NAMES);
    expect(await legacyFunction()).toBe(false);
  });
});

describe('readers', () => {
  it('the last reader to leave removes the triggers and the log; a table set up before readers existed keeps logging own writes', async () => {
    await db.admin.query(`CREATE TABLE ${T('shared')} (id integer PRIMARY KEY, name text)`);
    await db.admin.query(`CREATE TABLE ${T('earlier')} (id integer PRIMARY KEY, name text)`);
    await connection.prepareTable('earlier', { changeCapture: true });
    // Set up by a version without readers: the readers table does not exist yet.
    await db.admin.query(`DROP TABLE lockstep.capture_readers`);
    await connection.prepareTable('shared', { changeCapture: true });
    // Created again, with the unknown reader for every table that already had capture triggers.
    expect(await readers('earlier')).toContain('*');
    expect(await readers('shared')).toEqual(['lockstep']);
    const start = await lastLogId();
    await connection.createRecords('earlier', [
      { serviceId: '9f1d3c2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f', values: { id: 1, name: 'own' } },
    ]);
    await connection.createRecords('shared', [
      { serviceId: 'af1d3c2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f', values: { id: 1, name: 'own' } },
    ]);
    expect(await logged('earlier', start)).toEqual([['upsert', '1']]);
    expect(await logged('shared', start)).toEqual([]);

    const other = await otherReader();
    try {
      await other.prepareTable('shared', { changeCapture: true });
      await connection.unprepareTable('shared');
      // The other sync still reads it: triggers and log stay, only the connection's reader went.
      expect(await readers('shared')).toEqual(['lockstep:other-sync']);
      expect(Object.keys(await triggers('shared'))).toEqual(STATEMENT_NAMES);
      await db.admin.query(`INSERT INTO ${T('shared')} VALUES (2, 'outside')`);
      expect(await logged('shared', start)).toEqual([['upsert', '2']]);
      await other.unprepareTable('shared');
      expect(await readers('shared')).toEqual([]);
      expect(await triggers('shared')).toEqual({});
      expect(await logged('shared', '0')).toEqual([]);
    } finally {
      await other.close();
    }
    // The unknown reader does not keep a table's setup when its last known reader leaves (as before readers existed).
    await connection.unprepareTable('earlier');
    expect(await triggers('earlier')).toEqual({});
    expect(await readers('earlier')).toEqual([]);
  });
});
