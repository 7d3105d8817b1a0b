/**
 * The live export source change capture against the real PostgreSQL server: install and token, every kind of
 * write read exactly once across pages, late commits and rollbacks, the key's text form, coexistence with the
 * sync's capture, removal, tables that cannot be captured, privileges and retention.
 */
import {
  exportCaptureOf,
  type ConnectorError,
  type LiveExportSourceCapture,
} from '@lockstep/connectors-core';
import { Client } from 'pg';
import { STATEMENT_TRIGGERS } from './change-capture';
import { decodeCheckpoint } from './change-feed';
import type { PostgresConnection } from './connection';
import { CopyInQuery } from '@lockstep/pg-copy';
import { postgresConnector } from './declaration';
import {
  CAPTURE_FUNCTION_BODY,
  CAPTURE_TRIGGERS,
  captureToken,
  evaluateCapture,
  infrastructureSql,
  triggerIsInstalled,
  type CaptureStateDoc,
  type TriggerRow,
} from './export-capture';
import { SESSION_SQL } from './config';
import { createTestDatabase, randomName, type TestDatabase } from './test/pg-test-db';

const egress = { allowPrivate: true, allowLoopback: true };
const SCHEMA = 'src';
const T = (table: string) => `${SCHEMA}.${table}`;

let db: TestDatabase;
let connection: PostgresConnection;
let capture: LiveExportSourceCapture;
const roles: string[] = [];
const connections: PostgresConnection[] = [];

async function connect(user?: string): Promise<PostgresConnection> {
  const opened = (await postgresConnector.connect(
    { connectionString: db.url(user ? { user } : {}) },
    SCHEMA,
    { egress, poolSize: 3 },
  )) as PostgresConnection;
  connections.push(opened);
  return opened;
}

beforeAll(async () => {
  db = await createTestDatabase('ls_pg_xc');
  await db.admin.query(`CREATE SCHEMA ${SCHEMA}`);
  connection = await connect();
  capture = exportCaptureOf(connection)!;
});

afterAll(async () => {
  for (const opened of connections) await opened.close().catch(() => undefined);
  const server = new Client({ connectionString: db.url().replace(/\/[^/?]*(\?.*)?$/, '/postgres') });
  await db.drop();
  if (roles.length > 0) {
    await server.connect();
    for (const role of roles) await server.query(`DROP ROLE IF EXISTS ${role}`);
    await server.end();
  }
});

interface ReadAll {
  pages: string[][];
  ids: string[];
  checkpoint: string;
}

/** Reads every page after `since` (a page with `hasMore` is followed at once). */
async function readAll(
  table: string,
  since: string,
  limit = 1000,
  reader: LiveExportSourceCapture = capture,
): Promise<ReadAll> {
  const pages: string[][] = [];
  let checkpoint = since;
  for (;;) {
    const page = await reader.readSourceChanges(table, checkpoint, { limit });
    pages.push(page.ids);
    checkpoint = page.checkpoint;
    if (!page.hasMore) break;
  }
  return { pages: pages.filter((page) => page.length > 0), ids: pages.flat(), checkpoint };
}

async function logCount(table: string): Promise<number> {
  const { rows } = await db.admin.query(
    `SELECT count(*)::int AS n FROM lockstep.export_log WHERE table_schema = $1 AND table_name = $2`,
    [SCHEMA, table],
  );
  return rows[0].n as number;
}

async function triggers(table: string): Promise<Record<string, string>> {
  const { rows } = await db.admin.query(
    `SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`,
    [T(table)],
  );
  return Object.fromEntries(
    rows.map((row: { tgname: string; tgenabled: string }) => [row.tgname, row.tgenabled]),
  );
}

const sorted = (ids: string[]) => [...ids].sort((a, b) => Number(a) - Number(b));

