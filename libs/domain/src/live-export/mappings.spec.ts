import type { LiveExportPlan } from './plan';
import {
  buildLiveExportPlan,
  exportDefaultName,
  type ExportSourceField,
  type LiveExportValidationContext,
  parseLiveExportMappings,
  validateLiveExportMappings,
} from './mappings';

const field = (
  remoteId: string,
  typeClass: ExportSourceField['typeClass'] = 'text',
  extra: Partial<ExportSourceField> = {},
): ExportSourceField => ({
  remoteId,
  name: remoteId,
  type: typeClass === 'integer' ? 'bigint' : 'text',
  typeClass,
  read: true,
  typeDetails: null,
  ...extra,
});

const context = (over: Partial<LiveExportValidationContext> = {}): LiveExportValidationContext => ({
  sourceTables: [
    { remoteId: 'customers', name: 'customers' },
    { remoteId: 'orders', name: 'orders' },
    { remoteId: 'dup_a', name: 'Twin' },
    { remoteId: 'dup_b', name: 'Twin' },
  ],
  sourceFields: new Map([
    [
      'customers',
      [
        field('id', 'integer'),
        field('email'),
        field('Full Name'),
        field('owner_id', 'relation'),
        field('blob', 'unsupported'),
        field('secret', 'text', { read: false }),
      ],
    ],
    ['orders', [field('id', 'integer'), field('total')]],
  ]),
  destinationTables: new Map(),
  applied: null,
  ...over,
});

const parse = (raw: unknown) => {
  const parsed = parseLiveExportMappings(raw);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.document;
};
const codes = (raw: unknown, over: Partial<LiveExportValidationContext> = {}) =>
  validateLiveExportMappings(parse(raw), context(over)).issues.map((issue) => [issue.code, issue.path]);

const applied: LiveExportPlan = {
  source: { connector: 'postgres', base: 'public' },
  destination: { connector: 'mysql', location: 'warehouse' },
  tables: [
    {
      sourceTable: 'customers',
      destinationTable: 'crm_customers',
      columns: [
        { sourceField: 'id', column: 'id', typeClass: 'integer' },
        { sourceField: 'email', column: 'email', typeClass: 'text' },
      ],
    },
  ],
};

describe('live export mappings: structure', () => {
  it.each([
    [null, ''],
    [{}, 'tables'],
    [{ tables: [], extra: 1 }, '.extra'],
    [{ tables: [{ fields: [] }] }, 'tables[0].source_table'],
    [{ tables: [{ source_table: 'customers' }] }, 'tables[0].fields'],
    [
      { tables: [{ source_table: 'customers', destination_table: 'bad name', fields: [] }] },
      'tables[0].destination_table',
    ],
    [
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'id', destination_field: '1st' }] }] },
      'tables[0].fields[0].destination_field',
    ],
    [
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'id', primary: 'yes' }] }] },
      'tables[0].fields[0].primary',
    ],
    [
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'id', colour: 'red' }] }] },
      'tables[0].fields[0].colour',
    ],
  ])('refuses %j at %s', (raw, path) => {
    const parsed = parseLiveExportMappings(raw);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problems.map((p) => p.path)).toContain(path);
  });

  it.each([
    ['Full Name', 'Full_Name'],
    ['  weird--name!! ', 'weird_name'],
    ['2024 sales', '_2024_sales'],
    ['***', 'column'],
    ['x'.repeat(80), 'x'.repeat(63)],
  ])('default name of %j is %j', (source, expected) => {
    expect(exportDefaultName(source)).toBe(expected);
  });
});

