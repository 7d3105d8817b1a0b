import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { loadConfig } from '@lockstep/config';
import { CredentialCipher, sideOwner, UnknownMasterKeyError } from './credential-cipher';

const masterKey = (byte: number) => Buffer.alloc(32, byte).toString('base64');
const config = (byte: number, previous: number[] = []) =>
  loadConfig(
    {},
    {
      LOCKSTEP_MASTER_KEY: masterKey(byte),
      LOCKSTEP_MASTER_KEY_PREVIOUS: previous.map(masterKey).join(','),
      DATABASE_URL: 'postgres://x@127.0.0.1/x',
    },
  );

/** A ciphertext in the format of the release before key ids (version 1, no key id). */
function legacySeal(byte: number, credentials: Record<string, string>, owner: string): Buffer {
  const key = Buffer.from(
    hkdfSync(
      'sha256',
      Buffer.from(masterKey(byte), 'base64'),
      Buffer.alloc(0),
      'lockstep credentials v1',
      32,
    ),
  );
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(owner, 'utf8'));
  const data = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([1]), iv, cipher.getAuthTag(), data]);
}

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
    expect(cipher.fingerprint('postgres', { a: '1', b: '2' })).toBe(
      cipher.fingerprint('postgres', { b: '2', a: '1' }),
    );
    expect(cipher.fingerprint('postgres', { a: '1' })).not.toBe(cipher.fingerprint('postgres', { a: '2' }));
    expect(cipher.fingerprint('postgres', { a: '1' })).not.toBe(cipher.fingerprint('mysql', { a: '1' }));
  });

  describe('master key rotation', () => {
    const rotating = new CredentialCipher(config(2, [1]));
    const rotated = new CredentialCipher(config(2));

    it('opens what the previous key sealed and seals only with the current key', () => {
      const old = cipher.encrypt(secret, 'o');
      expect(rotating.decrypt(old, 'o')).toEqual(secret);
      const sealed = rotating.encrypt(secret, 'o');
      expect(sealed.subarray(0, rotating.currentPrefix.length)).toEqual(rotated.currentPrefix);
      expect(rotated.decrypt(sealed, 'o')).toEqual(secret);
      expect(old.subarray(0, cipher.currentPrefix.length)).not.toEqual(rotating.currentPrefix);
    });

    it('opens a ciphertext of the release before key ids with whichever configured key sealed it', () => {
      expect(rotating.decrypt(legacySeal(1, secret, 'o'), 'o')).toEqual(secret);
      expect(rotating.decrypt(legacySeal(2, secret, 'o'), 'o')).toEqual(secret);
      expect(() => rotated.decrypt(legacySeal(1, secret, 'o'), 'o')).toThrow(
        'none of the configured master keys',
      );
    });

    it('refuses a ciphertext of a master key that is not configured with an error naming the key and the fix', () => {
      const old = cipher.encrypt(secret, 'o');
      const keyId = old.subarray(1, 9).toString('hex');
      expect(() => rotated.decrypt(old, 'o')).toThrow(UnknownMasterKeyError);
      expect(() => rotated.decrypt(old, 'o')).toThrow(
        `master key ${keyId}, which is neither LOCKSTEP_MASTER_KEY nor listed in LOCKSTEP_MASTER_KEY_PREVIOUS`,
      );
    });
  });
});