describe('install and token', () => {
  it('installs four always-enabled statement triggers, returns a token and a checkpoint, and keeps the token until stop and start', async () => {
    await db.admin.query(`CREATE TABLE ${T('items')} (id integer PRIMARY KEY, name text, qty integer)`);
    expect(await capture.sourceCaptureToken('items')).toBeNull();
    const started = (await capture.startSourceCapture('items'))!;
    expect(started.token).toMatch(/^pgx1-[0-9a-f]{32}$/);
    expect(decodeCheckpoint(started.checkpoint).s).toMatch(/^\d+:\d+:/);
    expect(await triggers('items')).toEqual({
      lockstep_export_del: 'A',
      lockstep_export_ins: 'A',
      lockstep_export_trunc: 'A',
      lockstep_export_upd: 'A',
    });
    const oids = (
      await db.admin.query(
        `SELECT array_agg(oid ORDER BY tgname)::text AS oids FROM pg_trigger WHERE tgrelid = $1::regclass`,
        [T('items')],
      )
    ).rows[0].oids;

    const again = (await capture.startSourceCapture('items'))!;
    expect(again.token).toBe(started.token);
    expect(await capture.sourceCaptureToken('items')).toBe(started.token);
    // Not dropped and created again: the same trigger rows.
    expect(
      (
        await db.admin.query(
          `SELECT array_agg(oid ORDER BY tgname)::text AS oids FROM pg_trigger WHERE tgrelid = $1::regclass`,
          [T('items')],
        )
      ).rows[0].oids,
    ).toBe(oids);
    // Another connection object sees the same token.
    const other = await connect();
    expect(await other.liveExport.sourceCaptureToken('items')).toBe(started.token);

    await capture.stopSourceCapture('items');
    expect(await capture.sourceCaptureToken('items')).toBeNull();
    const restarted = (await capture.startSourceCapture('items'))!;
    expect(restarted.token).not.toBe(started.token);
    expect(await capture.sourceCaptureToken('items')).toBe(restarted.token);
  });

  it('gives concurrent starts one installation', async () => {
    await db.admin.query(`CREATE TABLE ${T('racy')} (id integer PRIMARY KEY)`);
    const other = await connect();
    const [first, second] = await Promise.all([
      capture.startSourceCapture('racy'),
      other.liveExport.startSourceCapture('racy'),
    ]);
    expect(first!.token).toBe(second!.token);
    expect(Object.keys(await triggers('racy'))).toHaveLength(4);
  });

  it('reports an incomplete capture as null and repairs it with a new token: a disabled, dropped or altered trigger', async () => {
    await db.admin.query(`CREATE TABLE ${T('tamper')} (id integer PRIMARY KEY, v text)`);
    const { token } = (await capture.startSourceCapture('tamper'))!;
    await db.admin.query(`ALTER TABLE ${T('tamper')} DISABLE TRIGGER lockstep_export_upd`);
    expect(await capture.sourceCaptureToken('tamper')).toBeNull();
    const repaired = (await capture.startSourceCapture('tamper'))!.token;
    expect(repaired).not.toBe(token);
    expect((await triggers('tamper'))['lockstep_export_upd']).toBe('A');

    await db.admin.query(`DROP TRIGGER lockstep_export_del ON ${T('tamper')}`);
    expect(await capture.sourceCaptureToken('tamper')).toBeNull();
    // A trigger of that name doing something else (only INSERT) is replaced.
    await db.admin.query(`DROP TRIGGER lockstep_export_ins ON ${T('tamper')}`);
    await db.admin.query(
      `CREATE TRIGGER lockstep_export_ins AFTER UPDATE ON ${T('tamper')} FOR EACH STATEMENT EXECUTE FUNCTION lockstep.capture_export('1')`,
    );
    expect(await capture.sourceCaptureToken('tamper')).toBeNull();
    const again = (await capture.startSourceCapture('tamper'))!;
    expect(again.token).not.toBe(repaired);
    await db.admin.query(`INSERT INTO ${T('tamper')} VALUES (1, 'a')`);
    expect((await readAll('tamper', again.checkpoint)).ids).toEqual(['1']);
  });

  it('changes the token on TRUNCATE and on a column change, which fire no row trigger', async () => {
    await db.admin.query(`CREATE TABLE ${T('wiped')} (id integer PRIMARY KEY, price numeric(10,2))`);
    await db.admin.query(`INSERT INTO ${T('wiped')} VALUES (1, 1.5), (2, 2.5)`);
    const { token, checkpoint } = (await capture.startSourceCapture('wiped'))!;
    await db.admin.query(`TRUNCATE ${T('wiped')}`);
    const afterTruncate = await capture.sourceCaptureToken('wiped');
    expect(afterTruncate).not.toBeNull();
    expect(afterTruncate).not.toBe(token);
    // A start hands out the token as it is now (no re-install) with a fresh checkpoint.
    expect((await capture.startSourceCapture('wiped'))!.token).toBe(afterTruncate);

    // A rolled-back TRUNCATE changes nothing.
    await db.admin.query('BEGIN');
    await db.admin.query(`TRUNCATE ${T('wiped')}`);
    await db.admin.query('ROLLBACK');
    expect(await capture.sourceCaptureToken('wiped')).toBe(afterTruncate);

    // A type change rewrites every value (1.50 -> 1.500) without firing a trigger.
    await db.admin.query(`INSERT INTO ${T('wiped')} VALUES (3, 3.5)`);
    await db.admin.query(`ALTER TABLE ${T('wiped')} ALTER COLUMN price TYPE numeric(10,3)`);
    const afterAlter = await capture.sourceCaptureToken('wiped');
    expect(afterAlter).not.toBeNull();
    expect(afterAlter).not.toBe(afterTruncate);
    expect((await readAll('wiped', checkpoint)).ids).toEqual(['3']);
  });
});

