/**
 * The connector against the Airtable simulator with Airtable's own limits: credentials and scopes, bases,
 * tables with views, every field type, reads in pages, batch writes with a result per record, conditional
 * updates, and the service id. Every test ends with no 429 answered (the budget stays under the limits).
 */
import { randomUUID } from 'node:crypto';
import { readAllPages } from '@lockstep/connectors-core/testing';
import { addEveryTypeTable, useConnector } from './test/kit';
import { SERVICE_ID_FIELD_NAME } from './types';

const at = useConnector();

afterEach(() => expect(at.simulator.stats.rateLimited).toBe(0));

describe('credentials and bases', () => {
  it('accepts the token, with and without a base (by id or by exact name)', async () => {
    await expect((await at.connect(null)).checkCredentials()).resolves.toBeUndefined();
    await expect((await at.connect(at.base.id)).checkCredentials()).resolves.toBeUndefined();
    const byName = await at.connect('Sales');
    await expect(byName.listTables()).resolves.toEqual([]);
  });

  it('refuses a revoked token with kind auth and Airtable reason, never echoing it', async () => {
    at.simulator.addToken('patREVOKED.1');
    const connection = await at.connect(null, 'patREVOKED.1');
    await connection.checkCredentials();
    at.simulator.revokeToken('patREVOKED.1');
    const error = await connection.checkCredentials().catch((caught: Error) => caught);
    expect(error).toMatchObject({ kind: 'auth', appCode: 'AUTHENTICATION_REQUIRED' });
    expect((error as Error).message).not.toContain('patREVOKED.1');
  });

  it('names a scope the token lacks (invalid_auth)', async () => {
    at.simulator.addToken('patNOHOOKS.1', {
      scopes: ['data.records:read', 'data.records:write', 'schema.bases:read', 'schema.bases:write'],
    });
    const connection = await at.connect(at.base.id, 'patNOHOOKS.1');
    await expect(connection.checkCredentials()).rejects.toMatchObject({
      kind: 'auth',
      message: expect.stringContaining('webhook:manage'),
    });
    at.simulator.addToken('patOAUTH.1', { oauth: true, scopes: ['data.records:read'] });
    await expect((await at.connect(null, 'patOAUTH.1')).checkCredentials()).rejects.toMatchObject({
      kind: 'auth',
      message: expect.stringContaining('data.records:write'),
    });
  });

  it('lists bases; a base that does not exist is not_found', async () => {
    const other = at.simulator.addBase('Support');
    const connection = await at.connect(null);
    expect(await connection.listBases()).toEqual(
      expect.arrayContaining([
        { id: at.base.id, name: 'Sales' },
        { id: other.id, name: 'Support' },
      ]),
    );
    const missing = await at.connect('appNOSUCHBASE0000');
    await expect(missing.listTables()).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('an empty token is refused before any request', async () => {
    await expect(at.connect(null, ' ')).rejects.toMatchObject({ kind: 'auth' });
  });
});

describe('tables, views and fields', () => {
  it('lists tables with their views (spec 2.7) and every field type with class and flags', async () => {
    const { table, people } = addEveryTypeTable(at.simulator, at.base, 'Deals');
    table.views.push({ id: 'viwWONONLY000000', name: 'Won', type: 'grid' });
    const connection = await at.connect();
    const tables = await connection.listTables();
    expect(tables.find((info) => info.remoteId === table.id)).toEqual({
      remoteId: table.id,
      name: 'Deals',
      readOnly: false,
      views: {
        required: false,
        options: [
          { value: table.views[0]!.id, name: 'Grid view' },
          { value: 'viwWONONLY000000', name: 'Won' },
        ],
      },
    });
    const fields = await connection.listFields(table.id);
    expect(fields).toHaveLength(table.fields.length);
    const byName = Object.fromEntries(fields.map((field) => [field.name, field]));
    expect(byName['Name']).toMatchObject({ remoteId: table.fields[0]!.id, primary: true, typeClass: 'text' });
    expect(byName['People']).toMatchObject({
      typeClass: 'relation',
      write: true,
      typeDetails: { target_table: people.id, allows_multiple_values: true },
    });
    expect(byName['Stage']).toMatchObject({ typeClass: 'select', typeDetails: { options: ['new', 'won'] } });
    expect(byName['Cost']).toMatchObject({ typeClass: 'decimal', typeDetails: { scale: 2 } });
    expect(byName['At']).toMatchObject({ typeClass: 'timestamp', typeDetails: { time_zone: 'utc' } });
    for (const name of ['Total', 'Sum', 'Links', 'Names', 'Created', 'Modified', 'Creator', 'Editor']) {
      expect(byName[name]).toMatchObject({ read: true, write: false });
    }
    expect(byName['Number']).toMatchObject({ typeClass: 'integer', read: true, write: false });
    expect(byName['Open']).toMatchObject({ read: true, write: false });
    expect(byName['Summary']).toMatchObject({ typeClass: 'unsupported', read: false, write: false });
    // Tables and fields by exact name too.
    expect((await connection.listFields('Deals')).length).toBe(fields.length);
    await expect(connection.listFields('No such table')).rejects.toMatchObject({ kind: 'not_found' });
  });
});

describe('records', () => {
  it('reads in pages of at most 100 by offset, keyed by field id, and counts', async () => {
    const table = at.simulator.addTable(at.base, 'Paged', [
      { name: 'Title', type: 'singleLineText' },
      { name: 'Amount', type: 'number', options: { precision: 0 } },
    ]);
    for (let n = 1; n <= 230; n += 1)
      at.simulator.outside.insert(at.base, table.id, { Title: `row ${n}`, Amount: n });
    const connection = await at.connect();
    const pages = await readAllPages(connection, table.id, 500);
    expect(pages.map((page) => page.length)).toEqual([100, 100, 30]);
    const records = pages.flat();
    expect(new Set(records.map((record) => record.remoteId)).size).toBe(230);
    const [title, amount] = table.fields;
    expect(records[0]!.values).toEqual({ [title!.id]: 'row 1', [amount!.id]: 1 });
    const only = await connection.readPage(table.id, { pageSize: 5, fields: [amount!.id] });
    expect(only.records[0]!.values).toEqual({ [amount!.id]: 1 });
    expect(await connection.countRecords!(table.id)).toBe(230);
    const picked = await connection.readByIds(table.id, [records[5]!.remoteId, 'recDOESNOTEXIST00']);
    expect(picked.map((record) => record.remoteId)).toEqual([records[5]!.remoteId]);
  });

  it('limits reads to a view (spec 2.8)', async () => {
    const table = at.simulator.addTable(at.base, 'Viewed', [{ name: 'Title', type: 'singleLineText' }]);
    table.views.push({
      id: 'viwODDONLY000000',
      name: 'Odd',
      type: 'grid',
      filter: (record) => /[13579]$/.test(String(record.fields[table.fields[0]!.id])),
    });
    for (let n = 1; n <= 6; n += 1) at.simulator.outside.insert(at.base, table.id, { Title: `r${n}` });
    const connection = await at.connect();
    const page = await connection.readPage(table.id, { pageSize: 100, view: 'viwODDONLY000000' });
    expect(page.records.map((record) => record.values[table.fields[0]!.id])).toEqual(['r1', 'r3', 'r5']);
    await expect(
      connection.readPage(table.id, { pageSize: 10, view: 'viwNOSUCHVIEW000' }),
    ).rejects.toMatchObject({
      kind: 'not_found',
    });
  });

  it('writes in batches of 10 with a result per record; a refused value names the field', async () => {
    const table = at.simulator.addTable(at.base, 'Batch', [
      { name: 'Title', type: 'singleLineText' },
      { name: 'Stage', type: 'singleSelect', options: { choices: [{ name: 'new' }] } },
    ]);
    const [title, stage] = table.fields.map((field) => field.id);
    const connection = await at.connect();
    const rows = Array.from({ length: 23 }, (_, n) => ({
      serviceId: randomUUID(),
      values: { [title!]: `t${n}`, [stage!]: n === 7 ? 'not an option' : 'new' },
    }));
    await connection.listFields(table.id); // the base and its schema are read once per connection
    const before = at.simulator.stats.requests;
    const results = await connection.createRecords(table.id, rows);
    expect(results.map((result) => result.ok)).toEqual(rows.map((_, n) => n !== 7));
    expect(results[7]).toMatchObject({
      ok: false,
      error: { kind: 'invalid_data', appCode: 'INVALID_MULTIPLE_CHOICE_OPTIONS', retryable: false },
    });
    // 3 batches, and the refused one again record by record (10).
    expect(at.simulator.stats.requests - before).toBe(13);
    expect(table.records.size).toBe(22);

    const ids = results.filter((result) => result.ok).map((result) => (result.ok ? result.remoteId : ''));
    const updated = await connection.updateRecords(table.id, [
      { remoteId: ids[0]!, values: { [title!]: 'first' } },
      { remoteId: 'recGONE0000000000', values: { [title!]: 'x' } },
      { remoteId: ids[1]!, values: { [stage!]: 'nope' } },
    ]);
    expect(updated.map((result) => (result.ok ? 'ok' : result.error.kind))).toEqual([
      'ok',
      'not_found',
      'invalid_data',
    ]);
    if (!updated[2]!.ok) expect(updated[2]!.error.message).toContain('nope');

    const deleted = await connection.deleteRecords(table.id, [ids[0]!, 'recGONE0000000000', ids[1]!]);
    expect(deleted.map((result) => result.ok)).toEqual([true, true, true]);
    expect(table.records.size).toBe(20);
  });

  it('updates conditionally: an edit since the read is reported as changed and not overwritten', async () => {
    const table = at.simulator.addTable(at.base, 'Guarded', [
      { name: 'Title', type: 'singleLineText' },
      { name: 'Amount', type: 'number', options: { precision: 2 } },
    ]);
    const [title, amount] = table.fields.map((field) => field.id);
    const id = at.simulator.outside.insert(at.base, table.id, { Title: 'a', Amount: 1.5 });
    const connection = await at.connect();
    const [read] = await connection.readByIds(table.id, [id]);
    expect(read!.values).toEqual({ [title!]: 'a', [amount!]: '1.50' });
    at.simulator.outside.update(at.base, table.id, id, { Amount: 2 });
    const [refused] = await connection.updateRecords(table.id, [
      { remoteId: id, values: { [title!]: 'b' }, expected: read!.values },
    ]);
    expect(refused).toMatchObject({
      ok: false,
      error: { kind: 'changed', message: expect.stringContaining('Amount') },
    });
    const [now] = await connection.readByIds(table.id, [id]);
    const [written] = await connection.updateRecords(table.id, [
      { remoteId: id, values: { [title!]: 'b' }, expected: now!.values },
    ]);
    expect(written).toMatchObject({ ok: true, record: { values: { [title!]: 'b', [amount!]: '2.00' } } });
  });

  it('adds the Lockstep ID field at table setup; a create sent again adopts the record', async () => {
    const table = at.simulator.addTable(at.base, 'Once', [{ name: 'Title', type: 'singleLineText' }]);
    const connection = await at.connect();
    const prepared = await connection.prepareTable(table.id, { changeCapture: false, serviceIdColumn: true });
    const field = table.fields.find((candidate) => candidate.name === SERVICE_ID_FIELD_NAME);
    expect(prepared).toEqual({ serviceIdField: field!.id, changeCapture: false });
    expect(field!.type).toBe('singleLineText');
    expect(await connection.prepareTable(table.id, { changeCapture: false })).toEqual(prepared);
    const row = { serviceId: randomUUID(), values: { [table.fields[0]!.id]: 'once' } };
    const [first] = await connection.createRecords(table.id, [row]);
    const [second, twin] = await connection.createRecords(table.id, [row, row]);
    expect(first).toMatchObject({ ok: true, record: { serviceId: row.serviceId } });
    expect([second, twin].map((result) => result.ok && result.remoteId)).toEqual([
      first!.ok && first!.remoteId,
      first!.ok && first!.remoteId,
    ]);
    expect(table.records.size).toBe(1);
    expect(await connection.readByServiceIds(table.id, [row.serviceId, randomUUID()])).toEqual([
      expect.objectContaining({ serviceId: row.serviceId }),
    ]);
  });
});
