import { collectAll, type HttpClient, paginate } from '@lockstep/connectors-http';
import type { AirtableSimulator } from './simulator';
import { refused, useSimulator } from './simulator-kit';
import type { SimBase } from './simulator-model';

// A generous limit, so that these tests never meet it (simulator-feeds.spec.ts tests the limits).
const sim = useSimulator({ perBasePerSecond: 1000, perTokenPerSecond: 1000, basesPageSize: 2 });
const client = sim.client;
let simulator: AirtableSimulator;
let base: SimBase;

beforeEach(() => {
  ({ simulator, base } = sim);
});

describe('authentication and metadata', () => {
  it('refuses a missing token and a token without the scope, as Airtable does', async () => {
    const nobody = await refused(client('patNOBODY').get('/v0/meta/bases'));
    expect([nobody.kind, nobody.appCode]).toEqual(['auth', 'AUTHENTICATION_REQUIRED']);
    simulator.addToken('patREADONLY', { scopes: ['data.records:read'] });
    const scoped = await refused(client('patREADONLY').get(`/v0/meta/bases/${base.id}/tables`));
    expect([scoped.kind, scoped.appCode]).toEqual(['permission', 'INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND']);
    simulator.addToken('patOAUTH', { oauth: true, scopes: ['data.records:read'] });
    expect(await client('patOAUTH').get('/v0/meta/whoami')).toMatchObject({ scopes: ['data.records:read'] });
  });

  it('lists bases page by page with offset, and a base schema with primary field and views', async () => {
    simulator.addBase('Support');
    simulator.addBase('Hiring');
    const http = client();
    const bases = await collectAll(
      paginate<{ name: string }>(async (offset) => {
        const page = await http.get<{ bases: { name: string }[]; offset?: string }>('/v0/meta/bases', {
          query: { offset },
        });
        return { items: page.bases, next: page.offset };
      }),
    );
    expect(bases.map((b) => b.name)).toEqual(['Sales', 'Support', 'Hiring']);
    const table = simulator.addTable(base, 'Deals', [
      { name: 'Name', type: 'singleLineText' },
      { name: 'Amount', type: 'currency', options: { precision: 2, symbol: '$' } },
    ]);
    const schema = await http.get<{
      tables: { id: string; primaryFieldId: string; fields: { type: string }[]; views: unknown[] }[];
    }>(`/v0/meta/bases/${base.id}/tables`);
    expect(schema.tables[0]).toMatchObject({
      id: table.id,
      primaryFieldId: table.fields[0]!.id,
      views: [{ name: 'Grid view', type: 'grid' }],
    });
    expect(schema.tables[0]!.fields.map((field) => field.type)).toEqual(['singleLineText', 'currency']);
  });

  it('creates tables and fields, refusing missing options, computed types and duplicate names', async () => {
    const http = client();
    const path = `/v0/meta/bases/${base.id}/tables`;
    const noPrecision = await refused(
      http.request({ method: 'POST', path, json: { name: 'T', fields: [{ name: 'N', type: 'number' }] } }),
    );
    expect([noPrecision.kind, noPrecision.appCode]).toEqual([
      'invalid_data',
      'INVALID_FIELD_TYPE_OPTIONS_FOR_CREATE',
    ]);
    const formula = await refused(
      http.request({ method: 'POST', path, json: { name: 'T', fields: [{ name: 'F', type: 'formula' }] } }),
    );
    expect(formula.appCode).toBe('INVALID_FIELD_TYPE');
    const people = await http.request<{ id: string }>({
      method: 'POST',
      path,
      json: { name: 'People', fields: [{ name: 'Name', type: 'singleLineText' }] },
    });
    const deals = await http.request<{ id: string }>({
      method: 'POST',
      path,
      json: { name: 'Deals', fields: [{ name: 'Title', type: 'singleLineText' }] },
    });
    const link = await http.request<{ options: { linkedTableId: string } }>({
      method: 'POST',
      path: `${path}/${deals.data.id}/fields`,
      json: { name: 'Owner', type: 'multipleRecordLinks', options: { linkedTableId: people.data.id } },
    });
    expect(link.data.options.linkedTableId).toBe(people.data.id);
    // The inverse link appears in the linked table, as in Airtable.
    expect(base.tables.find((t) => t.id === people.data.id)!.fields.map((f) => f.name)).toEqual([
      'Name',
      'Deals',
    ]);
    const duplicate = await refused(
      http.request({
        method: 'POST',
        path: `${path}/${deals.data.id}/fields`,
        json: { name: 'title', type: 'singleLineText' },
      }),
    );
    expect(duplicate.appCode).toBe('DUPLICATE_OR_EMPTY_FIELD_NAME');
  });
});