describe('reading changes', () => {
  it('reads inserts, updates, deletes and both keys of a key change, and nothing from before the checkpoint', async () => {
    await db.admin.query(`CREATE TABLE ${T('crud')} (id integer PRIMARY KEY, name text)`);
    await db.admin.query(`INSERT INTO ${T('crud')} VALUES (100, 'before')`);
    const { checkpoint } = (await capture.startSourceCapture('crud'))!;
    await db.admin.query(`UPDATE ${T('crud')} SET name = 'unchanged' WHERE false`);
    await db.admin.query(`INSERT INTO ${T('crud')} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')`);
    await db.admin.query(`UPDATE ${T('crud')} SET name = 'b2' WHERE id = 2`);
    await db.admin.query(`DELETE FROM ${T('crud')} WHERE id = 3`);
    await db.admin.query(`UPDATE ${T('crud')} SET id = 10 WHERE id = 1`);
    await db.admin.query(
      `INSERT INTO ${T('crud')} VALUES (4, 'd2'), (5, 'e') ON CONFLICT (id) DO UPDATE SET name = excluded.name`,
    );

    const whole = await readAll('crud', checkpoint);
    expect(whole.pages).toHaveLength(1);
    expect(sorted(whole.ids)).toEqual(['1', '2', '3', '4', '5', '10']);

    // One entry per page: exactly the log's entries, in (xid, id) order, each once; the empty UPDATE logged nothing.
    const expected = (
      await db.admin.query(
        `SELECT pk FROM lockstep.export_log WHERE table_schema = $1 AND table_name = 'crud' ORDER BY xid, id`,
        [SCHEMA],
      )
    ).rows.map((row: { pk: string }) => row.pk);
    expect(sorted(expected)).toEqual(['1', '1', '2', '2', '3', '3', '4', '4', '5', '10']);
    const single = await readAll('crud', checkpoint, 1);
    expect(single.pages.every((page) => page.length === 1)).toBe(true);
    expect(single.ids).toEqual(expected);

    // Nothing new after the last checkpoint; a later write is read from there.
    expect((await readAll('crud', whole.checkpoint)).ids).toEqual([]);
    await db.admin.query(`UPDATE ${T('crud')} SET name = 'x' WHERE id = 100`);
    expect((await readAll('crud', whole.checkpoint)).ids).toEqual(['100']);
  });

  it('reads a 5,000-row statement once across pages, with distinct ids in each page', async () => {
    await db.admin.query(`CREATE TABLE ${T('bulk')} (id bigint PRIMARY KEY, v integer)`);
    let { checkpoint } = (await capture.startSourceCapture('bulk'))!;
    const all = Array.from({ length: 5000 }, (_, index) => String(index + 1));
    for (const statement of [
      `INSERT INTO ${T('bulk')} SELECT g, g FROM generate_series(1, 5000) g`,
      `UPDATE ${T('bulk')} SET v = v + 1`,
      `DELETE FROM ${T('bulk')}`,
    ]) {
      await db.admin.query(statement);
      const read = await readAll('bulk', checkpoint, 700);
      expect(read.pages).toHaveLength(8);
      for (const page of read.pages) expect(new Set(page).size).toBe(page.length);
      expect(sorted(read.ids)).toEqual(all);
      checkpoint = read.checkpoint;
    }
    expect(await logCount('bulk')).toBe(15_000);
  });

  it('does not lose a transaction that wrote before a checkpoint and commits after it, and never returns a rolled-back one', async () => {
    await db.admin.query(`CREATE TABLE ${T('late')} (id integer PRIMARY KEY, name text)`);
    const { checkpoint } = (await capture.startSourceCapture('late'))!;
    const slow = new Client({ connectionString: db.url() });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      await slow.query(`INSERT INTO ${T('late')} VALUES (1, 'slow')`); // takes the smaller log id
      await db.admin.query(`INSERT INTO ${T('late')} VALUES (2, 'fast')`);
      await db.admin.query('BEGIN');
      await db.admin.query(`INSERT INTO ${T('late')} VALUES (3, 'rolled back')`);
      await db.admin.query('ROLLBACK');

      const first = await readAll('late', checkpoint, 1);
      expect(first.ids).toEqual(['2']);
      await slow.query('COMMIT');
      const second = await readAll('late', first.checkpoint, 1);
      expect(second.ids).toEqual(['1']);
      expect((await readAll('late', second.checkpoint)).ids).toEqual([]);
    } finally {
      await slow.end();
    }
  });

  it('logs the writes of a transaction that began before the install and writes after it', async () => {
    await db.admin.query(`CREATE TABLE ${T('straddle')} (id integer PRIMARY KEY)`);
    const early = new Client({ connectionString: db.url() });
    await early.connect();
    try {
      await early.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await early.query(`SELECT count(*) FROM ${T('straddle')}`); // snapshot and a lock taken before the triggers exist
      const { checkpoint } = (await capture.startSourceCapture('straddle'))!;
      await early.query(`INSERT INTO ${T('straddle')} VALUES (1)`);
      await early.query('COMMIT');
      expect((await readAll('straddle', checkpoint)).ids).toEqual(['1']);
    } finally {
      await early.end();
    }
  });

  it('logs rows changed by foreign key cascades and COPY', async () => {
    await db.admin.query(`CREATE TABLE ${T('owners')} (id integer PRIMARY KEY)`);
    await db.admin.query(
      `CREATE TABLE ${T('pets')} (id integer PRIMARY KEY, owner integer REFERENCES ${T('owners')} ON UPDATE CASCADE ON DELETE CASCADE)`,
    );
    await db.admin.query(`INSERT INTO ${T('owners')} VALUES (1), (2)`);
    await db.admin.query(`INSERT INTO ${T('pets')} VALUES (10, 1), (11, 1), (20, 2)`);
    let { checkpoint } = (await capture.startSourceCapture('pets'))!;
    await db.admin.query(`UPDATE ${T('owners')} SET id = 3 WHERE id = 1`);
    let read = await readAll('pets', checkpoint);
    expect(sorted(read.ids)).toEqual(['10', '11']);
    checkpoint = read.checkpoint;
    await db.admin.query(`DELETE FROM ${T('owners')} WHERE id = 2`);
    read = await readAll('pets', checkpoint);
    expect(read.ids).toEqual(['20']);
    checkpoint = read.checkpoint;

    const copy = db.admin.query(
      new CopyInQuery(`COPY ${T('pets')} (id, owner) FROM STDIN`, Buffer.from('30\t3\n31\t3\n')),
    );
    await new Promise<void>((resolve, reject) => {
      copy.on('error', reject);
      copy.on('end', () => resolve());
    });
    expect(sorted((await readAll('pets', checkpoint)).ids)).toEqual(['30', '31']);
  });

  it('logs the key exactly as the source reads give it, whatever the writer session says', async () => {
    await db.admin.query(`CREATE TABLE ${T('codes')} (code char(6) PRIMARY KEY, v text)`);
    await db.admin.query(`CREATE TABLE ${T('events')} (at timestamptz PRIMARY KEY, v text)`);
    await db.admin.query(`CREATE TABLE ${T('amounts')} (n numeric PRIMARY KEY, v text)`);
    const since = {
      codes: (await capture.startSourceCapture('codes'))!.checkpoint,
      events: (await capture.startSourceCapture('events'))!.checkpoint,
      amounts: (await capture.startSourceCapture('amounts'))!.checkpoint,
    };
    const writer = new Client({ connectionString: db.url() });
    await writer.connect();
    try {
      await writer.query(
        `SET TimeZone = 'Asia/Tokyo'; SET DateStyle = 'SQL, DMY'; SET extra_float_digits = 0`,
      );
      await writer.query(`INSERT INTO ${T('codes')} VALUES ('ab', 'x')`);
      await writer.query(`INSERT INTO ${T('events')} VALUES ('2024-03-01 10:00:00.5+00', 'x')`);
      await writer.query(`INSERT INTO ${T('amounts')} VALUES (1.0, 'x')`);
      // Equal keys, different text: the old text is a different remote id and must be read too.
      await writer.query(`UPDATE ${T('amounts')} SET n = 1.00`);
    } finally {
      await writer.end();
    }
    const options = { fields: ['v'], salt: '0123456789abcdef' };
    for (const table of ['codes', 'events', 'amounts'] as const) {
      const source = connection.liveExport;
      const hashes = (await source.readSourceHashes(table, { ...options, limit: 10 })).rows.map(
        (row) => row.id,
      );
      const changed = (await readAll(table, since[table])).ids;
      expect(changed).toEqual(expect.arrayContaining(hashes));
      expect((await source.readSourceRowsById(table, changed, options)).map((row) => row.id)).toEqual(hashes);
    }
    expect((await readAll('codes', since.codes)).ids).toEqual(['ab    ']);
    expect((await readAll('events', since.events)).ids).toEqual(['2024-03-01 10:00:00.5+00']);
    expect(sorted((await readAll('amounts', since.amounts)).ids)).toEqual(['1.0', '1.00']);
  });

  it('captures writes of a role with no rights on the log, and keeps logging after the key column is renamed', async () => {
    await db.admin.query(`CREATE TABLE ${T('shared')} (id integer PRIMARY KEY, v text)`);
    const { checkpoint } = (await capture.startSourceCapture('shared'))!;
    const role = randomName('ls_xc_writer');
    roles.push(role);
    await db.admin.query(`CREATE ROLE ${role} LOGIN`);
    await db.admin.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${role}`);
    await db.admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${T('shared')} TO ${role}`);
    const other = new Client({ connectionString: db.url({ user: role }) });
    await other.connect();
    try {
      await other.query(`INSERT INTO ${T('shared')} VALUES (1, 'from another app')`);
      await expect(other.query('SELECT count(*) FROM lockstep.export_log')).rejects.toThrow(
        /permission denied/,
      );
    } finally {
      await other.end();
    }
    const first = await readAll('shared', checkpoint);
    expect(first.ids).toEqual(['1']);
    await db.admin.query(`ALTER TABLE ${T('shared')} RENAME COLUMN id TO key`);
    await db.admin.query(`INSERT INTO ${T('shared')} VALUES (2, 'renamed')`);
    expect((await readAll('shared', first.checkpoint)).ids).toEqual(['2']);
  });

  it('refuses a checkpoint it did not issue', async () => {
    await expect(capture.readSourceChanges('items', 'not a checkpoint', { limit: 10 })).rejects.toMatchObject(
      { kind: 'invalid_data' },
    );
    await expect(
      capture.readSourceChanges('items', JSON.stringify({ v: 1, s: 'drop table' }), { limit: 10 }),
    ).rejects.toMatchObject({ kind: 'invalid_data' });
  });
});

