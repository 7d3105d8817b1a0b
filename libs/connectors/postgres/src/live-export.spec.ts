/**
 * The live export destination layer against the real PostgreSQL server: provisioning, inspection, the
 * keyset read of ids and hashes, the one-transaction batch (inserts, upserts, deletes) and abort.
 */
import {
  EXPORT_HASH_COLUMN,
  EXPORT_ID_COLUMN,
  ExportAbortedError,
  exportSourceOf,
  exportStructureProblems,
  type ExportRow,
  type ExportSourceHash,
  type LiveExportSource,
} from '@lockstep/connectors-core';
import { postgresConnector } from './declaration';
import type { PostgresConnection } from './connection';
import { createTestDatabase, type TestDatabase } from './test/pg-test-db';

const egress = { allowPrivate: true, allowLoopback: true };
const SCHEMA = 'exports';

let db: TestDatabase;
let connection: PostgresConnection;

const COLUMNS = [
  { name: 'name', typeClass: 'text' as const, typeDetails: { max_length: 40 } },
  { name: 'qty', typeClass: 'integer' as const },
  { name: 'price', typeClass: 'decimal' as const, typeDetails: { precision: 10, scale: 2 } },
  { name: 'active', typeClass: 'boolean' as const },
  { name: 'at', typeClass: 'timestamp' as const },
  { name: 'doc', typeClass: 'json' as const },
];
const NAMES = COLUMNS.map((column) => column.name);

function row(id: number, name: string, extra: Partial<ExportRow['values']> = {}): ExportRow {
  return {
    id: String(id),
    hash: `h${id}-${name}`,
    values: {
      name,
      qty: id * 10,
      price: '12.50',
      active: id % 2 === 0,
      at: '2024-03-01T10:00:00Z',
      doc: { id, tags: ['a'] },
      ...extra,
    },
  };
}

async function tableRows(table: string): Promise<Record<string, unknown>[]> {
  return (
    await db.admin.query(
      `SELECT ${EXPORT_ID_COLUMN} AS id, ${EXPORT_HASH_COLUMN} AS hash, name, qty::text, price::text, active, at, doc FROM ${SCHEMA}.${table} ORDER BY ${EXPORT_ID_COLUMN} NULLS FIRST`,
    )
  ).rows;
}

beforeAll(async () => {
  db = await createTestDatabase('ls_pg_lx');
  await db.admin.query(`CREATE SCHEMA ${SCHEMA}`);
  connection = (await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, {
    egress,
    poolSize: 2,
  })) as PostgresConnection;
});

afterAll(async () => {
  await connection.close();
  await db.drop();
});

