import { parseMappings } from './document';
import { VALIDATION_CODES, ValidationIssue } from './issues';
import { MappingsSchema } from './schema';
import { baseDocument, schema } from './test/fixtures';
import { validateMappings } from './validate';

type Json = Record<string, unknown>;
type Doc = { tables: Json[] };

function run(doc: Doc, sides: MappingsSchema = schema()): ValidationIssue[] {
  const parsed = parseMappings(doc);
  if (!parsed.ok) throw new Error(`fixture is malformed: ${JSON.stringify(parsed.issues)}`);
  return validateMappings(parsed.document, sides);
}

const pair0 = (doc: Doc) => doc.tables[0] as Json & { fields: Json[]; right?: Json };
const addField = (doc: Doc, field: Json) => pair0(doc).fields.push(field);

type Expected = Partial<Omit<ValidationIssue, 'message'>> & { message?: string | RegExp };

type Case = [string, (doc: Doc, sides: MappingsSchema) => void, Expected[]];

const CASES: Case[] = [
  [
    'no table pair',
    (doc) => (doc.tables = []),
    [
      {
        code: 'nothing_mapped',
        path: '/tables',
        side: null,
        severity: 'error',
        message: /Nothing is mapped yet/,
      },
    ],
  ],
  // references
  [
    'unknown table',
    (doc) => (pair0(doc).left_table = 'nope'),
    [
      {
        code: 'unknown_table',
        path: '/tables/0/left_table',
        side: 'left',
        severity: 'error',
        message: /no left table has the id, remote id or name "nope"/,
      },
    ],
  ],
  [
    'a table id of the other side',
    (doc) => (pair0(doc).left_table = 'table_r1'),
    [{ code: 'unknown_table', path: '/tables/0/left_table', message: /"table_r1" is a right table/ }],
  ],
  [
    'an ambiguous table name',
    (doc) => (pair0(doc).left_table = 'dup'),
    [
      {
        code: 'table_ambiguous',
        path: '/tables/0/left_table',
        side: 'left',
        message: /2 left tables are named "dup" \(table_l4, table_l5\)/,
      },
    ],
  ],
  [
    'an orphaned table',
    (doc) =>
      Object.assign(pair0(doc), { left_table: 'gone', fields: [{ left_field: 'x', right_field: 'Name' }] }),
    [
      {
        code: 'orphaned_table',
        path: '/tables/0/left_table',
        side: 'left',
        message: /no longer exists in the app; refresh/,
      },
    ],
  ],
  [
    'an unknown field',
    (doc) => addField(doc, { left_field: 'nope', right_field: 'Count' }),
    [
      {
        code: 'unknown_field',
        path: '/tables/0/fields/2/left_field',
        side: 'left',
        message: /has no field with the id, remote id or name "nope"/,
      },
    ],
  ],
  [
    'an ambiguous field name',
    (doc) => addField(doc, { left_field: 'nickname', right_field: 'Tag' }),
    [
      {
        code: 'unknown_field',
        path: '/tables/0/fields/2/right_field',
        side: 'right',
        message: /the name "Tag" is ambiguous: 2 fields/,
      },
    ],
  ],
  [
    'a field of another table on the same side',
    (doc) => addField(doc, { left_field: 'field_l2c', right_field: 'Count' }),
    [
      {
        code: 'unknown_field',
        path: '/tables/0/fields/2/left_field',
        message: /field of the left table "orders", not of "customers"/,
      },
    ],
  ],
  [
    'a field id of the other side',
    (doc) => addField(doc, { left_field: 'field_r1j', right_field: 'Count' }),
    [{ code: 'unknown_field', path: '/tables/0/fields/2/left_field', message: /is a right field/ }],
  ],
  [
    'a field on a table whose fields were never fetched',
    (doc) =>
      Object.assign(pair0(doc), {
        left_table: 'unfetched',
        fields: [{ left_field: 'x', right_field: 'Name' }],
      }),
    [{ code: 'unknown_field', path: '/tables/0/fields/0/left_field', message: /have not been fetched/ }],
  ],
  [
    'an orphaned field',
    (doc) => addField(doc, { left_field: 'old', right_field: 'Tag', direction: 'left_to_right' }),
    [{ code: 'orphaned_field', path: '/tables/0/fields/2/left_field', side: 'left' }],
  ],
  // views
  [
    'a required view missing',
    (doc) => delete pair0(doc).right,
    [
      {
        code: 'view_required',
        path: '/tables/0/right/view',
        side: 'right',
        message: /choose one of: "viwAll" \(All\), "viwActive" \(Active\)/,
      },
    ],
  ],
  [
    'a view not offered',
    (doc) => (pair0(doc).right = { view: 'viwNope' }),
    [{ code: 'view_not_found', path: '/tables/0/right/view', side: 'right' }],
  ],
  [
    'a view on a table without views',
    (doc) => (pair0(doc).left = { view: 'v1' }),
    [{ code: 'view_not_supported', path: '/tables/0/left/view', side: 'left' }],
  ],
  [
    'a view alias on a table without views',
    (doc) => (pair0(doc).left_view = 'v1'),
    [{ code: 'view_not_supported', path: '/tables/0/left/view', side: 'left' }],
  ],
  [
    'a view on a created table',
    (doc) =>
      doc.tables.push({
        left_table: { create: { name: 'contacts_copy' } },
        right_table: 'tblOrders',
        direction: 'right_to_left',
        left: { view: 'x' },
        fields: [],
      }),
    [{ code: 'view_not_supported', path: '/tables/1/left/view', message: /created by this document/ }],
  ],
  // creates
  [
    'a table create the connector cannot do',
    (doc) =>
      doc.tables.push({
        left_table: 'products',
        right_table: { create: { name: 'New' } },
        direction: 'left_to_right',
        fields: [{ left_field: 'title', right_field: { create: { name: 'Title' } } }],
      }),
    [
      {
        code: 'create_unsupported',
        path: '/tables/1/right_table',
        side: 'right',
        message: /\(appdb\) cannot create tables/,
      },
    ],
  ],
  [
    'a field create the connector cannot do',
    (doc, sides) => {
      sides.right.capabilities.createFields = false;
      addField(doc, { left_field: 'nickname', right_field: { create: { name: 'Nick' } } });
    },
    [
      {
        code: 'create_unsupported',
        path: '/tables/0/fields/2/right_field',
        side: 'right',
        message: /cannot create fields/,
      },
    ],
  ],
  [
    'a field created from an unsupported type',
    (doc) => addField(doc, { left_field: 'blob', right_field: { create: { name: 'Blob' } } }),
    [
      {
        code: 'create_unsupported',
        path: '/tables/0/fields/2/right_field',
        message: /its type \(bytea\) is not supported/,
      },
    ],
  ],
  [
    'a linked-record field created from a relation',
    (doc) =>
      doc.tables.push({
        left_table: 'orders',
        right_table: 'tblOrders',
        direction: 'left_to_right',
        fields: [{ left_field: 'customer_id', right_field: { create: { name: 'CustomerLink' } } }],
      }),
    [
      {
        code: 'create_unsupported',
        path: '/tables/1/fields/0/right_field',
        side: 'right',
        message: /cannot create a linked-record field/,
      },
    ],
  ],
  [
    'a link created from a relation whose target is mapped, where the connector creates links',
    (doc, sides) => {
      sides.right.capabilities.createRelations = true;
      doc.tables.push({
        left_table: 'orders',
        right_table: 'tblOrders',
        direction: 'left_to_right',
        fields: [{ left_field: 'customer_id', right_field: { create: { name: 'CustomerLink' } } }],
      });
    },
    [],
  ],
  [
    'a link created from a relation whose target is mapped only by a later table pair',
    (doc, sides) => {
      sides.right.capabilities.createRelations = true;
      doc.tables.unshift({
        left_table: 'orders',
        right_table: 'tblOrders',
        direction: 'left_to_right',
        fields: [{ left_field: 'customer_id', right_field: { create: { name: 'CustomerLink' } } }],
      });
      sides.right.capabilities.createTables = true;
      (doc.tables[1] as Json)['right_table'] = { create: { name: 'Customers' } };
      (doc.tables[1] as Json)['fields'] = [{ left_field: 'name', right_field: { create: { name: 'Name' } } }];
    },
    [
      {
        code: 'create_unsupported',
        path: '/tables/0/fields/0/right_field',
        side: 'right',
        message: /map its target table to a right table in an earlier table pair/,
      },
    ],
  ],
  [
    'a table create whose name exists',
    (doc) =>
      doc.tables.push({
        left_table: { create: { name: 'products' } },
        right_table: 'tblProducts',
        direction: 'right_to_left',
        fields: [{ left_field: { create: { name: 'title' } }, right_field: 'Name' }],
      }),
    [
      {
        code: 'create_name_collision',
        severity: 'warning',
        path: '/tables/1/left_table',
        side: 'left',
        message: /already exists \(table_l8\); the create will adopt it/,
      },
      { code: 'create_name_collision', severity: 'warning', path: '/tables/1/fields/0/left_field' },
    ],
  ],
  [
    'a field create whose name exists',
    (doc) => addField(doc, { left_field: 'price', right_field: { create: { name: 'Amount' } } }),
    [
      {
        code: 'create_name_collision',
        severity: 'warning',
        path: '/tables/0/fields/2/right_field',
        message: /already has a field named "Amount" \(field_r1g\)/,
      },
    ],
  ],
  // types and directions
  [
    'incompatible types, both ways',
    (doc) => addField(doc, { left_field: 'created', right_field: 'Status' }),
    [
      {
        code: 'incompatible_field_types',
        severity: 'error',
        path: '/tables/0/fields/2',
        side: 'right',
        message: /cannot sync left_to_right: timestamp -> select is incompatible/,
      },
      {
        code: 'incompatible_field_types',
        severity: 'error',
        path: '/tables/0/fields/2',
        side: 'left',
        message: /right_to_left: select -> timestamp/,
      },
    ],
  ],
  [
    'lossy types warn per direction',
    (doc) => addField(doc, { left_field: 'created', right_field: 'Created' }),
    [
      {
        code: 'incompatible_field_types',
        severity: 'warning',
        path: '/tables/0/fields/2',
        side: 'right',
        message: /timestamp -> datetime \(the instant becomes its UTC wall-clock time\)/,
      },
      {
        code: 'incompatible_field_types',
        severity: 'warning',
        path: '/tables/0/fields/2',
        side: 'left',
        message: /datetime -> timestamp/,
      },
    ],
  ],
  [
    'a max_length that may not hold the text',
    (doc) => addField(doc, { left_field: 'nickname', right_field: 'Notes', direction: 'left_to_right' }),
    [
      {
        code: 'incompatible_field_types',
        severity: 'warning',
        side: 'right',
        message: /longer than 10 characters/,
      },
    ],
  ],
  [
    'options the target lacks',
    (doc) => addField(doc, { left_field: 'status', right_field: 'Status', direction: 'right_to_left' }),
    [{ code: 'incompatible_field_types', severity: 'warning', side: 'left', message: /options/ }],
  ],
  [
    'a read-only target field',
    (doc) => addField(doc, { left_field: 'nickname', right_field: 'Formula' }),
    [
      {
        code: 'incompatible_field_types',
        severity: 'error',
        path: '/tables/0/fields/2/right_field',
        side: 'right',
        message: /"Formula" is read-only, so the pair cannot sync left_to_right/,
      },
    ],
  ],
  [
    'an unreadable source field',
    (doc) => addField(doc, { left_field: 'nickname', right_field: 'Secret', direction: 'right_to_left' }),
    [
      {
        code: 'incompatible_field_types',
        severity: 'error',
        path: '/tables/0/fields/2/right_field',
        side: 'right',
        message: /"Secret" cannot be read/,
      },
    ],
  ],
  [
    'a read-only table written',
    (doc) =>
      doc.tables.push({
        left_table: 'v_orders',
        right_table: 'tblProducts',
        direction: 'right_to_left',
        fields: [],
      }),
    [
      {
        code: 'incompatible_field_types',
        severity: 'error',
        path: '/tables/1/left_table',
        side: 'left',
        message: /read-only \(a database view\)/,
      },
    ],
  ],
  // required fields
  [
    'a required field unmapped on both sides',
    (doc) => pair0(doc).fields.shift(),
    [
      {
        code: 'required_field_unmapped',
        path: '/tables/0/fields',
        side: 'left',
        message: /requires the field "name" \(field_l1b\)/,
      },
      {
        code: 'required_field_unmapped',
        path: '/tables/0/fields',
        side: 'right',
        message: /requires the field "Name"/,
      },
    ],
  ],
  [
    'a required field written only the other way',
    (doc) => ((pair0(doc).fields[0] as Json).direction = 'left_to_right'),
    [
      {
        code: 'required_field_unmapped',
        path: '/tables/0/fields',
        side: 'left',
        message: /"name".*right_to_left/,
      },
    ],
  ],
  // foreign keys
  [
    'a relation to an unmapped table',
    (doc) =>
      doc.tables.push({
        left_table: 'orders',
        right_table: 'tblOrders',
        direction: 'two_way',
        fields: [{ left_field: 'customer_id', right_field: 'Product' }],
      }),
    [
      {
        code: 'foreign_key_target_unmapped',
        path: '/tables/1/fields/0/right_field',
        side: 'right',
        message: /links to the right table "tblProducts", which is not in the mappings/,
      },
    ],
  ],
  [
    'relations to tables not mapped to each other',
    (doc) =>
      doc.tables.push(
        {
          left_table: 'orders',
          right_table: 'tblOrders',
          direction: 'two_way',
          fields: [{ left_field: 'customer_id', right_field: 'Product' }],
        },
        { left_table: 'products', right_table: 'tblProducts', direction: 'two_way', fields: [] },
      ),
    [
      {
        code: 'foreign_key_target_mismatch',
        path: '/tables/1/fields/0',
        side: null,
        message: /"customers".*"tblProducts".*not mapped to each other/,
      },
    ],
  ],
  // duplicates
  [
    'a table mapped twice on one side',
    (doc) =>
      doc.tables.push({
        left_table: 'table_l1',
        right_table: 'tblProducts',
        direction: 'left_to_right',
        fields: [],
      }),
    [
      {
        code: 'invalid_mappings',
        path: '/tables/1/left_table',
        side: 'left',
        message: /already mapped by \/tables\/0/,
      },
    ],
  ],
  [
    'two creates of one table name',
    (doc) =>
      doc.tables.push(
        {
          left_table: { create: { name: 'n' } },
          right_table: 'tblOrders',
          direction: 'right_to_left',
          fields: [],
        },
        {
          left_table: { create: { name: 'n' } },
          right_table: 'tblProducts',
          direction: 'right_to_left',
          fields: [],
        },
      ),
    [{ code: 'invalid_mappings', path: '/tables/2/left_table', side: 'left' }],
  ],
  [
    'a field written twice',
    (doc) => addField(doc, { left_field: 'nickname', right_field: 'field_r1b' }),
    [
      {
        code: 'invalid_mappings',
        path: '/tables/0/fields/2/right_field',
        side: 'right',
        message: /"Email" is already written by \/tables\/0\/fields\/1 \(left_to_right\)/,
      },
    ],
  ],
];