describe('coexistence, removal and tables that cannot be captured', () => {
  it("coexists with the sync's change capture; removing either leaves the other alone", async () => {
    await db.admin.query(`CREATE TABLE ${T('both')} (id integer PRIMARY KEY, name text)`);
    await connection.prepareTable('both', { changeCapture: true });
    const syncSince = await connection.currentCheckpoint('both');
    const { token, checkpoint } = (await capture.startSourceCapture('both'))!;
    await db.admin.query(`INSERT INTO ${T('both')} VALUES (1, 'a')`);
    const syncBatch = await connection.readChanges('both', syncSince, { limit: 100 });
    expect(syncBatch.changes.map((change) => change.remoteId)).toEqual(['1']);
    expect((await readAll('both', checkpoint)).ids).toEqual(['1']);

    const entries = await logCount('both');
    await connection.unprepareTable('both');
    expect(Object.keys(await triggers('both')).filter((name) => name.startsWith('lockstep_capture'))).toEqual(
      [],
    );
    expect(await capture.sourceCaptureToken('both')).toBe(token);
    expect(await logCount('both')).toBe(entries);
    await db.admin.query(`INSERT INTO ${T('both')} VALUES (2, 'b')`);
    expect((await readAll('both', checkpoint)).ids).toEqual(['1', '2']);

    await connection.prepareTable('both', { changeCapture: true });
    await capture.stopSourceCapture('both');
    expect(Object.keys(await triggers('both'))).toEqual(
      STATEMENT_TRIGGERS.map((trigger) => trigger.name).sort(),
    );
    const since = await connection.currentCheckpoint('both');
    await db.admin.query(`INSERT INTO ${T('both')} VALUES (3, 'c')`);
    expect(
      (await connection.readChanges('both', since, { limit: 100 })).changes.map((change) => change.remoteId),
    ).toEqual(['3']);
  });

  it('stops idempotently: triggers and the table’s log entries go, other tables keep theirs, a missing table is fine', async () => {
    await db.admin.query(`CREATE TABLE ${T('gone')} (id integer PRIMARY KEY)`);
    await db.admin.query(`CREATE TABLE ${T('kept')} (id integer PRIMARY KEY)`);
    const kept = (await capture.startSourceCapture('kept'))!;
    await capture.startSourceCapture('gone');
    await db.admin.query(`INSERT INTO ${T('gone')} VALUES (1)`);
    await db.admin.query(`INSERT INTO ${T('kept')} VALUES (1)`);
    await db.admin.query(`TRUNCATE ${T('gone')}`);
    expect(await logCount('gone')).toBe(1);

    await capture.stopSourceCapture('gone');
    await capture.stopSourceCapture('gone');
    expect(await triggers('gone')).toEqual({});
    expect(await capture.sourceCaptureToken('gone')).toBeNull();
    expect(await logCount('gone')).toBe(0);
    expect(
      (
        await db.admin.query(
          `SELECT count(*)::int AS n FROM lockstep.export_resets WHERE table_name = 'gone'`,
        )
      ).rows[0].n,
    ).toBe(0);
    await db.admin.query(`INSERT INTO ${T('gone')} VALUES (2)`);
    expect(await logCount('gone')).toBe(0);
    expect(await logCount('kept')).toBe(1);
    expect(await capture.sourceCaptureToken('kept')).toBe(kept.token);

    await db.admin.query(`DROP TABLE ${T('gone')}`);
    await expect(capture.stopSourceCapture('gone')).resolves.toBeUndefined();
    await expect(capture.stopSourceCapture('never_existed')).resolves.toBeUndefined();
    expect(await capture.sourceCaptureToken('never_existed')).toBeNull();
    await expect(capture.startSourceCapture('never_existed')).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('gives null for a view, a table without a usable single-column key, partitioned and inherited tables', async () => {
    await db.admin.query(`CREATE TABLE ${T('base')} (id integer PRIMARY KEY, name text)`);
    await db.admin.query(`CREATE VIEW ${T('base_view')} AS SELECT id, name FROM ${T('base')}`);
    await db.admin.query(`CREATE TABLE ${T('no_key')} (id integer, name text)`);
    await db.admin.query(`CREATE TABLE ${T('pair')} (a integer, b integer, PRIMARY KEY (a, b))`);
    await db.admin.query(`CREATE TABLE ${T('blobs')} (b bytea PRIMARY KEY)`);
    await db.admin.query(`CREATE TABLE ${T('parted')} (id integer PRIMARY KEY) PARTITION BY RANGE (id)`);
    await db.admin.query(
      `CREATE TABLE ${T('parted_1')} PARTITION OF ${T('parted')} FOR VALUES FROM (0) TO (100)`,
    );
    await db.admin.query(`CREATE TABLE ${T('parent')} (id integer PRIMARY KEY)`);
    await db.admin.query(`CREATE TABLE ${T('child')} (id integer PRIMARY KEY) INHERITS (${T('parent')})`);
    for (const table of ['base_view', 'no_key', 'pair', 'blobs', 'parted', 'parted_1', 'parent', 'child']) {
      expect([table, await capture.startSourceCapture(table)]).toEqual([table, null]);
      expect(await capture.sourceCaptureToken(table)).toBeNull();
      await expect(capture.stopSourceCapture(table)).resolves.toBeUndefined();
    }
    const { rows } = await db.admin.query(
      `SELECT count(*)::int AS n FROM pg_trigger WHERE tgname LIKE 'lockstep_export%' AND tgrelid::regclass::text LIKE ANY ($1)`,
      [['src.base_view', 'src.no_key', 'src.pair', 'src.blobs', 'src.parted%', 'src.parent', 'src.child']],
    );
    expect(rows[0].n).toBe(0);
  });

  it('captures a table keyed by its lockstep_id service id (composite primary key, prepared for sync)', async () => {
    await db.admin.query(`CREATE TABLE ${T('pairs')} (a integer, b integer, note text, PRIMARY KEY (a, b))`);
    expect(await capture.startSourceCapture('pairs')).toBeNull();
    await connection.prepareTable('pairs', { changeCapture: false });
    const { checkpoint } = (await capture.startSourceCapture('pairs'))!;
    await db.admin.query(`INSERT INTO ${T('pairs')} (a, b, note) VALUES (1, 1, 'x')`);
    const { rows } = await db.admin.query(`SELECT lockstep_id::text AS id FROM ${T('pairs')}`);
    expect((await readAll('pairs', checkpoint)).ids).toEqual([rows[0].id]);
  });

  it('reports a role that may not create triggers as permission and leaves nothing behind', async () => {
    await db.admin.query(`CREATE TABLE ${T('guarded')} (id integer PRIMARY KEY)`);
    const role = randomName('ls_xc_limited');
    roles.push(role);
    await db.admin.query(`CREATE ROLE ${role} LOGIN`);
    await db.admin.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${role}`);
    await db.admin.query(`GRANT USAGE ON SCHEMA lockstep TO ${role}`);
    await db.admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${T('guarded')} TO ${role}`);
    const limited = await connect(role);
    const error = (await limited.liveExport.startSourceCapture('guarded').then(
      () => null,
      (caught: unknown) => caught,
    )) as ConnectorError;
    expect(error).toMatchObject({ kind: 'permission', appCode: '42501' });
    expect(error.message).toMatch(
      /^Could not start change capture on table "guarded": permission denied for table guarded/,
    );
    expect(await triggers('guarded')).toEqual({});
    // Nor may it stop one: it has no rights on the log (the role that installs a capture owns its log).
    await expect(limited.liveExport.stopSourceCapture('guarded')).rejects.toMatchObject({
      kind: 'permission',
    });

    // With the TRIGGER privilege but without owning the table, ENABLE ALWAYS (ALTER TABLE) is refused.
    await db.admin.query(`GRANT TRIGGER ON ${T('guarded')} TO ${role}`);
    await expect(limited.liveExport.startSourceCapture('guarded')).rejects.toMatchObject({
      kind: 'permission',
    });
    expect(await triggers('guarded')).toEqual({});
  });
});

describe('retention', () => {
  it('purges entries older than 7 days on the first read of a connection, then at most every 10 minutes', async () => {
    await db.admin.query(`CREATE TABLE ${T('aged')} (id integer PRIMARY KEY)`);
    const { checkpoint } = (await capture.startSourceCapture('aged'))!;
    await db.admin.query(`INSERT INTO ${T('aged')} SELECT generate_series(1, 4)`);
    await db.admin.query(
      `UPDATE lockstep.export_log SET logged_at = now() - interval '8 days' WHERE table_name = 'aged' AND pk IN ('1', '2')`,
    );
    const reader = (await connect()).liveExport;
    const read = await readAll('aged', checkpoint, 1000, reader);
    expect(sorted(read.ids)).toEqual(['3', '4']);
    await db.admin.query(
      `UPDATE lockstep.export_log SET logged_at = now() - interval '8 days' WHERE table_name = 'aged' AND pk = '3'`,
    );
    await reader.readSourceChanges('aged', read.checkpoint, { limit: 10 });
    expect(await logCount('aged')).toBe(2);
    expect(await reader.purgeExportLog()).toBe(1);
    expect(await logCount('aged')).toBe(1);
  });
});

describe('pure parts', () => {
  const functionOid = '900';
  const row = (name: string, overrides: Partial<TriggerRow> = {}): TriggerRow => {
    const trigger = CAPTURE_TRIGGERS.find((candidate) => candidate.name === name)!;
    return {
      name,
      oid: String(1000 + CAPTURE_TRIGGERS.indexOf(trigger)),
      function: functionOid,
      type: trigger.tgtype,
      enabled: 'A',
      nargs: trigger.keyed ? 1 : 0,
      args: trigger.keyed ? Buffer.from('1\0').toString('hex') : '',
      old: trigger.oldTable,
      new: trigger.newTable,
      columns: '',
      when: false,
      internal: false,
      ...overrides,
    };
  };
  const doc = (triggers: TriggerRow[], overrides: Partial<CaptureStateDoc> = {}): CaptureStateDoc => ({
    table: '500',
    relkind: 'r',
    inherits: false,
    keyAttnum: 1,
    log: '600',
    resets: '700',
    function: functionOid,
    triggers,
    columns: [[1, 'id', '23', -1]],
    ...overrides,
  });
  const complete = CAPTURE_TRIGGERS.map((trigger) => row(trigger.name));

  it.each<[string, Partial<TriggerRow>]>([
    ['disabled', { enabled: 'D' }],
    ['enabled for origin sessions only', { enabled: 'O' }],
    ['another function', { function: '901' }],
    ['a row trigger', { type: 5 }],
    ['another key column', { args: Buffer.from('2\0').toString('hex') }],
    ['UPDATE OF columns', { columns: '2' }],
    ['a WHEN condition', { when: true }],
    ['no transition table', { new: null }],
  ])('treats a trigger with %s as not installed', (_, overrides) => {
    expect(
      triggerIsInstalled(CAPTURE_TRIGGERS[0]!, row(CAPTURE_TRIGGERS[0]!.name, overrides), functionOid, 1),
    ).toBe(false);
  });

  it('is complete only with every trigger, the log, the resets table and a capturable table', () => {
    expect(evaluateCapture(doc(complete))).toEqual({
      capturable: true,
      repair: [],
      replace: [],
      complete: true,
    });
    expect(evaluateCapture(doc(complete.slice(1))).repair.map((trigger) => trigger.name)).toEqual([
      'lockstep_export_ins',
    ]);
    expect(
      evaluateCapture(doc([row('lockstep_export_ins', { enabled: 'D' }), ...complete.slice(1)])).replace,
    ).toEqual(['lockstep_export_ins']);
    expect(evaluateCapture(doc(complete, { log: null })).complete).toBe(false);
    expect(evaluateCapture(doc(complete, { resets: null })).complete).toBe(false);
    expect(evaluateCapture(doc(complete, { inherits: true })).capturable).toBe(false);
    expect(evaluateCapture(doc(complete, { relkind: 'p' })).capturable).toBe(false);
  });

  it('derives the token from the oids, the newest reset and the columns', () => {
    const token = captureToken(doc(complete), '0');
    expect(captureToken(doc(complete), '0')).toBe(token);
    expect(captureToken(doc(complete), '1')).not.toBe(token);
    expect(captureToken(doc(complete, { log: '601' }), '0')).not.toBe(token);
    expect(
      captureToken(doc([row('lockstep_export_ins', { oid: '2000' }), ...complete.slice(1)]), '0'),
    ).not.toBe(token);
    expect(captureToken(doc(complete, { columns: [[1, 'id', '20', -1]] }), '0')).not.toBe(token);
  });

  it('creates only what is missing, and the function when its body differs', () => {
    expect(
      infrastructureSql({ schema: true, log: true, resets: true, source: CAPTURE_FUNCTION_BODY }),
    ).toEqual([]);
    expect(infrastructureSql({ schema: true, log: true, resets: true, source: 'old body' })).toEqual([
      expect.stringMatching(/^CREATE OR REPLACE FUNCTION lockstep\.capture_export/),
    ]);
    expect(infrastructureSql({ schema: false, log: false, resets: false, source: null })).toHaveLength(
      1 + 3 + 2 + 1,
    );
  });

  it("runs the function with every session setting of the connector's pool", () => {
    for (const setting of SESSION_SQL.split(';')
      .map((part) => part.trim())
      .filter(Boolean))
      expect(CAPTURE_FUNCTION_BODY).toContain(setting);
  });
});
