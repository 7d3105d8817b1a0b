/**
 * The contract suite's tables in the simulator: the fixture with one field of every Airtable type (computed
 * types added to the schema as a base made by a person has them: the API cannot create them), the plain
 * tables, and writes "outside Lockstep" as a person in Airtable makes them (`simulator.outside`).
 */
import type { FixtureColumn, OutsideWriter } from '@lockstep/connectors-core/testing';
import type { AirtableSimulator } from '../testing/simulator';
import { findTable, type SimBase } from '../testing/simulator-model';

type Created = { name: string; type: string; options?: Record<string, unknown> };

const rw = (
  name: string,
  type: string,
  typeClass: FixtureColumn['typeClass'],
  extra: Partial<FixtureColumn> = {},
) => ({ name, type, typeClass, read: true, write: true, ...extra }) as FixtureColumn;
const ro = (name: string, type: string, typeClass: FixtureColumn['typeClass']) =>
  ({ name, type, typeClass, read: true, write: false }) as FixtureColumn;

export const CREATED: Created[] = [
  { name: 'name', type: 'singleLineText' },
  { name: 'notes', type: 'multilineText' },
  { name: 'rich', type: 'richText' },
  { name: 'email', type: 'email' },
  { name: 'site', type: 'url' },
  { name: 'phone', type: 'phoneNumber' },
  { name: 'count', type: 'number', options: { precision: 0 } },
  { name: 'price', type: 'number', options: { precision: 2 } },
  { name: 'share', type: 'percent', options: { precision: 1 } },
  { name: 'cost', type: 'currency', options: { precision: 2, symbol: '€' } },
  { name: 'stars', type: 'rating', options: { max: 5, icon: 'star', color: 'yellowBright' } },
  { name: 'spent', type: 'duration', options: { durationFormat: 'h:mm:ss' } },
  { name: 'done', type: 'checkbox', options: { icon: 'check', color: 'greenBright' } },
  { name: 'due', type: 'date', options: { dateFormat: { name: 'iso' } } },
  {
    name: 'at',
    type: 'dateTime',
    options: { dateFormat: { name: 'iso' }, timeFormat: { name: '24hour' }, timeZone: 'utc' },
  },
  { name: 'stage', type: 'singleSelect', options: { choices: [{ name: 'new' }, { name: 'won' }] } },
  { name: 'tags', type: 'multipleSelects', options: { choices: [{ name: 'a' }, { name: 'b' }] } },
  { name: 'owner', type: 'singleCollaborator' },
  { name: 'team', type: 'multipleCollaborators' },
  { name: 'files', type: 'multipleAttachments' },
  { name: 'code', type: 'barcode' },
];

const COMPUTED: Created[] = [
  { name: 'total', type: 'formula', options: { result: { type: 'number', options: { precision: 2 } } } },
  { name: 'sum', type: 'rollup', options: { result: { type: 'number', options: { precision: 0 } } } },
  { name: 'links', type: 'count' },
  { name: 'lookup', type: 'multipleLookupValues' },
  { name: 'created', type: 'createdTime' },
  { name: 'modified', type: 'lastModifiedTime' },
  { name: 'creator', type: 'createdBy' },
  { name: 'editor', type: 'lastModifiedBy' },
  { name: 'number', type: 'autoNumber' },
  { name: 'open', type: 'button' },
  { name: 'summary', type: 'aiText' },
];

const attachment = { url: 'https://files.example.com/a.png', filename: 'a.png' };