describe('PostgreSQL live export target', () => {
  it('provisions a table with the two hidden columns and typed columns, idempotently, adding but never dropping columns', async () => {
    const first = await connection.liveExport.provisionExportTable({ name: 'orders', columns: COLUMNS });
    expect(first.created).toBe(true);
    expect(first.table.idColumn).toBe('ok');
    expect(first.table.hashColumn).toBe('ok');
    expect(first.table.writable).toBe(true);
    const types = Object.fromEntries(first.table.columns.map((column) => [column.name, column.type]));
    expect(types).toEqual({
      name: 'text',
      qty: 'bigint',
      price: 'numeric(10,2)',
      active: 'boolean',
      at: 'timestamp with time zone',
      doc: 'jsonb',
    });
    const again = await connection.liveExport.provisionExportTable({ name: 'orders', columns: COLUMNS });
    expect(again).toMatchObject({ created: false, addedColumns: [] });
    const wider = await connection.liveExport.provisionExportTable({
      name: 'orders',
      columns: [COLUMNS[0]!, { name: 'note', typeClass: 'text' }],
    });
    expect(wider.addedColumns).toEqual(['note']);
    expect(wider.table.columns.map((column) => column.name)).toEqual([...NAMES, 'note']);
    await expect(
      connection.liveExport.provisionExportTable({
        name: 'bad',
        columns: [{ name: EXPORT_ID_COLUMN, typeClass: 'text' }],
      }),
    ).rejects.toMatchObject({
      kind: 'invalid_data',
    });
  });

  it('writes inserts, upserts and deletes in one transaction and never touches rows without an id', async () => {
    await connection.liveExport.provisionExportTable({ name: 'items', columns: COLUMNS });
    await db.admin.query(`INSERT INTO ${SCHEMA}.items (name) VALUES ('someone else''s row')`);
    const written = await connection.liveExport.writeExportBatch('items', {
      columns: NAMES,
      upserts: [],
      inserts: [row(1, 'one'), row(2, 'two'), row(3, 'three')],
      deletes: [],
    });
    expect(written).toEqual({ upserted: 3, deleted: 0 });
    // Row 2 changes, 4 is new, 3 goes; an "insert" of an id that exists (1) is replaced, not duplicated.
    const second = await connection.liveExport.writeExportBatch('items', {
      columns: NAMES,
      upserts: [row(2, 'two v2', { doc: null, active: null })],
      inserts: [row(4, 'four'), row(1, 'one v2')],
      deletes: ['3', 'missing'],
    });
    expect(second).toEqual({ upserted: 3, deleted: 1 });
    const rows = await tableRows('items');
    expect(rows.map((found) => [found['id'], found['name']])).toEqual([
      [null, "someone else's row"],
      ['1', 'one v2'],
      ['2', 'two v2'],
      ['4', 'four'],
    ]);
    expect(rows[2]).toMatchObject({ hash: 'h2-two v2', qty: '20', price: '12.50', active: null, doc: null });
    expect(rows[1]).toMatchObject({ qty: '10', active: false, doc: { id: 1, tags: ['a'] } });
    expect((rows[1]!['at'] as Date).toISOString()).toBe('2024-03-01T10:00:00.000Z');
  });

  it('rolls back the whole batch when one row cannot be written', async () => {
    await connection.liveExport.provisionExportTable({ name: 'atomic', columns: COLUMNS });
    await connection.liveExport.writeExportBatch('atomic', {
      columns: NAMES,
      upserts: [row(1, 'kept')],
      deletes: [],
    });
    await expect(
      connection.liveExport.writeExportBatch('atomic', {
        columns: NAMES,
        upserts: [row(1, 'changed'), row(2, 'too big', { price: '123456789012.5' })],
        deletes: [],
      }),
    ).rejects.toMatchObject({ kind: 'invalid_data' });
    expect((await tableRows('atomic')).map((found) => found['name'])).toEqual(['kept']);
  });

  it('reads ids and hashes in keyset pages', async () => {
    await connection.liveExport.provisionExportTable({ name: 'paged', columns: COLUMNS });
    const rows = Array.from({ length: 25 }, (_, index) => row(index + 1, `r${index + 1}`));
    await connection.liveExport.writeExportBatch('paged', {
      columns: NAMES,
      upserts: [],
      inserts: rows,
      deletes: [],
    });
    await db.admin.query(`INSERT INTO ${SCHEMA}.paged (name) VALUES ('foreign')`);
    const seen = new Map<string, string | null>();
    let after: string | null = null;
    let pages = 0;
    do {
      const page = await connection.liveExport.readExportHashes('paged', { after, limit: 10 });
      for (const found of page.rows) seen.set(found.id, found.hash);
      after = page.next;
      pages += 1;
    } while (after !== null);
    expect(pages).toBe(3);
    expect(seen.size).toBe(25);
    expect(seen.get('7')).toBe('h7-r7');
  });

  it('reports structure problems of a table changed so it cannot be written', async () => {
    expect(await connection.liveExport.inspectExportTable('nothing_here')).toBeNull();
    expect(exportStructureProblems(null, 'nothing_here', [])).toHaveLength(1);
    const { table } = await connection.liveExport.provisionExportTable({ name: 'altered', columns: COLUMNS });
    const expected = [
      { column: 'name', sourceClass: 'text' as const },
      { column: 'qty', sourceClass: 'integer' as const },
      { column: 'doc', sourceClass: 'json' as const },
    ];
    expect(exportStructureProblems(table, 'altered', expected)).toEqual([]);
    await db.admin.query(
      `ALTER TABLE ${SCHEMA}.altered DROP COLUMN name, ALTER COLUMN qty TYPE date USING NULL, DROP CONSTRAINT altered_${EXPORT_ID_COLUMN}_key`,
    );
    const changed = await connection.liveExport.inspectExportTable('altered');
    expect(changed?.idColumn).toBe('not_unique');
    const problems = exportStructureProblems(changed, 'altered', expected);
    expect(problems).toEqual([
      `Column ${EXPORT_ID_COLUMN} of "altered" is no longer unique`,
      'Column "name" of "altered" no longer exists',
      'Column "qty" of "altered" is now date, which cannot hold integer values',
    ]);
  });

  it('aborts a batch waiting on a lock within a second and leaves the table as it was', async () => {
    await connection.liveExport.provisionExportTable({ name: 'locked', columns: COLUMNS });
    await connection.liveExport.writeExportBatch('locked', {
      columns: NAMES,
      upserts: [row(1, 'before')],
      deletes: [],
    });
    await connection.liveExport.inspectExportTable('locked');
    await db.admin.query('BEGIN');
    await db.admin.query(`LOCK TABLE ${SCHEMA}.locked IN ACCESS EXCLUSIVE MODE`);
    const controller = new AbortController();
    const write = connection.liveExport.writeExportBatch(
      'locked',
      { columns: NAMES, upserts: [row(1, 'after'), row(2, 'new')], deletes: [] },
      { signal: controller.signal },
    );
    const outcome = write.then(
      () => 'written',
      (error: unknown) => error,
    );
    // The write is waiting on the lock (not before: the abort must interrupt a running statement).
    for (let i = 0; i < 100; i += 1) {
      const waiting = await db.admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (waiting.rows.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const started = Date.now();
    controller.abort();
    const error = await outcome;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(error).toBeInstanceOf(ExportAbortedError);
    await db.admin.query('COMMIT');
    expect((await tableRows('locked')).map((found) => found['name'])).toEqual(['before']);
    // The connection is usable afterwards.
    await connection.liveExport.writeExportBatch('locked', {
      columns: NAMES,
      upserts: [row(1, 'after')],
      deletes: [],
    });
    expect((await tableRows('locked')).map((found) => found['name'])).toEqual(['after']);
  });
});

describe('PostgreSQL live export source', () => {
  const SALT = '0123456789abcdef0123456789abcdef';
  const FIELDS = ['name', 'qty', 'price', 'ratio', 'active', 'at', 'day', 'doc', 'docb', 'tags', 'uid'];
  let source: LiveExportSource;

  async function allHashes(fields = FIELDS, salt = SALT, limit = 4): Promise<Map<string, string>> {
    const seen = new Map<string, string>();
    let after: string | null = null;
    do {
      const page: { rows: ExportSourceHash[]; next: string | null } = await source.readSourceHashes('src', {
        fields,
        salt,
        after,
        limit,
      });
      for (const found of page.rows) seen.set(found.id, found.hash);
      after = page.next;
    } while (after !== null);
    return seen;
  }

  beforeAll(async () => {
    await db.admin.query(`CREATE TABLE ${SCHEMA}.src (
      id integer PRIMARY KEY, name text, qty bigint, price numeric(12,3), ratio double precision, active boolean, at timestamptz,
      day date, doc json, docb jsonb, tags text[], uid uuid, unmapped text)`);
    await db.admin.query(`INSERT INTO ${SCHEMA}.src
      SELECT i, 'name ' || i, i * 7, i * 1.5, i / 3.0, i % 2 = 0, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second',
             date '2024-01-01' + i, json_build_object('i', i), jsonb_build_object('i', i), ARRAY['a', 'b' || i], md5(i::text)::uuid, 'x'
      FROM generate_series(1, 10) AS i`);
    await db.admin.query(
      `INSERT INTO ${SCHEMA}.src (id, name) VALUES (11, NULL), (12, ''), (13, E'tab\there, "quoted", back\\\\slash\nnewline')`,
    );
    source = exportSourceOf(connection)!;
  });

  it('is offered by the connection', () => {
    expect(source).not.toBeNull();
  });

  it('pages (id, hash) in key order, with the same hashes as the row reads and stable across sessions', async () => {
    const hashes = await allHashes();
    expect([...hashes.keys()]).toEqual(Array.from({ length: 13 }, (_, index) => String(index + 1)));
    expect(new Set(hashes.values()).size).toBe(13);
    const rows = [];
    let after: string | null = null;
    do {
      const page = await source.readSourceRows('src', { fields: FIELDS, salt: SALT, after, limit: 5 });
      rows.push(...page.rows);
      after = page.next;
    } while (after !== null);
    expect(rows.map((found) => [found.id, found.hash])).toEqual([...hashes.entries()]);
    // Values are decoded exactly as readPage decodes them.
    const page = await connection.readPage('src', { pageSize: 100, fields: FIELDS });
    expect(rows.map((found) => found.values)).toEqual(page.records.map((record) => record.values));
    expect(rows[12]!.values['name']).toBe('tab\there, "quoted", back\\slash\nnewline');
    const byId = await source.readSourceRowsById('src', ['3', '13', '99', 'not a number'], {
      fields: FIELDS,
      salt: SALT,
    });
    expect(byId.map((found) => [found.id, found.hash]).sort()).toEqual([
      ['13', hashes.get('13')],
      ['3', hashes.get('3')],
    ]);
    expect(byId.find((found) => found.id === '3')!.values).toEqual(rows[2]!.values);
    const other = (await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, {
      egress,
      poolSize: 1,
    })) as PostgresConnection;
    try {
      const again = exportSourceOf(other)!;
      const page2 = await again.readSourceHashes('src', { fields: FIELDS, salt: SALT, limit: 100 });
      expect(new Map(page2.rows.map((found) => [found.id, found.hash]))).toEqual(hashes);
    } finally {
      await other.close();
    }
  });

  it("changes a row's hash when any mapped field changes, and only then", async () => {
    const before = await allHashes();
    const changes = [
      `name = 'name 1 '`,
      'qty = qty + 1',
      'price = price + 0.001',
      'ratio = ratio + 1e-12',
      'active = NOT active',
      `at = at + interval '1 microsecond'`,
      'day = day + 1',
      `doc = '{"i": 1}'::json`, // same value, other text: json keeps the text
      `docb = docb || '{"j": null}'`,
      `tags = ARRAY['a', 'b1', NULL]`,
      `uid = md5('other')::uuid`,
      'name = NULL',
    ];
    for (const change of changes) {
      await db.admin.query(`UPDATE ${SCHEMA}.src SET ${change} WHERE id = 1`);
      const after = await allHashes();
      expect({ change, differs: after.get('1') !== before.get('1') }).toEqual({ change, differs: true });
      for (const [id, hash] of after) if (id !== '1') expect(hash).toBe(before.get(id));
      before.set('1', after.get('1')!);
    }
    // NULL and the empty string hash differently; a field not mapped changes nothing.
    expect(before.get('11')).not.toBe(before.get('12'));
    await db.admin.query(`UPDATE ${SCHEMA}.src SET unmapped = 'changed'`);
    expect(await allHashes()).toEqual(before);
    // Text moving between two fields changes the hash (the encoding is unambiguous).
    await db.admin.query(`UPDATE ${SCHEMA}.src SET name = 'a,b', doc = NULL, docb = NULL WHERE id = 2`);
    const joined = (await allHashes(['name', 'unmapped'])).get('2');
    await db.admin.query(`UPDATE ${SCHEMA}.src SET name = 'a', unmapped = 'b,changed' WHERE id = 2`);
    await db.admin.query(`UPDATE ${SCHEMA}.src SET unmapped = 'b,changed' WHERE id <> 2`);
    expect((await allHashes(['name', 'unmapped'])).get('2')).not.toBe(joined);
  });

  it('scans every (id, hash) of both sides in one statement, the same pairs the pages give', async () => {
    const scanned = new Map<string, string>();
    const count = await source.scanSourceHashes('src', { fields: FIELDS, salt: SALT }, (id, hash) =>
      scanned.set(id, hash),
    );
    expect(count).toBe(13);
    expect(scanned).toEqual(await allHashes());
    await connection.liveExport.provisionExportTable({ name: 'scanned', columns: COLUMNS });
    await connection.liveExport.writeExportBatch('scanned', {
      columns: NAMES,
      upserts: [],
      inserts: [row(1, 'a'), row(2, 'b', { name: 'tab\there' })],
      deletes: [],
    });
    await db.admin.query(`INSERT INTO ${SCHEMA}.scanned (name) VALUES ('foreign')`);
    const destination = new Map<string, string | null>();
    expect(
      await connection.liveExport.scanExportHashes!('scanned', (id, hash) => destination.set(id, hash)),
    ).toBe(2);
    expect(destination).toEqual(
      new Map([
        ['1', 'h1-a'],
        ['2', 'h2-b'],
      ]),
    );
  });

  it('aborts a hash scan waiting on a lock within a second, and the connection stays usable', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      source.scanSourceHashes(
        'src',
        { fields: FIELDS, salt: SALT, signal: controller.signal },
        () => undefined,
      ),
    ).rejects.toBeInstanceOf(ExportAbortedError);
    await db.admin.query('BEGIN');
    await db.admin.query(`LOCK TABLE ${SCHEMA}.src IN ACCESS EXCLUSIVE MODE`);
    const running = new AbortController();
    const outcome = source
      .scanSourceHashes('src', { fields: FIELDS, salt: SALT, signal: running.signal }, () => undefined)
      .then(
        () => 'finished',
        (error: unknown) => error,
      );
    for (let i = 0; i < 100; i += 1) {
      const waiting = await db.admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (waiting.rows.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const started = Date.now();
    running.abort();
    const error = await outcome;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(error).toBeInstanceOf(ExportAbortedError);
    await db.admin.query('COMMIT');
    expect((await allHashes()).size).toBe(13);
  });

  it('salts every hash: another plan fingerprint gives other hashes', async () => {
    const one = await allHashes();
    const two = await allHashes(FIELDS, 'fedcba9876543210fedcba9876543210');
    for (const [id, hash] of one) expect(two.get(id)).not.toBe(hash);
    await expect(
      source.readSourceHashes('src', { fields: ['nope'], salt: SALT, limit: 10 }),
    ).rejects.toMatchObject({ kind: 'not_found' });
  });
});
