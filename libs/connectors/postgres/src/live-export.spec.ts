/**
 * The live export destination layer against the real PostgreSQL server: provisioning, inspection, the
 * keyset read of ids and hashes, the one-transaction batch (inserts, upserts, deletes) and abort.
 */
import { EXPORT_HASH_COLUMN, EXPORT_ID_COLUMN, ExportAbortedError, exportStructureProblems, type ExportRow } from '@lockstep/connectors-core';
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
    values: { name, qty: id * 10, price: '12.50', active: id % 2 === 0, at: '2024-03-01T10:00:00Z', doc: { id, tags: ['a'] }, ...extra },
  };
}

async function tableRows(table: string): Promise<Record<string, unknown>[]> {
  return (await db.admin.query(`SELECT ${EXPORT_ID_COLUMN} AS id, ${EXPORT_HASH_COLUMN} AS hash, name, qty::text, price::text, active, at, doc FROM ${SCHEMA}.${table} ORDER BY ${EXPORT_ID_COLUMN} NULLS FIRST`)).rows;
}

beforeAll(async () => {
  db = await createTestDatabase('ls_pg_lx');
  await db.admin.query(`CREATE SCHEMA ${SCHEMA}`);
  connection = (await postgresConnector.connect({ connectionString: db.url() }, SCHEMA, { egress, poolSize: 2 })) as PostgresConnection;
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
    const wider = await connection.liveExport.provisionExportTable({ name: 'orders', columns: [COLUMNS[0]!, { name: 'note', typeClass: 'text' }] });
    expect(wider.addedColumns).toEqual(['note']);
    expect(wider.table.columns.map((column) => column.name)).toEqual([...NAMES, 'note']);
    await expect(connection.liveExport.provisionExportTable({ name: 'bad', columns: [{ name: EXPORT_ID_COLUMN, typeClass: 'text' }] })).rejects.toMatchObject({
      kind: 'invalid_data',
    });
  });

  it('writes inserts, upserts and deletes in one transaction and never touches rows without an id', async () => {
    await connection.liveExport.provisionExportTable({ name: 'items', columns: COLUMNS });
    await db.admin.query(`INSERT INTO ${SCHEMA}.items (name) VALUES ('someone else''s row')`);
    const written = await connection.liveExport.writeExportBatch('items', { columns: NAMES, upserts: [], inserts: [row(1, 'one'), row(2, 'two'), row(3, 'three')], deletes: [] });
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
    await connection.liveExport.writeExportBatch('atomic', { columns: NAMES, upserts: [row(1, 'kept')], deletes: [] });
    await expect(
      connection.liveExport.writeExportBatch('atomic', { columns: NAMES, upserts: [row(1, 'changed'), row(2, 'too big', { price: '123456789012.5' })], deletes: [] }),
    ).rejects.toMatchObject({ kind: 'invalid_data' });
    expect((await tableRows('atomic')).map((found) => found['name'])).toEqual(['kept']);
  });

  it('reads ids and hashes in keyset pages', async () => {
    await connection.liveExport.provisionExportTable({ name: 'paged', columns: COLUMNS });
    const rows = Array.from({ length: 25 }, (_, index) => row(index + 1, `r${index + 1}`));
    await connection.liveExport.writeExportBatch('paged', { columns: NAMES, upserts: [], inserts: rows, deletes: [] });
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
    await db.admin.query(`ALTER TABLE ${SCHEMA}.altered DROP COLUMN name, ALTER COLUMN qty TYPE date USING NULL, DROP CONSTRAINT altered_${EXPORT_ID_COLUMN}_key`);
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
    await connection.liveExport.writeExportBatch('locked', { columns: NAMES, upserts: [row(1, 'before')], deletes: [] });
    await connection.liveExport.inspectExportTable('locked');
    await db.admin.query('BEGIN');
    await db.admin.query(`LOCK TABLE ${SCHEMA}.locked IN ACCESS EXCLUSIVE MODE`);
    const controller = new AbortController();
    const write = connection.liveExport.writeExportBatch('locked', { columns: NAMES, upserts: [row(1, 'after'), row(2, 'new')], deletes: [] }, { signal: controller.signal });
    const outcome = write.then(
      () => 'written',
      (error: unknown) => error,
    );
    // The write is waiting on the lock (not before: the abort must interrupt a running statement).
    for (let i = 0; i < 100; i += 1) {
      const waiting = await db.admin.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
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
    await connection.liveExport.writeExportBatch('locked', { columns: NAMES, upserts: [row(1, 'after')], deletes: [] });
    expect((await tableRows('locked')).map((found) => found['name'])).toEqual(['after']);
  });
});