export const FIXTURE_COLUMNS: FixtureColumn[] = [
  rw('name', 'singleLineText', 'text', { primary: true, required: false, samples: ['hello', 'ünï ✓'] }),
  rw('notes', 'multilineText', 'text', { samples: ['line 1\nline 2'] }),
  rw('rich', 'richText', 'text', { samples: ['**bold**'] }),
  rw('email', 'email', 'text', { samples: ['ann@example.com'] }),
  rw('site', 'url', 'text', { samples: ['https://example.com/x'] }),
  rw('phone', 'phoneNumber', 'text', { samples: ['+1 555 0100'] }),
  rw('count', 'number', 'integer', { samples: [0, 42, -7], typeDetails: { scale: 0 } }),
  rw('price', 'number', 'decimal', { samples: ['12.50', '-0.01'], typeDetails: { scale: 2 } }),
  rw('share', 'percent', 'float', { samples: [0.5, 1.25] }),
  rw('cost', 'currency', 'decimal', { samples: ['9.99'], typeDetails: { symbol: '€' } }),
  rw('stars', 'rating', 'integer', { samples: [3], typeDetails: { max: 5 } }),
  rw('spent', 'duration', 'interval', { samples: ['PT1H30M', 'P1DT2H'] }),
  // A checkbox has no empty value (an unchecked box reads false), so null cannot round-trip: types.spec.ts.
  rw('done', 'checkbox', 'boolean'),
  rw('due', 'date', 'date', { samples: ['2024-02-29'] }),
  rw('at', 'dateTime', 'timestamp', { samples: ['2024-02-29T13:45:30Z'], typeDetails: { time_zone: 'utc' } }),
  rw('stage', 'singleSelect', 'select', { samples: ['won'], typeDetails: { options: ['new', 'won'] } }),
  rw('tags', 'multipleSelects', 'multi_select', {
    samples: [['a', 'b']],
    normalized: [{ write: [], read: null }],
    typeDetails: { allows_multiple_values: true },
  }),
  // Airtable answers a collaborator with its id and name: connection specs check the written email.
  rw('owner', 'singleCollaborator', 'json'),
  rw('team', 'multipleCollaborators', 'json'),
  rw('files', 'multipleAttachments', 'json', {
    normalized: [
      { write: [attachment], read: [{ ...attachment, size: 0, type: 'application/octet-stream' }] },
    ],
  }),
  rw('code', 'barcode', 'json', { samples: [{ text: '4006381333931' }] }),
  ro('total', 'formula', 'decimal'),
  ro('sum', 'rollup', 'integer'),
  ro('links', 'count', 'integer'),
  ro('lookup', 'multipleLookupValues', 'json'),
  ro('created', 'createdTime', 'timestamp'),
  ro('modified', 'lastModifiedTime', 'timestamp'),
  ro('creator', 'createdBy', 'json'),
  ro('editor', 'lastModifiedBy', 'json'),
  ro('number', 'autoNumber', 'integer'),
  ro('open', 'button', 'json'),
  { name: 'summary', type: 'aiText', typeClass: 'unsupported', read: false, write: false },
];

export async function createFixtureTable(simulator: AirtableSimulator, base: SimBase, name: string) {
  const table = simulator.addTable(base, name, CREATED);
  COMPUTED.forEach((field, index) =>
    table.fields.push({ id: `fldCOMPUTED${String(index).padStart(6, '0')}`, ...field }),
  );
}

export async function createPlainTable(
  simulator: AirtableSimulator,
  base: SimBase,
  name: string,
  options: { primaryKey: boolean },
) {
  simulator.addTable(base, name, [
    ...(options.primaryKey ? [{ name: 'id', type: 'number', options: { precision: 0 } }] : []),
    { name: 'title', type: 'singleLineText' },
    { name: 'amount', type: 'number', options: { precision: 0 } },
  ]);
}

/** The records of `table` whose fields (by name) hold `where`'s values. */
function matching(base: SimBase, table: string, where: Record<string, string | number>): string[] {
  const sim = findTable(base, table);
  if (!sim) throw new Error(`no table ${table}`);
  const ids = Object.entries(where).map(([name, value]) => [
    sim.fields.find((f) => f.name === name)!.id,
    value,
  ]);
  return [...sim.records.values()]
    .filter((record) => ids.every(([id, value]) => String(record.fields[id!] ?? '') === String(value)))
    .map((record) => record.id);
}

export function outsideWriter(current: () => [AirtableSimulator, SimBase]): OutsideWriter {
  return {
    insert: async (table, values) => {
      const [simulator, base] = current();
      simulator.outside.insert(base, table, values);
    },
    update: async (table, where, values) => {
      const [simulator, base] = current();
      for (const id of matching(base, table, where)) simulator.outside.update(base, table, id, values);
    },
    delete: async (table, where) => {
      const [simulator, base] = current();
      for (const id of matching(base, table, where)) simulator.outside.delete(base, table, id);
    },
  };
}