function matches(issue: ValidationIssue, expected: Expected): boolean {
  const { message, ...rest } = expected;
  if (!Object.entries(rest).every(([key, value]) => issue[key as keyof ValidationIssue] === value))
    return false;
  if (message === undefined) return true;
  return typeof message === 'string' ? issue.message === message : message.test(issue.message);
}

describe('validateMappings', () => {
  it('accepts the base document', () => {
    expect(run(baseDocument())).toEqual([]);
  });

  it.each(CASES)('%s', (_name, mutate, expected) => {
    const doc = baseDocument();
    const sides = schema();
    mutate(doc, sides);
    const issues = run(doc, sides);
    for (const item of expected) {
      if (!issues.some((issue) => matches(issue, item)))
        throw new Error(
          `missing ${JSON.stringify(item, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v))} in\n${JSON.stringify(issues, null, 2)}`,
        );
    }
  });

  it('covers every validation code', () => {
    const seen = new Set(CASES.flatMap(([, , expected]) => expected.map((item) => item.code)));
    expect([...VALIDATION_CODES].filter((code) => !seen.has(code))).toEqual([]);
  });

  it('a field reading one way and another writing back is no duplicate', () => {
    const doc = baseDocument();
    addField(doc, { left_field: 'note', right_field: 'fldEmail', direction: 'right_to_left' });
    // email <-> Email (two_way) writes Email; Email -> note only reads it.
    expect(run(doc)).toEqual([]);
  });

  it('a required field on a side the table never writes is fine', () => {
    const doc = baseDocument();
    Object.assign(pair0(doc), {
      direction: 'left_to_right',
      fields: [{ left_field: 'name', right_field: 'Name' }],
    });
    expect(run(doc)).toEqual([]);
  });

  it('created tables have no required fields and created fields take the counterpart type', () => {
    const doc: Doc = {
      tables: [
        {
          left_table: { create: { name: 'contacts' } },
          right_table: 'tblContacts',
          direction: 'right_to_left',
          right: { view: 'viwAll' },
          fields: [
            { left_field: { create: { name: 'name' } }, right_field: 'Name' },
            { left_field: { create: { name: 'status' } }, right_field: 'Status' },
            { left_field: { create: { name: 'created' } }, right_field: 'fldCreated' },
          ],
        },
      ],
    };
    expect(run(doc)).toEqual([]);
  });

  it('an unresolved table reports once, not once per field', () => {
    const doc = baseDocument();
    pair0(doc).right_table = 'nope';
    expect(
      run(doc)
        .filter((issue) => issue.side === 'right')
        .map((issue) => issue.code),
    ).toEqual(['unknown_table']);
  });

  it('a field created from an unsupported type is not type-checked as well', () => {
    const doc = baseDocument();
    addField(doc, {
      left_field: 'blob',
      right_field: { create: { name: 'Blob' } },
      direction: 'left_to_right',
    });
    expect(run(doc).map((issue) => `${issue.path} ${issue.code}`)).toEqual([
      '/tables/0/fields/2/left_field incompatible_field_types',
      '/tables/0/fields/2/right_field create_unsupported',
    ]);
  });

  it('a create adopting a field is checked as that field', () => {
    const doc = baseDocument();
    addField(doc, {
      left_field: 'nickname',
      right_field: { create: { name: 'Formula' } },
      direction: 'left_to_right',
    });
    expect(run(doc).map((issue) => `${issue.severity} ${issue.code} ${issue.path}`)).toEqual([
      'warning create_name_collision /tables/0/fields/2/right_field',
      'error incompatible_field_types /tables/0/fields/2/right_field',
    ]);
  });

  it('relations whose targets are mapped to each other are fine', () => {
    const doc = baseDocument();
    doc.tables.push({
      left_table: 'orders',
      right_table: 'tblOrders',
      direction: 'two_way',
      fields: [{ left_field: 'customer_id', right_field: 'fldCustomer' }],
    });
    expect(run(doc)).toEqual([]);
  });

  it('orders issues by path, indexes as numbers', () => {
    const doc = baseDocument();
    for (let index = 0; index < 11; index += 1)
      addField(doc, { left_field: `missing${index}`, right_field: 'Count', direction: 'right_to_left' });
    const paths = run(doc).map((issue) => issue.path);
    expect(paths).toEqual([...Array(11).keys()].map((index) => `/tables/0/fields/${index + 2}/left_field`));
  });

  it('is deterministic', () => {
    const doc = baseDocument();
    addField(doc, { left_field: 'created', right_field: 'Status' });
    addField(doc, { left_field: 'old', right_field: 'nope' });
    pair0(doc).fields.shift();
    expect(run(doc)).toEqual(run(doc));
    expect(run(doc).map((issue) => `${issue.path} ${issue.code} ${issue.side}`)).toEqual([
      '/tables/0/fields required_field_unmapped left',
      '/tables/0/fields required_field_unmapped right',
      '/tables/0/fields/1 incompatible_field_types right',
      '/tables/0/fields/1 incompatible_field_types left',
      '/tables/0/fields/2/left_field orphaned_field left',
      '/tables/0/fields/2/right_field unknown_field right',
    ]);
  });
});
