import type { MappingsSchema, SchemaField, SchemaTable } from '@lockstep/domain';
import {
  anchorOf,
  anchorsOf,
  candidateOf,
  CREATE,
  formFromDocument,
  formFromPost,
  formPath,
  placeIssues,
  suggestFields,
} from './mappings-form';
import { suggestedMatch } from './review-parts';

const field = (name: string, over: Partial<SchemaField> = {}): SchemaField => ({
  id: `field_${name}`,
  remoteId: name,
  name,
  type: 'text',
  typeClass: 'text',
  read: true,
  write: true,
  required: false,
  primary: false,
  typeDetails: null,
  orphaned: false,
  ...over,
});
const table = (name: string, fields: SchemaField[]): SchemaTable => ({
  id: `table_${name}`,
  remoteId: name,
  name,
  views: null,
  readOnly: false,
  orphaned: false,
  fields,
});
const capabilities = { createTables: true, createFields: true, views: false, createRelations: false };
const schema: MappingsSchema = {
  left: {
    side: 'left',
    connector: 'postgres',
    capabilities,
    tables: [
      table('people', [
        field('id', { primary: true, typeClass: 'integer' }),
        field('Email', { required: true, typeDetails: { unique: true } }),
        field('owner', { typeClass: 'relation' }),
        field('blob', { typeClass: 'unsupported', read: false }),
      ]),
    ],
  },
  right: {
    side: 'right',
    connector: 'mysql',
    capabilities,
    tables: [
      table('contacts', [
        field('id', { primary: true, typeClass: 'integer' }),
        field('email', { required: true, typeDetails: { unique: true, max_length: 80 } }),
        field('name'),
      ]),
    ],
  },
};

describe('mappings editor form', () => {
  it('reads a posted form: counts, removed rows and pairs, create names, directions', () => {
    const form = formFromPost({
      revision: '4',
      pairs: '3',
      p0_left_table: 'people',
      p0_right_table: CREATE,
      p0_right_table_create: ' people_copy ',
      p0_direction: 'left_to_right',
      p0_right_delete: 'do_nothing',
      p0_fields: '2',
      p0_f0_left: 'id',
      p0_f0_right: CREATE,
      p0_f0_right_create: 'id',
      p0_f0_direction: 'sideways',
      p0_f1_remove: '1',
      p1_remove: '1',
      p2_left_table: '',
      p2_right_table: '',
      p2_fields: '0',
      delete_approval: 'auto_approve',
    });
    expect(form.revision).toBe(4);
    expect(form.deleteApproval).toBe('auto_approve');
    expect(form.pairs).toHaveLength(2);
    expect(form.pairs[0]).toMatchObject({
      right: { pick: CREATE, createName: 'people_copy' },
      direction: 'left_to_right',
      settings: { right: { deleteBehavior: 'do_nothing' }, left: { deleteBehavior: 'sync' } },
      fields: [{ left: { pick: 'id' }, right: { pick: CREATE, createName: 'id' }, direction: '' }],
    });
    // The blank pair is left out of the document; the create becomes {create: {name}}.
    const candidate = candidateOf(form);
    expect(candidate.document.tables).toEqual([
      {
        left_table: 'people',
        right_table: { create: { name: 'people_copy' } },
        direction: 'left_to_right',
        left: { record_delete_behavior: 'sync' },
        right: { record_delete_behavior: 'do_nothing' },
        fields: [{ left_field: 'id', right_field: { create: { name: 'id' } } }],
      },
    ]);
    expect(candidate.pairIndex).toEqual([0]);
  });

  it('caps what a form may carry', () => {
    expect(formFromPost({ pairs: '100000' }).pairs).toHaveLength(100);
  });

  it('places issue paths at the rows as shown, skipping blank rows of the document', () => {
    const form = formFromDocument(
      {
        tables: [
          { left_table: '', right_table: '', direction: 'two_way', fields: [] },
          {
            left_table: 'people',
            right_table: 'contacts',
            direction: 'two_way',
            fields: [
              { left_field: '', right_field: '' },
              { left_field: 'Email', right_field: 'email', direction: 'invalid' },
            ],
          },
        ],
      },
      2,
      'review_required',
    );
    expect(form.pairs[1]!.fields[1]!.direction).toBe('');
    const candidate = candidateOf(form);
    expect(candidate.pairIndex).toEqual([1]);
    expect(candidate.fieldIndex).toEqual([[1]]);
    expect(formPath(candidate, '/tables/0/fields/0/left_field')).toBe('/tables/1/fields/1/left_field');
    expect(formPath(candidate, '/tables/0/right/view')).toBe('/tables/1/right/view');
    expect(formPath(candidate, '/tables')).toBe('/tables');
    const anchors = anchorsOf(form);
    expect(anchorOf('/tables/1/fields/1/left_field', anchors)).toBe('/tables/1/fields/1');
    expect(anchorOf('/tables/1/right/view', anchors)).toBe('/tables/1/right');
    expect(anchorOf('/tables/1/left_view', anchors)).toBe('/tables/1');
    expect(anchorOf('/elsewhere', anchors)).toBe('');
    expect(
      placeIssues(form, candidate, [
        {
          severity: 'error',
          code: 'incompatible_field_types',
          path: '/tables/0/fields/0',
          side: 'right',
          message: 'm',
        },
      ]),
    ).toEqual([
      { anchor: '/tables/1/fields/1', severity: 'error', code: 'incompatible_field_types', message: 'm' },
    ]);
  });

  it('offers rows: same names for two tables, every readable field for a created table', () => {
    const pair = formFromPost({ pairs: '1', p0_left_table: 'people', p0_right_table: 'contacts' }).pairs[0]!;
    expect(suggestFields(pair, schema).map((f) => [f.left.pick, f.right.pick])).toEqual([
      ['id', 'id'],
      ['Email', 'email'],
    ]);
    const created = formFromPost({ pairs: '1', p0_left_table: 'people', p0_right_table: CREATE }).pairs[0]!;
    // Not the unsupported field, nor the relation (the side cannot create links).
    expect(
      suggestFields(created, schema).map((f) => [f.left.pick, f.right.pick, f.right.createName]),
    ).toEqual([
      ['id', CREATE, 'id'],
      ['Email', CREATE, 'Email'],
    ]);
  });
});

describe('suggested match field', () => {
  const pair = (fields: [string, string][]) => ({
    index: 0,
    leftTable: 'people',
    rightTable: 'contacts',
    direction: 'two_way',
    fields: fields.map(([left, right]) => ({ left, right, direction: 'two_way' })),
  });

  it('prefers a unique required pair over the primary keys, and needs it on both sides', () => {
    expect(
      suggestedMatch(
        pair([
          ['id', 'id'],
          ['Email', 'email'],
        ]),
        schema,
      ),
    ).toBe('Email=email');
    expect(suggestedMatch(pair([['id', 'id']]), schema)).toBe('id=id');
    expect(suggestedMatch(pair([['Email', 'name']]), schema)).toBeNull();
    expect(suggestedMatch(pair([]), schema)).toBeNull();
  });
});
