import { DataSource } from 'typeorm';
import { insertLinks, type LinkRow } from '../record-links/record-links';
import { linkRow } from '../test/link-row';
import { recordOperations } from '../record-links/record-search';
import {
  batchEntryId,
  batchEntryOf,
  batchOperations,
  insertOperationBatches,
  MAX_BATCH_SIZE,
} from './operation-batches';
import { accountOperation, listOperations, type OperationReadRow } from './operation-reads';
import { insertOperations, type OperationRow } from './operation-writes';

const op = (
  record: string,
  table: 'people' | 'notes',
  action = 'created',
  details: Record<string, unknown> | null = null,
): OperationRow => ({
  record_id: record,
  table_pair: table === 'people' ? 0 : 1,
  side: 'right',
  table_id: `table_${table}`,
  table_name: table,
  record_remote_id: `R-${record}`,
  record_name: `name of ${record}`,
  action,
  trigger: 'push',
  field_changes: [{ field: 'name', before: null, after: `name of ${record}` }],
  details,
});

describe('batchOperations', () => {
  it('batches the created pushes without details of the records given, one batch per side and table pair', () => {
    const operations = [
      op('rec_a', 'people'),
      op('rec_b', 'notes'),
      op('rec_c', 'people'),
      op('rec_d', 'people', 'updated'),
      op('rec_e', 'people', 'created', { conflict: true }),
      op('rec_f', 'people'),
    ];
    const { batches, rest, ids } = batchOperations(operations, new Set(['rec_a', 'rec_b', 'rec_c', 'rec_d']));
    expect(batches.map((batch) => batch.operations.map((o) => o.record_id))).toEqual([
      ['rec_a', 'rec_c'],
      ['rec_b'],
    ]);
    expect(rest.map((o) => o.record_id)).toEqual(['rec_d', 'rec_e', 'rec_f']);
    expect(ids.get('rec_c')).toBe(batchEntryId(batches[0]!.id, 1));
    expect(batchEntryOf(ids.get('rec_c')!)).toEqual({ batchId: batches[0]!.id, position: 1 });
    expect(ids.get('rec_c')).toMatch(/^op_[0-9a-z]{20}$/);
  });

  it('position ids round-trip up to the largest position', () => {
    for (const position of [0, 1, 35, 36, 1295, MAX_BATCH_SIZE - 1])
      expect(batchEntryOf(batchEntryId('op_0123456789abcdef', position))).toEqual({
        batchId: 'op_0123456789abcdef',
        position,
      });
  });
});

