/**
 * The contract suite's tables in the real NocoDB: the fixture with one field of every NocoDB type the meta API
 * creates (computed ones included: formula, rollup, lookup, links, auto number), the plain tables, and writes
 * "outside Lockstep" through NocoDB's data API with the server's own token, as a person's script would.
 */
import type { FixtureColumn, OutsideWriter } from '@lockstep/connectors-core/testing';
import { admin, type NocodbServer, tableIdByTitle } from './server';

type Column = { title: string; uidt: string; [option: string]: unknown };

const rw = (
  name: string,
  type: string,
  typeClass: FixtureColumn['typeClass'],
  extra: Partial<FixtureColumn> = {},
) => ({ name, type, typeClass, read: true, write: true, ...extra }) as FixtureColumn;
const ro = (
  name: string,
  type: string,
  typeClass: FixtureColumn['typeClass'],
  extra: Partial<FixtureColumn> = {},
) => ({ name, type, typeClass, read: true, write: false, ...extra }) as FixtureColumn;

export const CREATED: Column[] = [
  { title: 'name', uidt: 'SingleLineText' },
  { title: 'notes', uidt: 'LongText' },
  { title: 'email', uidt: 'Email' },
  { title: 'site', uidt: 'URL' },
  { title: 'phone', uidt: 'PhoneNumber' },
  { title: 'count', uidt: 'Number' },
  { title: 'price', uidt: 'Decimal', meta: { precision: 2 } },
  { title: 'cost', uidt: 'Currency', meta: { currency_locale: 'en-US', currency_code: 'EUR' } },
  { title: 'share', uidt: 'Percent' },
  { title: 'stars', uidt: 'Rating', meta: { max: 5 } },
  { title: 'spent', uidt: 'Duration', meta: { duration: 1 } },
  { title: 'minutes', uidt: 'Duration', meta: { duration: 0 } },
  { title: 'done', uidt: 'Checkbox' },
  { title: 'due', uidt: 'Date', meta: { date_format: 'YYYY-MM-DD' } },
  { title: 'at', uidt: 'DateTime' },
  { title: 'clock', uidt: 'Time' },
  { title: 'year', uidt: 'Year' },
  { title: 'stage', uidt: 'SingleSelect', dtxp: "'new','won'" },
  { title: 'tags', uidt: 'MultiSelect', dtxp: "'a','b','c d'" },
  { title: 'data', uidt: 'JSON' },
  { title: 'files', uidt: 'Attachment' },
  { title: 'geo', uidt: 'GeoData' },
  { title: 'who', uidt: 'User' },
];

const attachment = { url: 'https://files.example.com/a.png', filename: 'a.png', size: 10, type: 'image/png' };

export const FIXTURE_COLUMNS: FixtureColumn[] = [
  ro('Id', 'ID', 'integer', { primary: true }),
  ro('CreatedAt', 'CreatedTime', 'timestamp'),
  ro('UpdatedAt', 'LastModifiedTime', 'timestamp'),
  ro('nc_created_by', 'CreatedBy', 'json'),
  ro('nc_updated_by', 'LastModifiedBy', 'json'),
  rw('name', 'SingleLineText', 'text', { samples: ['hello', 'ünï ✓ "q" \\ back'] }),
  rw('notes', 'LongText', 'text', { samples: ['line 1\nline 2'] }),
  rw('email', 'Email', 'text', { samples: ['ann@example.com'] }),
  rw('site', 'URL', 'text', { samples: ['https://example.com/x'] }),
  rw('phone', 'PhoneNumber', 'text', { samples: ['+1 555 0100'] }),
  rw('count', 'Number', 'integer', { samples: [0, 42, -7, 9007199254740991] }),
  rw('price', 'Decimal', 'decimal', { samples: ['12.50', '-0.01'], typeDetails: { scale: 2 } }),
  rw('cost', 'Currency', 'decimal', { samples: ['9.99'], typeDetails: { currency_code: 'EUR' } }),
  rw('share', 'Percent', 'float', { samples: [50, 12.5] }),
  // A rating has no empty value: an unset one reads 0 (types.spec.ts).
  rw('stars', 'Rating', 'integer', { samples: [3], typeDetails: { max: 5 } }),
  rw('spent', 'Duration', 'interval', {
    samples: ['PT1H30M', 'P1DT2H', 'PT45S'],
    typeDetails: { duration_format: 1 },
  }),
  rw('minutes', 'Duration', 'interval', { samples: ['PT1H30M'], typeDetails: { duration_format: 0 } }),
  // A checkbox has no empty value (an unchecked box reads false), so null cannot round-trip: types.spec.ts.
  rw('done', 'Checkbox', 'boolean'),
  rw('due', 'Date', 'date', { samples: ['2024-02-29'] }),
  rw('at', 'DateTime', 'timestamp', { samples: ['2024-02-29T13:45:30Z'], typeDetails: { time_zone: 'utc' } }),
  rw('clock', 'Time', 'time', { samples: ['13:45:30'] }),
  rw('year', 'Year', 'integer', { samples: [2024] }),
  rw('stage', 'SingleSelect', 'select', { samples: ['won'], typeDetails: { options: ['new', 'won'] } }),
  rw('tags', 'MultiSelect', 'multi_select', {
    samples: [['a', 'c d']],
    normalized: [{ write: [], read: null }],
    typeDetails: { allows_multiple_values: true, options: ['a', 'b', 'c d'] },
  }),
  rw('data', 'JSON', 'json', { samples: [{ a: 1, b: [true, null, 'x'] }] }),
  rw('files', 'Attachment', 'json', { samples: [[attachment]] }),
  rw('geo', 'GeoData', 'text', { samples: ['50.1;8.6'] }),
  rw('who', 'User', 'json'),
  rw('people', 'Links', 'relation', { typeDetails: { allows_multiple_values: true } }),
  ro('total', 'Formula', 'text'),
  ro('names', 'Lookup', 'json'),
  ro('linked', 'Rollup', 'float'),
  ro('number', 'AutoNumber', 'integer'),
];

