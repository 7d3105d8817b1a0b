import { copyIn, copyText } from './copy-in';

describe('COPY text fields', () => {
  it('escapes what would end a field or a line, and writes NULL as \\N', () => {
    expect(copyText(null)).toBe('\\N');
    expect(copyText('plain')).toBe('plain');
    expect(copyText('a\tb\nc\rd\\e')).toBe('a\\tb\\nc\\rd\\\\e');
    expect(copyText('\\N')).toBe('\\\\N');
    expect(copyText(12)).toBe('12');
    expect(copyText(false)).toBe('false');
    expect(copyText('{"a":"x\\"y"}')).toBe('{"a":"x\\\\"y"}');
  });

  it('reports false (nothing written) outside a PostgreSQL transaction', async () => {
    expect(await copyIn({ query: async () => [] }, 't', ['a'], [['x']])).toBe(false);
    expect(await copyIn({ queryRunner: { isTransactionActive: false, connect: async () => ({ query: async () => undefined }) } }, 't', ['a'], [['x']])).toBe(false);
  });
});