describe('operation batches in the store, read back as one operation per record', () => {
  let db: DataSource;
  const stamp = Date.now().toString(36);
  const syncId = `sync_batches${stamp}`;
  const accountId = `acct_batches${stamp}`;
  const batched = ['rec_b1', 'rec_b2', 'rec_b3', 'rec_b4', 'rec_b5'];

  const link = (id: string, n: number): LinkRow =>
    linkRow(id, n, 5, { table_pair: id === 'rec_b5' ? 1 : 0, right_remote_id: `R-${id}` });

  beforeAll(async () => {
    db = new DataSource({ type: 'postgres', url: process.env['DATABASE_URL'], entities: [] });
    await db.initialize();
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
    await db.query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'batches')`, [
      syncId,
      accountId,
    ]);
    // An ordinary operation, then a page with three batched creates (two tables) and one ordinary update, then
    // a page with two more batched creates, then an ordinary operation of a batched record.
    await db.transaction((tx) => insertOperations(tx, syncId, [op('rec_o1', 'people', 'updated')]));
    await page(['rec_b1', 'rec_b2', 'rec_b5'], [op('rec_o2', 'people', 'updated')]);
    await page(['rec_b3', 'rec_b4'], []);
    await db.transaction((tx) => insertOperations(tx, syncId, [op('rec_b1', 'people', 'updated')]));
  });

  /** One initial-sync page's commit: links of `records` with their creates batched, and `others`. */
  async function page(records: string[], others: OperationRow[]): Promise<void> {
    const links = records.map((id) => link(id, batched.indexOf(id)));
    const operations = [...records.map((id) => op(id, id === 'rec_b5' ? 'notes' : 'people')), ...others];
    const { batches, rest, ids } = batchOperations(operations, new Set(records));
    for (const row of links) row.created_op = ids.get(row.id) ?? null;
    await db.transaction(async (tx) => {
      await insertLinks(tx, syncId, links, { left: [], right: [] });
      await insertOperations(tx, syncId, rest);
      await insertOperationBatches(tx, syncId, batches);
    });
  }

  afterAll(async () => {
    await db.query(`DELETE FROM syncs WHERE id = $1`, [syncId]);
    await db.query(`DELETE FROM accounts WHERE id = $1`, [accountId]);
    await db.destroy();
  });

  /** The log as `operation_log` shows it, newest first. */
  async function logIds(where = 'true', params: unknown[] = []): Promise<string[]> {
    const rows: { id: string }[] = await db.query(
      `SELECT id FROM operation_log WHERE sync_id = $1 AND ${where}
        ORDER BY occurred_at DESC, seq DESC, batch_position DESC`,
      [syncId, ...params],
    );
    return rows.map((row) => row.id);
  }

  const list = (filter: Partial<Parameters<typeof listOperations>[1]> = {}) =>
    listOperations(db, { syncId, accountId, limit: 100, ...filter }) as Promise<OperationReadRow[]>;

  it('lists every operation once, newest first, batched ones with their records', async () => {
    const rows = await list();
    expect(rows.map((row) => row.id)).toEqual(await logIds());
    expect(rows).toHaveLength(8);
    expect(rows[0]).not.toHaveProperty('size');
    const b2 = rows.find((row) => row.record_id === 'rec_b2')!;
    expect(b2).toMatchObject({
      action: 'created',
      trigger: 'push',
      side: 'right',
      table_id: 'table_people',
      record_remote_id: 'R-rec_b2',
      record_name: 'name of rec_b2',
      details: null,
    });
    expect(b2.position).toBe(1);
  });

  it('pages through batches with the keyset position inside a batch, as one list does', async () => {
    for (const limit of [1, 2, 3, 4]) {
      const seen: string[] = [];
      let before: { occurredKey: string; seq: string; position?: number } | undefined;
      for (;;) {
        const rows = await list({ limit: limit + 1, before });
        const items = rows.slice(0, limit);
        seen.push(...items.map((row) => row.id));
        if (rows.length <= limit) break;
        const last = items[items.length - 1]!;
        before = { occurredKey: last.occurred_key, seq: last.seq, position: last.position };
      }
      expect(seen).toEqual(await logIds());
    }
  });

  it('filters by table, by time and by record (a batched create found through its link)', async () => {
    expect((await list({ tableId: 'table_notes' })).map((row) => row.record_id)).toEqual(['rec_b5']);
    const all = await list();
    const since = new Date(all[2]!.occurred_at);
    expect((await list({ since })).map((row) => row.id)).toEqual(
      all.filter((row) => row.occurred_at >= since).map((row) => row.id),
    );
    const b1 = await list({ recordId: 'rec_b1' });
    expect(b1.map((row) => row.action)).toEqual(['updated', 'created']);
    expect(b1.map((row) => row.id)).toEqual(await logIds('record_id = $2', ['rec_b1']));
    expect(await list({ recordId: 'rec_b1', tableId: 'table_notes' })).toEqual([]);
    const first = (await list({ recordId: 'rec_b1', limit: 1 }))[0]!;
    const rest = await list({
      recordId: 'rec_b1',
      before: { occurredKey: first.occurred_key, seq: first.seq, position: first.position },
    });
    expect(rest.map((row) => row.action)).toEqual(['created']);
  });

  it('reads one batched operation by id with its field changes; an id past the batch or of another account is not found', async () => {
    const row = (await list()).find((r) => r.record_id === 'rec_b3')!;
    const one = await accountOperation(db, { id: row.id, accountId, syncId: null });
    expect(one).toMatchObject({
      id: row.id,
      seq: row.seq,
      record_id: 'rec_b3',
      record_remote_id: 'R-rec_b3',
    });
    expect(one!.field_changes).toEqual([{ field: 'name', after: 'name of rec_b3' }]);
    const past = batchEntryId(batchEntryOf(row.id)!.batchId, 2);
    expect(await accountOperation(db, { id: past, accountId, syncId: null })).toBeNull();
    expect(await accountOperation(db, { id: row.id, accountId: 'acct_other', syncId: null })).toBeNull();
    expect(await accountOperation(db, { id: row.id, accountId, syncId: 'sync_other' })).toBeNull();
  });

  it("the record status document's history includes the batched create", async () => {
    const rows = await recordOperations(db, syncId, 'rec_b1', 10);
    expect(rows.map((row) => row.action)).toEqual(['updated', 'created']);
    expect(rows[1]).toMatchObject({ record_remote_id: 'R-rec_b1', record_name: 'name of rec_b1' });
    expect(rows.map((row) => row.id)).toEqual(await logIds('record_id = $2', ['rec_b1']));
  });

  it('operation_entry_id and operation_entry_position agree with the service', async () => {
    const id = batchEntryId('op_0123456789abcdef', 1295 + 37);
    const rows: { id: string; position: number }[] = await db.query(
      `SELECT operation_entry_id('op_0123456789abcdef', 1332) AS id, operation_entry_position($1) AS position`,
      [id],
    );
    expect(rows[0]).toEqual({ id, position: 1332 });
  });

  it('deleting the sync deletes its batches', async () => {
    const other = `sync_batchesgone${stamp}`;
    await db.query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'gone')`, [other, accountId]);
    const { batches } = batchOperations([op('rec_g', 'people')], new Set(['rec_g']));
    await db.transaction((tx) => insertOperationBatches(tx, other, batches));
    await db.query(`DELETE FROM syncs WHERE id = $1`, [other]);
    expect(await db.query(`SELECT id FROM operation_batches WHERE sync_id = $1`, [other])).toEqual([]);
  });
});