/** The fixture table `name` in `baseId`, with a `<name>_people` table its links point at. */
export async function createFixtureTable(server: NocodbServer, baseId: string, name: string): Promise<void> {
  const people = await admin<{ id: string; columns: { id: string; title: string }[] }>(
    server,
    'POST',
    `/api/v2/meta/bases/${baseId}/tables`,
    {
      title: `${name}_people`,
      table_name: `${name}_people`,
      columns: [{ title: 'pname', uidt: 'SingleLineText' }],
    },
  );
  const table = await admin<{ id: string }>(server, 'POST', `/api/v2/meta/bases/${baseId}/tables`, {
    title: name,
    table_name: name,
    columns: CREATED,
  });
  const add = (body: Record<string, unknown>) =>
    admin<{ columns: { id: string; title: string }[] }>(
      server,
      'POST',
      `/api/v2/meta/tables/${table.id}/columns`,
      body,
    );
  const linked = await add({
    title: 'people',
    uidt: 'Links',
    parentId: table.id,
    childId: people.id,
    type: 'mm',
  });
  const link = linked.columns.find((column) => column.title === 'people')!;
  const pname = people.columns.find((column) => column.title === 'pname')!;
  await add({ title: 'total', uidt: 'Formula', formula_raw: '{count} * 2' });
  await add({
    title: 'names',
    uidt: 'Lookup',
    fk_relation_column_id: link.id,
    fk_lookup_column_id: pname.id,
  });
  await add({
    title: 'linked',
    uidt: 'Rollup',
    fk_relation_column_id: link.id,
    fk_rollup_column_id: people.columns.find((column) => column.title === 'Id')!.id,
    rollup_function: 'count',
  });
  await add({ title: 'number', uidt: 'AutoNumber' });
}

export async function createPlainTable(
  server: NocodbServer,
  baseId: string,
  name: string,
  options: { primaryKey: boolean },
): Promise<void> {
  await admin(server, 'POST', `/api/v2/meta/bases/${baseId}/tables`, {
    title: name,
    table_name: name,
    columns: [
      ...(options.primaryKey ? [{ title: 'id', column_name: 'ref_id', uidt: 'Number' }] : []),
      { title: 'title', uidt: 'SingleLineText' },
      { title: 'amount', uidt: 'Number' },
    ],
  });
}

async function idsWhere(
  server: NocodbServer,
  table: string,
  where: Record<string, string | number>,
): Promise<number[]> {
  const clause = Object.entries(where)
    .map(([title, value]) => `(${title},eq,${value})`)
    .join('~and');
  const page = await admin<{ list: { Id: number }[] }>(
    server,
    'GET',
    `/api/v2/tables/${table}/records?limit=1000&fields=Id&where=${encodeURIComponent(clause)}`,
  );
  return page.list.map((row) => row.Id);
}

export function outsideWriter(current: () => [NocodbServer, string]): OutsideWriter {
  return {
    insert: async (table, values) => {
      const [server, baseId] = current();
      await admin(server, 'POST', `/api/v2/tables/${await tableIdByTitle(server, baseId, table)}/records`, [
        values,
      ]);
    },
    update: async (table, where, values) => {
      const [server, baseId] = current();
      const id = await tableIdByTitle(server, baseId, table);
      const rows = (await idsWhere(server, id, where)).map((Id) => ({ Id, ...values }));
      if (rows.length > 0) await admin(server, 'PATCH', `/api/v2/tables/${id}/records`, rows);
    },
    delete: async (table, where) => {
      const [server, baseId] = current();
      const id = await tableIdByTitle(server, baseId, table);
      const rows = (await idsWhere(server, id, where)).map((Id) => ({ Id }));
      if (rows.length > 0) await admin(server, 'DELETE', `/api/v2/tables/${id}/records`, rows);
    },
  };
}