describe('records', () => {
  let tableId: string;
  const path = () => `/v0/${base.id}/${tableId}`;

  beforeEach(() => {
    const table = simulator.addTable(base, 'Deals', [
      { name: 'Name', type: 'singleLineText' },
      { name: 'Amount', type: 'number', options: { precision: 0 } },
      { name: 'Stage', type: 'singleSelect', options: { choices: [{ name: 'Open' }, { name: 'Won' }] } },
      { name: 'Done', type: 'checkbox', options: { icon: 'check', color: 'greenBright' } },
      { name: 'Lockstep ID', type: 'singleLineText' },
    ]);
    table.fields.push({ id: 'fldCREATEDTIME0001', name: 'Created', type: 'createdTime' });
    tableId = table.id;
  });

  async function create(http: HttpClient, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let start = 0; start < count; start += 10) {
      const records = Array.from({ length: Math.min(10, count - start) }, (_, i) => ({
        fields: { Name: `deal ${start + i}`, Amount: start + i },
      }));
      const response = await http.request<{ records: { id: string }[] }>({
        method: 'POST',
        path: path(),
        json: { records },
      });
      ids.push(...response.data.records.map((record) => record.id));
    }
    return ids;
  }

  it('creates in batches of at most 10 and lists in pages by offset, by field id when asked', async () => {
    const http = client();
    const ids = await create(http, 25);
    const eleven = Array.from({ length: 11 }, () => ({ fields: { Name: 'x' } }));
    expect(
      (await refused(http.request({ method: 'POST', path: path(), json: { records: eleven } }))).appCode,
    ).toBe('INVALID_RECORDS');
    const pages: string[][] = [];
    for await (const page of paginate<{ id: string; fields: Record<string, unknown> }>(async (offset) => {
      const body = await http.get<{
        records: { id: string; fields: Record<string, unknown> }[];
        offset?: string;
      }>(path(), {
        query: { pageSize: 10, offset, returnFieldsByFieldId: true },
      });
      return { items: body.records, next: body.offset };
    })) {
      pages.push(page.map((record) => record.id));
      expect(Object.keys(page[0]!.fields).every((key) => key.startsWith('fld'))).toBe(true);
    }
    expect(pages.map((page) => page.length)).toEqual([10, 10, 5]);
    expect(pages.flat()).toEqual(ids);
    const tooBig = await refused(http.get(path(), { query: { pageSize: 101 } }));
    expect(tooBig.kind).toBe('invalid_data');
  });

  it('omits empty values, limits fields, and filters by the formulas reading by id needs', async () => {
    const http = client();
    const [first, second] = await create(http, 3);
    const one = await http.get<{ fields: Record<string, unknown> }>(`${path()}/${first}`);
    expect(Object.keys(one.fields).sort()).toEqual(['Amount', 'Name']);
    const formula = `OR(RECORD_ID()='${first}',{Name}='deal 1')`;
    const found = await http.get<{ records: { id: string; fields: Record<string, unknown> }[] }>(path(), {
      query: { filterByFormula: formula, 'fields[]': ['Name'] },
    });
    expect(found.records.map((record) => record.id)).toEqual([first, second]);
    expect(found.records[0]!.fields).toEqual({ Name: 'deal 0' });
    const missing = await refused(http.get(`${path()}/recNOSUCHRECORD00`));
    expect([missing.kind, missing.appCode]).toEqual(['not_found', 'MODEL_ID_NOT_FOUND']);
  });

  it('refuses a bad value with its field named, and a refused record fails the whole batch', async () => {
    const http = client();
    const cases: [Record<string, unknown>, string][] = [
      [{ Created: '2026-01-01T00:00:00Z' }, 'INVALID_VALUE_FOR_COLUMN'],
      [{ Amount: 'twelve' }, 'INVALID_VALUE_FOR_COLUMN'],
      [{ Nope: 1 }, 'UNKNOWN_FIELD_NAME'],
      [{ Stage: 'Lost' }, 'INVALID_MULTIPLE_CHOICE_OPTIONS'],
    ];
    for (const [fields, code] of cases) {
      const error = await refused(
        http.request({
          method: 'POST',
          path: path(),
          json: { records: [{ fields: { Name: 'ok' } }, { fields }] },
        }),
      );
      expect([error.kind, error.appCode]).toEqual(['invalid_data', code]);
    }
    expect(base.tables[0]!.records.size).toBe(0);
    const typecast = await http.request<{ records: { fields: Record<string, unknown> }[] }>({
      method: 'POST',
      path: path(),
      json: { records: [{ fields: { Stage: 'Lost', Amount: '12' } }], typecast: true },
    });
    expect(typecast.data.records[0]!.fields).toMatchObject({ Stage: 'Lost', Amount: 12 });
  });

  it('refuses a dangling link, an unknown offset or view; a view limits the records', async () => {
    const http = client();
    const people = simulator.addTable(base, 'People', [{ name: 'Name', type: 'singleLineText' }]);
    const deals = base.tables[0]!;
    deals.fields.push({
      id: 'fldOWNERLINK00001',
      name: 'Owner',
      type: 'multipleRecordLinks',
      options: { linkedTableId: people.id },
    });
    const ann = simulator.outside.insert(base, people.id, { Name: 'Ann' });
    const linked = await http.request<{ records: { id: string }[] }>({
      method: 'POST',
      path: path(),
      json: { records: [{ fields: { Name: 'linked', Owner: [ann] } }, { fields: { Name: 'alone' } }] },
    });
    const dangling = await refused(
      http.request({
        method: 'POST',
        path: path(),
        json: { records: [{ fields: { Owner: ['recNOSUCHRECORD00'] } }] },
      }),
    );
    expect([dangling.kind, dangling.appCode]).toEqual(['invalid_data', 'ROW_DOES_NOT_EXIST']);
    const offset = await refused(http.get(path(), { query: { offset: 'itrNOSUCHITERATOR/rec' } }));
    expect(offset.appCode).toBe('LIST_RECORDS_ITERATOR_NOT_AVAILABLE');
    expect((await refused(http.get(path(), { query: { view: 'Nope' } }))).appCode).toBe(
      'VIEW_NAME_NOT_FOUND',
    );
    deals.views.push({
      id: 'viwLINKEDONLY0001',
      name: 'Linked',
      type: 'grid',
      filter: (record) => Boolean(record.fields.fldOWNERLINK00001),
    });
    const inView = await http.get<{ records: { id: string }[] }>(path(), {
      query: { view: 'viwLINKEDONLY0001' },
    });
    expect(inView.records.map((record) => record.id)).toEqual([linked.data.records[0]!.id]);
  });

  it('upserts on the service id field: a repeated create adopts the record', async () => {
    const http = client();
    const upsert = (name: string) =>
      http.request<{ records: { id: string }[]; createdRecords: string[]; updatedRecords: string[] }>({
        method: 'PATCH',
        path: path(),
        json: {
          performUpsert: { fieldsToMergeOn: ['Lockstep ID'] },
          records: [{ fields: { 'Lockstep ID': 'svc-1', Name: name } }],
        },
        idempotent: true,
      });
    const first = await upsert('first');
    const again = await upsert('again');
    expect(first.data.createdRecords).toHaveLength(1);
    expect(again.data.updatedRecords).toEqual(first.data.createdRecords);
    expect(base.tables[0]!.records.size).toBe(1);
  });

  it('updates by PATCH (merge) and PUT (replace), and deletes by records[]', async () => {
    const http = client();
    const [id] = await create(http, 1);
    await http.request({
      method: 'PATCH',
      path: path(),
      json: { records: [{ id, fields: { Done: true } }] },
    });
    expect(await http.get(`${path()}/${id}`)).toMatchObject({ fields: { Name: 'deal 0', Done: true } });
    await http.request({
      method: 'PUT',
      path: path(),
      json: { records: [{ id, fields: { Name: 'only' } }] },
    });
    expect(await http.get(`${path()}/${id}`)).toMatchObject({ fields: { Name: 'only' } });
    const gone = await refused(
      http.request({
        method: 'PATCH',
        path: path(),
        json: { records: [{ id: 'recNOSUCHRECORD00', fields: {} }] },
      }),
    );
    expect(gone.kind).toBe('not_found');
    const deleted = await http.request({ method: 'DELETE', path: path(), query: { 'records[]': [id!] } });
    expect(deleted.data).toEqual({ records: [{ id, deleted: true }] });
    expect(
      (await refused(http.request({ method: 'DELETE', path: path(), query: { 'records[]': [id!] } }))).kind,
    ).toBe('not_found');
  });
});
