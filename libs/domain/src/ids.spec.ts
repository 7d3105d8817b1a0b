import { isId, newId } from './ids';

describe('ids', () => {
  it.each([
    ['sync', 'sync_'],
    ['operation', 'op_'],
    ['issue', 'iss_'],
    ['record', 'rec_'],
    ['liveExport', 'lex_'],
    ['run', 'run_'],
    ['apiKey', 'key_'],
  ] as const)('%s ids start with %s and are recognised', (kind, prefix) => {
    const id = newId(kind);
    expect(id.startsWith(prefix)).toBe(true);
    expect(isId(kind, id)).toBe(true);
    expect(newId(kind)).not.toBe(id);
  });

  it.each([
    ['sync', 'op_0123456789abcdefghij'],
    ['sync', 'sync_short'],
    ['sync', 'sync_0123456789ABCDEFGHIJ'],
    ['sync', 42],
    ['sync', null],
  ] as const)('isId(%s, %p) is false', (kind, value) => expect(isId(kind, value)).toBe(false));

  it('starts with the creation time, so ids made later sort after earlier ones, and stays unique', async () => {
    const first = newId('operation');
    await new Promise((resolve) => setTimeout(resolve, 3));
    const later = newId('operation');
    expect(later > first).toBe(true);
    const many = Array.from({ length: 20_000 }, () => newId('record'));
    expect(new Set(many).size).toBe(many.length);
    for (const id of many.slice(0, 100)) expect(isId('record', id)).toBe(true);
  });
});
