/**
 * The connector against the real NocoDB, beyond the contract suite: batches with refused, missing and edited
 * records, read-only fields, links, views, 429s through the shared budget (a proxy answers them), the
 * idempotent create after a lost answer, NocoDB gone mid-call, and the credentials' checks.
 */
import { randomUUID } from 'node:crypto';
import { type Connection, ConnectorError, type WriteResult } from '@lockstep/connectors-core';
import { LocalCoordination } from '@lockstep/connectors-http';
import { nocodbConnector } from './declaration';
import { startProxy } from './test/proxy';
import { admin, describeNocodb, uniqueName, useNocodb } from './test/server';

type Table = { id: string; columns: { id: string; title: string; uidt: string }[] };

const ok = (result: WriteResult | undefined) => {
  if (!result?.ok) throw new Error(`expected ok, got ${JSON.stringify(result)}`);
  return result;
};

describeNocodb('nocodb connector (real server)', () => {
  const nocodb = useNocodb('connector');
  let connection: Connection;

  const createTable = (title: string, columns: Record<string, unknown>[]) =>
    admin<Table>(nocodb.server, 'POST', `/api/v2/meta/bases/${nocodb.baseId}/tables`, {
      title,
      table_name: title,
      columns,
    });
  const fieldId = (table: Table, title: string) => table.columns.find((column) => column.title === title)!.id;
  const plain = () =>
    createTable(uniqueName('plain'), [
      { title: 'title', uidt: 'SingleLineText' },
      { title: 'amount', uidt: 'Number' },
    ]);

  beforeAll(async () => {
    connection = await nocodb.connect();
  });

  describe('batch writes', () => {
    it('creates a batch with one refused record: the others are written, the bad one reported', async () => {
      const table = await plain();
      await connection.prepareTable(table.id, { changeCapture: false });
      const [title, amount] = [fieldId(table, 'title'), fieldId(table, 'amount')];
      const results = await connection.createRecords(table.id, [
        { serviceId: randomUUID(), values: { [title]: 'a', [amount]: 1 } },
        { serviceId: randomUUID(), values: { [title]: 'b', [amount]: 'not a number' } },
        { serviceId: randomUUID(), values: { [title]: 'c', [amount]: 3 } },
      ]);
      expect(results.map((result) => result.ok)).toEqual([true, false, true]);
      expect(results[1]).toMatchObject({ ok: false, error: { kind: 'invalid_data', retryable: false } });
      expect(JSON.stringify(results[1])).toContain('amount');
      expect(await connection.countRecords!(table.id)).toBe(2);
    });

    it('writes 250 records in requests of 100, one result each, in order', async () => {
      const table = await plain();
      const title = fieldId(table, 'title');
      const rows = Array.from({ length: 250 }, (_, index) => ({
        serviceId: randomUUID(),
        values: { [title]: `row ${index}` },
      }));
      const results = await connection.createRecords(table.id, rows);
      expect(results.every((result) => result.ok)).toBe(true);
      const read = await connection.readByIds(table.id, [ok(results[0]).remoteId, ok(results[249]).remoteId]);
      expect(read.map((record) => record.values[title]).sort()).toEqual(['row 0', 'row 249']);
    });

    it('updates: a refused value, a missing record and an edited one (conditional) each get their own result', async () => {
      const table = await plain();
      const [title, amount] = [fieldId(table, 'title'), fieldId(table, 'amount')];
      const created = await connection.createRecords(
        table.id,
        ['a', 'b', 'c'].map((value) => ({
          serviceId: randomUUID(),
          values: { [title]: value, [amount]: 1 },
        })),
      );
      const [a, b, c] = created.map((result) => ok(result).remoteId);
      await admin(nocodb.server, 'PATCH', `/api/v2/tables/${table.id}/records`, [
        { Id: Number(c), title: 'edited' },
      ]);
      const results = await connection.updateRecords(table.id, [
        { remoteId: a!, values: { [title]: 'a2' }, expected: { [title]: 'a', [amount]: 1 } },
        { remoteId: b!, values: { [amount]: 'x' } },
        { remoteId: c!, values: { [title]: 'c2' }, expected: { [title]: 'c' } },
        { remoteId: '999999', values: { [title]: 'gone' } },
      ]);
      expect(results.map((result) => (result.ok ? 'ok' : result.error.kind))).toEqual([
        'ok',
        'invalid_data',
        'changed',
        'not_found',
      ]);
      const read = await connection.readByIds(table.id, [a!, c!]);
      expect(read.map((record) => record.values[title]).sort()).toEqual(['a2', 'edited']);
    });

    it('deletes a batch; a record already gone counts as deleted', async () => {
      const table = await plain();
      const title = fieldId(table, 'title');
      const created = await connection.createRecords(
        table.id,
        ['x', 'y'].map((value) => ({ serviceId: randomUUID(), values: { [title]: value } })),
      );
      const ids = created.map((result) => ok(result).remoteId);
      await admin(nocodb.server, 'DELETE', `/api/v2/tables/${table.id}/records`, [{ Id: Number(ids[0]) }]);
      const results = await connection.deleteRecords(table.id, ids);
      expect(results.map((result) => result.ok)).toEqual([true, true]);
      expect(await connection.countRecords!(table.id)).toBe(0);
    });
  });

  it('lists computed fields read-only and refuses to write them before any request', async () => {
    const table = await createTable(uniqueName('computed'), [{ title: 'n', uidt: 'Number' }]);
    const added = await admin<Table>(nocodb.server, 'POST', `/api/v2/meta/tables/${table.id}/columns`, {
      title: 'double',
      uidt: 'Formula',
      formula_raw: '{n} * 2',
    });
    const fields = await connection.listFields(table.id);
    const formula = fields.find((field) => field.name === 'double')!;
    expect(formula).toMatchObject({ type: 'Formula', read: true, write: false });
    expect(fields.find((field) => field.name === 'UpdatedAt')).toMatchObject({
      typeClass: 'timestamp',
      write: false,
    });
    const [created] = await connection.createRecords(table.id, [
      { serviceId: randomUUID(), values: { [fieldId(added, 'n')]: 21 } },
    ]);
    const [record] = await connection.readByIds(table.id, [ok(created).remoteId]);
    expect(record!.values[formula.remoteId]).toBe('42');
    const [refused] = await connection.updateRecords(table.id, [
      { remoteId: ok(created).remoteId, values: { [formula.remoteId]: '1' } },
    ]);
    expect(refused).toMatchObject({ ok: false, error: { kind: 'invalid_data' } });
    expect(JSON.stringify(refused)).toContain('double');
  });

  it("reads and writes links as the linked records' ids", async () => {
    const people = await createTable(uniqueName('people'), [{ title: 'name', uidt: 'SingleLineText' }]);
    const deals = await createTable(uniqueName('deals'), [{ title: 'deal', uidt: 'SingleLineText' }]);
    const linked = await admin<Table>(nocodb.server, 'POST', `/api/v2/meta/tables/${deals.id}/columns`, {
      title: 'people',
      uidt: 'Links',
      parentId: deals.id,
      childId: people.id,
      type: 'mm',
    });
    const link = fieldId(linked, 'people');
    const persons = await connection.createRecords(
      people.id,
      ['Ann', 'Bob', 'Cy'].map((name) => ({
        serviceId: randomUUID(),
        values: { [fieldId(people, 'name')]: name },
      })),
    );
    const [ann, bob, cy] = persons.map((result) => ok(result).remoteId);
    const field = (await connection.listFields(deals.id)).find((info) => info.remoteId === link)!;
    expect(field).toMatchObject({ typeClass: 'relation', write: true });
    expect(field.typeDetails).toMatchObject({ target_table: people.id, allows_multiple_values: true });
    const [deal] = await connection.createRecords(deals.id, [
      { serviceId: randomUUID(), values: { [fieldId(deals, 'deal')]: 'big', [link]: [ann!, bob!] } },
    ]);
    const id = ok(deal).remoteId;
    expect((await connection.readByIds(deals.id, [id]))[0]!.values[link]).toEqual([ann, bob]);
    ok((await connection.updateRecords(deals.id, [{ remoteId: id, values: { [link]: [bob!, cy!] } }]))[0]);
    expect((await connection.readByIds(deals.id, [id]))[0]!.values[link]).toEqual([bob, cy]);
    const page = await connection.readPage(deals.id, { pageSize: 10 });
    expect(page.records[0]!.values[link]).toEqual([bob, cy]);
  });

  it('limits reads to a mapped grid view: readPage, readByIds and readChanges (a record leaving it is a delete)', async () => {
    const table = await plain();
    const title = fieldId(table, 'title');
    const view = await admin<{ id: string }>(nocodb.server, 'POST', `/api/v2/meta/tables/${table.id}/grids`, {
      title: 'Only shown',
    });
    await admin(nocodb.server, 'POST', `/api/v2/meta/views/${view.id}/filters`, {
      fk_column_id: title,
      comparison_op: 'eq',
      value: 'shown',
    });
    const tables = await connection.listTables();
    expect(tables.find((info) => info.remoteId === table.id)!.views!.options).toContainEqual({
      value: view.id,
      name: 'Only shown',
    });
    const created = await connection.createRecords(
      table.id,
      ['shown', 'hidden'].map((value) => ({ serviceId: randomUUID(), values: { [title]: value } })),
    );
    const [shown, hidden] = created.map((result) => ok(result).remoteId);
    const page = await connection.readPage(table.id, { pageSize: 10, view: view.id });
    expect(page.records.map((record) => record.remoteId)).toEqual([shown]);
    expect(
      (await connection.readByIds(table.id, [shown!, hidden!], { view: view.id })).map((r) => r.remoteId),
    ).toEqual([shown]);
    const since = await connection.currentCheckpoint(table.id);
    await admin(nocodb.server, 'PATCH', `/api/v2/tables/${table.id}/records`, [
      { Id: Number(shown), title: 'moved' },
    ]);
    const batch = await connection.readChanges(table.id, since, { limit: 100, view: view.id });
    expect(batch.changes.find((change) => change.remoteId === shown)).toMatchObject({ kind: 'delete' });
  });

  it("honours NocoDB's 429s through the shared budget: every create lands once", async () => {
    const proxy = await startProxy(nocodb.server.url);
    try {
      let posts = 0;
      proxy.refuse = (method) => method === 'POST' && (posts += 1) % 2 === 1 && posts < 6;
      const shared = new LocalCoordination();
      const viaProxy = await nocodbConnector.connect(
        { baseUrl: proxy.url, apiToken: nocodb.server.token },
        nocodb.baseId,
        { ...nocodb.context, shared, settings: { NOCODB_REQUESTS_PER_SECOND: '50' } },
      );
      const table = await plain();
      await viaProxy.prepareTable(table.id, { changeCapture: false });
      const title = fieldId(table, 'title');
      const rows = Array.from({ length: 300 }, (_, index) => ({
        serviceId: randomUUID(),
        values: { [title]: `r${index}` },
      }));
      const results = await viaProxy.createRecords(table.id, rows);
      expect(results.every((result) => result.ok)).toBe(true);
      expect(proxy.stats.refused).toBeGreaterThanOrEqual(2);
      expect(await connection.countRecords!(table.id)).toBe(300);
    } finally {
      await proxy.close();
    }
  });

  it('adopts the records a create wrote when its answer was lost (no duplicate)', async () => {
    const proxy = await startProxy(nocodb.server.url);
    try {
      let dropped = false;
      proxy.dropAnswer = (method, path) => {
        if (dropped || method !== 'POST' || !path.includes('/records')) return false;
        dropped = true;
        return true;
      };
      const viaProxy = await nocodbConnector.connect(
        { baseUrl: proxy.url, apiToken: nocodb.server.token },
        nocodb.baseId,
        nocodb.context,
      );
      const table = await plain();
      await viaProxy.prepareTable(table.id, { changeCapture: false });
      const title = fieldId(table, 'title');
      const results = await viaProxy.createRecords(
        table.id,
        ['one', 'two'].map((value) => ({ serviceId: randomUUID(), values: { [title]: value } })),
      );
      expect(dropped).toBe(true);
      expect(results.every((result) => result.ok)).toBe(true);
      expect(await connection.countRecords!(table.id)).toBe(2);
    } finally {
      await proxy.close();
    }
  });

  it('reports NocoDB gone as transient, never echoing the token', async () => {
    const proxy = await startProxy(nocodb.server.url);
    proxy.down = true;
    try {
      const viaProxy = await nocodbConnector.connect(
        { baseUrl: proxy.url, apiToken: nocodb.server.token },
        nocodb.baseId,
        nocodb.context,
      );
      const error = await viaProxy.listTables().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ConnectorError);
      expect((error as ConnectorError).kind).toBe('transient');
      expect(String((error as Error).message)).not.toContain(nocodb.server.token);
    } finally {
      await proxy.close();
    }
  });

  it.each([
    [{ baseUrl: '', apiToken: 't' }, 'auth'],
    [{ baseUrl: 'not a url', apiToken: 't' }, 'invalid_data'],
    [{ baseUrl: 'ftp://nocodb.example.com', apiToken: 't' }, 'invalid_data'],
    [{ baseUrl: 'https://user:pw@nocodb.example.com', apiToken: 't' }, 'invalid_data'],
    [{ baseUrl: 'https://nocodb.example.com', apiToken: ' ' }, 'auth'],
  ])('refuses credentials %j with kind %s', async (credentials, kind) => {
    await expect(nocodbConnector.connect(credentials, null, nocodb.context)).rejects.toMatchObject({ kind });
  });

  it('refuses a baseUrl the egress policy forbids before any request', async () => {
    const strict = await nocodbConnector.connect(
      { baseUrl: nocodb.server.url, apiToken: nocodb.server.token },
      null,
      {
        egress: { allowPrivate: false, allowLoopback: false },
      },
    );
    await expect(strict.listBases()).rejects.toMatchObject({ kind: 'permission' });
  });
});
