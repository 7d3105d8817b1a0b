import { loadConfig } from '@lockstep/config';
import { CredentialCipher, sideOwner } from './credential-cipher';

const config = (byte: number) => loadConfig({}, { LOCKSTEP_MASTER_KEY: Buffer.alloc(32, byte).toString('base64'), DATABASE_URL: 'postgres://x@127.0.0.1/x' });

describe('CredentialCipher', () => {
  const cipher = new CredentialCipher(config(1));
  const secret = { connectionString: 'postgres://u:very-secret@db/x' };

  it('round-trips credentials for the same owner', () => {
    const sealed = cipher.encrypt(secret, sideOwner('sync_a', 'left'));
    expect(cipher.decrypt(sealed, sideOwner('sync_a', 'left'))).toEqual(secret);
  });

  it('never stores the plaintext', () => {
    const sealed = cipher.encrypt(secret, sideOwner('sync_a', 'left'));
    expect(sealed.toString('latin1')).not.toContain('very-secret');
  });

  it.each([
    ['another side', sideOwner('sync_a', 'right')],
    ['another sync', sideOwner('sync_b', 'left')],
  ])('refuses a ciphertext moved to %s', (_label, owner) => {
    const sealed = cipher.encrypt(secret, sideOwner('sync_a', 'left'));
    expect(() => cipher.decrypt(sealed, owner)).toThrow();
  });

  it('refuses a tampered ciphertext and another master key', () => {
    const sealed = cipher.encrypt(secret, 'o');
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(() => cipher.decrypt(tampered, 'o')).toThrow();
    expect(() => new CredentialCipher(config(2)).decrypt(sealed, 'o')).toThrow();
    expect(() => cipher.decrypt(Buffer.from([9, 9]), 'o')).toThrow('sealed format');
  });

  it('fingerprints equal credentials equally, regardless of key order', () => {
    expect(cipher.fingerprint('postgres', { a: '1', b: '2' })).toBe(cipher.fingerprint('postgres', { b: '2', a: '1' }));
    expect(cipher.fingerprint('postgres', { a: '1' })).not.toBe(cipher.fingerprint('postgres', { a: '2' }));
    expect(cipher.fingerprint('postgres', { a: '1' })).not.toBe(cipher.fingerprint('mysql', { a: '1' }));
  });
});
