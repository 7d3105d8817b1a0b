import { resolveFieldReference, resolveTableReference } from './resolve';
import { SideName } from './schema';
import { schema } from './test/fixtures';

const sides = schema();

describe('resolveTableReference', () => {
  it.each<[SideName, string, string, string]>([
    ['left', 'table_l1', 'table_l1', 'id'],
    ['left', 'customers', 'table_l1', 'remote_id'],
    ['left', 'people', 'table_l9', 'remote_id'],
    ['left', 'customers_legacy', 'table_l9', 'name'],
    ['left', 'legacy', 'table_l10', 'remote_id'],
    ['left', 'dup_a', 'table_l4', 'remote_id'],
    ['left', 'invoices', 'table_l13', 'name'],
    ['left', 'invoices_old', 'table_l12', 'remote_id'],
    ['left', 'table_l12', 'table_l12', 'id'],
    ['left', 'gone', 'table_l6', 'remote_id'],
    ['right', 'table_r1', 'table_r1', 'id'],
    ['right', 'tblContacts', 'table_r1', 'remote_id'],
    ['right', 'Contacts', 'table_r1', 'name'],
  ])('%s "%s" resolves to %s by %s', (side, reference, id, matchedBy) => {
    const result = resolveTableReference(reference, sides[side], sides[side === 'left' ? 'right' : 'left']);
    expect(result).toMatchObject({ ok: true, table: { id }, matchedBy });
  });

  it.each<[string, SideName, string, string, RegExp]>([
    ['a prefixed id beats a remote id equal to it', 'left', 'table_l1', 'ok', /.*/],
    [
      'a name matching two tables',
      'left',
      'dup',
      'table_ambiguous',
      /2 left tables are named "dup" \(table_l4, table_l5\); reference one by its prefixed id or remote id/,
    ],
    [
      'an id of the other side',
      'left',
      'table_r2',
      'unknown_table',
      /"table_r2" is a right table \("Orders"\); the left table must be a left table/,
    ],
    ['an id of the other side, seen from the right', 'right', 'table_l1', 'unknown_table', /is a left table/],
    [
      'a name of the other side',
      'left',
      'Contacts',
      'unknown_table',
      /no left table has the id, remote id or name "Contacts"/,
    ],
    ['a remote id of the other side', 'right', 'customers', 'unknown_table', /no right table/],
    ['nothing', 'left', 'table_zzz', 'unknown_table', /no left table/],
    ['names are case-sensitive', 'right', 'contacts', 'unknown_table', /no right table/],
  ])('%s', (_name, side, reference, code, message) => {
    const result = resolveTableReference(reference, sides[side], sides[side === 'left' ? 'right' : 'left']);
    if (code === 'ok') {
      expect(result).toMatchObject({ ok: true, table: { id: 'table_l1' } });
      return;
    }
    expect(result).toMatchObject({ ok: false, code });
    if (!result.ok) expect(result.message).toMatch(message);
  });

  it('without the other side, a foreign id is just unknown', () => {
    expect(resolveTableReference('table_r1', sides.left)).toMatchObject({
      ok: false,
      code: 'unknown_table',
      message: expect.stringMatching(/^no left table/),
    });
  });
});

describe('resolveFieldReference', () => {
  const customers = sides.left.tables[0]!;
  const contacts = sides.right.tables[0]!;
  const unfetched = sides.left.tables.find((table) => table.fields === null)!;

  it.each<[SideName, string, string, string]>([
    ['left', 'field_l1b', 'field_l1b', 'id'],
    ['left', 'name', 'field_l1b', 'remote_id'],
    ['left', 'old', 'field_l1h', 'remote_id'],
    ['right', 'field_r1a', 'field_r1a', 'id'],
    ['right', 'fldName', 'field_r1a', 'remote_id'],
    ['right', 'Name', 'field_r1a', 'name'],
    ['right', 'fldTag2', 'field_r1i', 'remote_id'],
  ])('%s "%s" resolves to %s by %s', (side, reference, id, matchedBy) => {
    const table = side === 'left' ? customers : contacts;
    const result = resolveFieldReference(
      reference,
      table,
      sides[side],
      sides[side === 'left' ? 'right' : 'left'],
    );
    expect(result).toMatchObject({ ok: true, field: { id }, matchedBy });
  });

  it.each<[string, SideName, string, RegExp]>([
    [
      'an ambiguous name',
      'right',
      'Tag',
      /the name "Tag" is ambiguous: 2 fields of the right table "Contacts" have it \(field_r1h, field_r1i\)/,
    ],
    [
      'a field of another table',
      'right',
      'field_r2a',
      /"field_r2a" is a field of the right table "Orders", not of "Contacts"/,
    ],
    [
      'a field of the other side',
      'right',
      'field_l1b',
      /"field_l1b" is a left field \(of table "customers"\)/,
    ],
    [
      'nothing',
      'left',
      'Email',
      /the left table "customers" has no field with the id, remote id or name "Email"$/,
    ],
  ])('%s', (_name, side, reference, message) => {
    const table = side === 'left' ? customers : contacts;
    const result = resolveFieldReference(
      reference,
      table,
      sides[side],
      sides[side === 'left' ? 'right' : 'left'],
    );
    expect(result).toMatchObject({ ok: false, code: 'unknown_field' });
    if (!result.ok) expect(result.message).toMatch(message);
  });

  it('a table whose fields were never fetched resolves nothing and says so', () => {
    const result = resolveFieldReference('anything', unfetched, sides.left, sides.right);
    expect(result).toMatchObject({
      ok: false,
      code: 'unknown_field',
      message: expect.stringMatching(/have not been fetched/),
    });
  });
});
