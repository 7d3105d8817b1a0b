import { documentFromForm } from './live-export-edit-pages';

describe('console live export map form', () => {
  it('builds the mappings document from the form: ticked fields only, blank names left to the defaults', () => {
    const form = {
      tables: '2',
      t0_source: 'public.customers',
      t0_dest: ' customers_copy ',
      t0_fields: '3',
      t0_f0: 'id',
      t0_f0_dest: 'id',
      t0_f1_dest: 'full_name',
      t0_f2: 'email',
      t0_f2_dest: '',
      t0_primary: 'id',
      t1_source: 'public.audit',
      t1_dest: '',
      t1_fields: '1',
    };
    expect(documentFromForm(form)).toEqual({
      tables: [
        {
          source_table: 'public.customers',
          destination_table: 'customers_copy',
          fields: [
            { source_field: 'id', destination_field: 'id', primary: true },
            { source_field: 'email', primary: false },
          ],
        },
        // No field ticked: kept, so validation says `empty_table_mapping` at this table.
        { source_table: 'public.audit', fields: [] },
      ],
    });
  });

  it('ignores counts that are no numbers and tables without a source', () => {
    expect(documentFromForm({ tables: 'many' })).toEqual({ tables: [] });
    expect(documentFromForm({ tables: '1', t0_fields: '1', t0_f0: 'id' })).toEqual({ tables: [] });
  });
});