describe('live export mappings: validation', () => {
  it('resolves names, fills defaults and finds no issue in a good document', () => {
    const result = validateLiveExportMappings(
      parse({
        tables: [
          {
            source_table: 'customers',
            fields: [{ source_field: 'id', primary: true }, { source_field: 'Full Name' }],
          },
        ],
      }),
      context(),
    );
    expect(result.issues).toEqual([]);
    expect(result.document).toEqual({
      tables: [
        {
          source_table: 'customers',
          destination_table: 'customers',
          fields: [
            { source_field: 'id', destination_field: 'id', primary: true },
            { source_field: 'Full Name', destination_field: 'Full_Name', primary: false },
          ],
        },
      ],
    });
  });

  it.each([
    [
      'unknown table',
      { tables: [{ source_table: 'nope', fields: [{ source_field: 'id' }] }] },
      [['unknown_source_table', 'tables[0]']],
    ],
    [
      'ambiguous table name',
      { tables: [{ source_table: 'Twin', fields: [{ source_field: 'id' }] }] },
      [['unknown_source_table', 'tables[0]']],
    ],
    [
      'same table twice',
      {
        tables: [
          { source_table: 'customers', destination_table: 'a', fields: [{ source_field: 'id' }] },
          { source_table: 'customers', destination_table: 'b', fields: [{ source_field: 'id' }] },
        ],
      },
      [['duplicate_source_table', 'tables[1]']],
    ],
    [
      'same destination twice',
      {
        tables: [
          { source_table: 'customers', destination_table: 'x', fields: [{ source_field: 'id' }] },
          { source_table: 'orders', destination_table: 'X', fields: [{ source_field: 'id' }] },
        ],
      },
      [['duplicate_destination_table', 'tables[1]']],
    ],
    [
      'no fields',
      { tables: [{ source_table: 'customers', fields: [] }] },
      [['empty_table_mapping', 'tables[0]']],
    ],
    [
      'unknown field',
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'nope' }] }] },
      [['unknown_source_field', 'tables[0].fields[0]']],
    ],
    [
      'link field',
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'owner_id' }] }] },
      [['unknown_source_field', 'tables[0].fields[0]']],
    ],
    [
      'unsupported field',
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'blob' }] }] },
      [['unknown_source_field', 'tables[0].fields[0]']],
    ],
    [
      'unreadable field',
      { tables: [{ source_table: 'customers', fields: [{ source_field: 'secret' }] }] },
      [['unknown_source_field', 'tables[0].fields[0]']],
    ],
    [
      'two fields, one column',
      {
        tables: [
          {
            source_table: 'customers',
            fields: [
              { source_field: 'id', destination_field: 'k' },
              { source_field: 'email', destination_field: 'K' },
            ],
          },
        ],
      },
      [['duplicate_field_name', 'tables[0].fields[1]']],
    ],
    [
      'hidden column name',
      {
        tables: [
          {
            source_table: 'customers',
            fields: [{ source_field: 'id', destination_field: 'lockstep_source_id' }],
          },
        ],
      },
      [['duplicate_field_name', 'tables[0].fields[0]']],
    ],
    [
      'two primaries',
      {
        tables: [
          {
            source_table: 'customers',
            fields: [
              { source_field: 'id', primary: true },
              { source_field: 'email', primary: true },
            ],
          },
        ],
      },
      [['multiple_primary_fields', 'tables[0]']],
    ],
  ])('%s', (_name, raw, expected) => {
    expect(codes(raw)).toEqual(expected);
  });

  it("existing_field_not_supported: a column that exists in the destination and is not the export's own", () => {
    const destinationTables = new Map([['customers', { columns: ['email', 'notes'] }]]);
    expect(
      codes(
        {
          tables: [
            { source_table: 'customers', fields: [{ source_field: 'id' }, { source_field: 'email' }] },
          ],
        },
        { destinationTables },
      ),
    ).toEqual([['existing_field_not_supported', 'tables[0].fields[1]']]);
    // An existing table without clashing columns is fine.
    expect(
      codes(
        { tables: [{ source_table: 'customers', fields: [{ source_field: 'id' }] }] },
        { destinationTables },
      ),
    ).toEqual([]);
  });

  it("applied tables: adding a field is allowed, the saved columns are the export's own", () => {
    const destinationTables = new Map([['crm_customers', { columns: ['id', 'email'] }]]);
    expect(
      codes(
        {
          tables: [
            {
              source_table: 'customers',
              destination_table: 'crm_customers',
              fields: [
                { source_field: 'id' },
                { source_field: 'email' },
                { source_field: 'Full Name', destination_field: 'name' },
              ],
            },
          ],
        },
        { destinationTables, applied },
      ),
    ).toEqual([]);
    // Leaving the applied table out entirely is allowed.
    expect(
      codes(
        { tables: [{ source_table: 'orders', fields: [{ source_field: 'id' }] }] },
        { destinationTables, applied },
      ),
    ).toEqual([]);
  });

  it.each([
    [
      'renamed table',
      {
        tables: [
          {
            source_table: 'customers',
            destination_table: 'other',
            fields: [{ source_field: 'id' }, { source_field: 'email' }],
          },
        ],
      },
    ],
    [
      'dropped column',
      {
        tables: [
          { source_table: 'customers', destination_table: 'crm_customers', fields: [{ source_field: 'id' }] },
        ],
      },
    ],
    [
      'renamed column',
      {
        tables: [
          {
            source_table: 'customers',
            destination_table: 'crm_customers',
            fields: [{ source_field: 'id' }, { source_field: 'email', destination_field: 'mail' }],
          },
        ],
      },
    ],
    [
      're-pointed column',
      {
        tables: [
          {
            source_table: 'customers',
            destination_table: 'crm_customers',
            fields: [{ source_field: 'id' }, { source_field: 'Full Name', destination_field: 'email' }],
          },
        ],
      },
    ],
    [
      'another source takes the table',
      {
        tables: [
          { source_table: 'orders', destination_table: 'crm_customers', fields: [{ source_field: 'id' }] },
        ],
      },
    ],
  ])('applied_table_not_editable: %s', (_name, raw) => {
    expect(codes(raw, { applied })).toEqual([['applied_table_not_editable', 'tables[0]']]);
  });

  it('builds the plan with types from the source', () => {
    const ctx = context();
    const { document } = validateLiveExportMappings(
      parse({
        tables: [
          {
            source_table: 'customers',
            destination_table: 'c',
            fields: [{ source_field: 'id', primary: true }],
          },
        ],
      }),
      ctx,
    );
    expect(
      buildLiveExportPlan(document, ctx, {
        source: { connector: 'postgres', base: 'public' },
        destination: { connector: 'mysql', location: 'w' },
      }),
    ).toEqual({
      source: { connector: 'postgres', base: 'public' },
      destination: { connector: 'mysql', location: 'w' },
      tables: [
        {
          sourceTable: 'customers',
          destinationTable: 'c',
          columns: [
            {
              sourceField: 'id',
              column: 'id',
              typeClass: 'integer',
              sourceType: 'bigint',
              typeDetails: null,
              primary: true,
            },
          ],
        },
      ],
    });
  });
});
