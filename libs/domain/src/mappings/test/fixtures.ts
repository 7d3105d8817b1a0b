import { TypeClass } from '../../types/type-class';
import { MappingsSchema, SchemaField, SchemaTable, SideSchema } from '../schema';

export function field(
  id: string,
  name: string,
  typeClass: TypeClass,
  extra: Partial<SchemaField> = {},
): SchemaField {
  return {
    id,
    remoteId: name,
    name,
    type: typeClass,
    typeClass,
    read: typeClass !== 'unsupported',
    write: typeClass !== 'unsupported',
    required: false,
    primary: false,
    typeDetails: null,
    orphaned: false,
    ...extra,
  };
}

export function table(
  id: string,
  name: string,
  fields: SchemaField[] | null,
  extra: Partial<SchemaTable> = {},
): SchemaTable {
  return { id, remoteId: name, name, views: null, readOnly: false, orphaned: false, fields, ...extra };
}

/** Left: a PostgreSQL-like database (no views, creates tables and fields). */
export function leftSchema(): SideSchema {
  return {
    side: 'left',
    connector: 'postgres',
    capabilities: { createTables: true, createFields: true, views: false },
    tables: [
      table('table_l1', 'customers', [
        field('field_l1a', 'id', 'integer', { primary: true, write: false }),
        field('field_l1b', 'name', 'text', { required: true }),
        field('field_l1c', 'email', 'text'),
        field('field_l1d', 'status', 'select', { typeDetails: { options: ['active', 'inactive'] } }),
        field('field_l1e', 'created', 'timestamp'),
        field('field_l1f', 'blob', 'unsupported', { type: 'bytea' }),
        field('field_l1g', 'price', 'decimal', { typeDetails: { precision: 10, scale: 2 } }),
        field('field_l1h', 'old', 'text', { orphaned: true }),
        field('field_l1i', 'nickname', 'text', { typeDetails: { max_length: 100 } }),
        field('field_l1j', 'note', 'text'),
      ]),
      table('table_l2', 'orders', [
        field('field_l2a', 'id', 'integer', { primary: true, write: false }),
        field('field_l2b', 'customer_id', 'relation', {
          typeDetails: { target_table: 'customers', target_field: 'id' },
        }),
        field('field_l2c', 'total', 'decimal'),
        field('field_l2d', 'computed', 'integer', { write: false }),
      ]),
      table('table_l3', 'v_orders', [field('field_l3a', 'id', 'integer', { write: false })], {
        readOnly: true,
      }),
      table('table_l4', 'dup', [], { remoteId: 'dup_a' }),
      table('table_l5', 'dup', [], { remoteId: 'dup_b' }),
      table('table_l6', 'gone', [field('field_l6a', 'x', 'text')], { orphaned: true }),
      table('table_l7', 'unfetched', null),
      table('table_l8', 'products', [field('field_l8a', 'title', 'text')]),
      // resolution order: remote id "people" vs a table named "people"; remote id equal to another table's id
      table('table_l9', 'customers_legacy', [], { remoteId: 'people' }),
      table('table_l10', 'people', [], { remoteId: 'legacy' }),
      table('table_l11', 'weird', [], { remoteId: 'table_l1' }),
      // an orphaned and a live table with the same name: the live one wins
      table('table_l12', 'invoices', [], { remoteId: 'invoices_old', orphaned: true }),
      table('table_l13', 'invoices', [], { remoteId: 'invoices_new' }),
    ],
  };
}

/** Right: an app with views (tables may require one), creates fields but not tables. */
export function rightSchema(): SideSchema {
  return {
    side: 'right',
    connector: 'appdb',
    capabilities: { createTables: false, createFields: true, views: true },
    tables: [
      table(
        'table_r1',
        'Contacts',
        [
          field('field_r1a', 'Name', 'text', { remoteId: 'fldName', required: true }),
          field('field_r1b', 'Email', 'text', { remoteId: 'fldEmail' }),
          field('field_r1c', 'Status', 'select', {
            remoteId: 'fldStatus',
            typeDetails: { options: ['active', 'inactive', 'lead'] },
          }),
          field('field_r1d', 'Created', 'datetime', { remoteId: 'fldCreated' }),
          field('field_r1e', 'Notes', 'text', { remoteId: 'fldNotes', typeDetails: { max_length: 10 } }),
          field('field_r1f', 'Formula', 'text', { remoteId: 'fldFormula', write: false }),
          field('field_r1g', 'Amount', 'decimal', {
            remoteId: 'fldAmount',
            typeDetails: { precision: 10, scale: 2 },
          }),
          field('field_r1h', 'Tag', 'text', { remoteId: 'fldTag1' }),
          field('field_r1i', 'Tag', 'text', { remoteId: 'fldTag2' }),
          field('field_r1j', 'Count', 'integer', { remoteId: 'fldCount' }),
          field('field_r1k', 'Secret', 'text', { remoteId: 'fldSecret', read: false }),
        ],
        {
          remoteId: 'tblContacts',
          views: {
            required: true,
            options: [
              { value: 'viwAll', name: 'All' },
              { value: 'viwActive', name: 'Active' },
            ],
          },
        },
      ),
      table(
        'table_r2',
        'Orders',
        [
          field('field_r2a', 'Customer', 'relation', {
            remoteId: 'fldCustomer',
            typeDetails: { target_table: 'tblContacts' },
          }),
          field('field_r2b', 'Total', 'decimal', { remoteId: 'fldTotal' }),
          field('field_r2c', 'Product', 'relation', {
            remoteId: 'fldProduct',
            typeDetails: { target_table: 'tblProducts' },
          }),
        ],
        { remoteId: 'tblOrders', views: { required: false, options: [{ value: 'viwX', name: 'X' }] } },
      ),
      table('table_r3', 'Products', [field('field_r3a', 'Name', 'text', { remoteId: 'fldPName' })], {
        remoteId: 'tblProducts',
      }),
    ],
  };
}

export function schema(): MappingsSchema {
  return { left: leftSchema(), right: rightSchema() };
}

type Json = Record<string, unknown>;

/** A valid document: customers <-> Contacts, two_way, through the view "viwAll". */
export function baseDocument(): { tables: Json[] } {
  return {
    tables: [
      {
        left_table: 'customers',
        right_table: 'tblContacts',
        direction: 'two_way',
        right: { view: 'viwAll' },
        fields: [
          { left_field: 'name', right_field: 'Name' },
          { left_field: 'email', right_field: 'fldEmail' },
        ],
      },
    ],
  };
}
