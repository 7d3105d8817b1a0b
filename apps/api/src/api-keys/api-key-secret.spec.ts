import { generateKeySecret, hashKeySecret, parseKeySecret, secretMatches } from './api-key-secret';

describe('API key secrets', () => {
  it('generates well-formed, unique secrets whose hash matches', () => {
    const a = generateKeySecret();
    const b = generateKeySecret();
    expect(a.secret).toMatch(/^lsk_[0-9a-z]{16}_[A-Za-z0-9_-]{43}$/);
    expect(a.secret).not.toBe(b.secret);
    expect(parseKeySecret(a.secret)).toBe(a.lookup);
    expect(secretMatches(a.secret, a.hash)).toBe(true);
    expect(secretMatches(b.secret, a.hash)).toBe(false);
    expect(secretMatches(a.secret, null)).toBe(false);
  });

  it.each([
    '',
    'lsk_',
    'lsk_abc_def',
    'Bearer lsk_0123456789abcdef_' + 'a'.repeat(43),
    'lsk_0123456789ABCDEF_' + 'a'.repeat(43),
  ])('treats %p as malformed', (secret) => {
    expect(parseKeySecret(secret)).toBeNull();
  });

  it('never matches a stored hash of another length', () => {
    const { secret } = generateKeySecret();
    expect(secretMatches(secret, Buffer.from('short'))).toBe(false);
    expect(hashKeySecret(secret)).toHaveLength(32);
  });
});
