import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';

/** Without a key id: version byte | IV | tag | data; still opened, by trying every configured key. */
const LEGACY_VERSION = 1;
/** version byte | 8-byte key id | IV | tag | data. */
const VERSION = 2;
const KEY_ID_BYTES = 8;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The keys one master key derives. */
interface DerivedKeys {
  /** Public and stable: names the master key in every ciphertext it seals (never enough to derive it). */
  id: Buffer;
  seal: Buffer;
  fingerprint: Buffer;
}

function derive(masterKey: string): DerivedKeys {
  const master = Buffer.from(masterKey, 'base64');
  const hkdf = (info: string, bytes: number) =>
    Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, bytes));
  return {
    id: hkdf('lockstep master key id v1', KEY_ID_BYTES),
    seal: hkdf('lockstep credentials v1', 32),
    fingerprint: hkdf('lockstep credential fingerprint v1', 32),
  };
}

/** A ciphertext sealed with a master key that is not configured (neither current nor previous). */
export class UnknownMasterKeyError extends Error {
  constructor(readonly keyId: string) {
    super(
      `credentials were sealed with master key ${keyId}, which is neither LOCKSTEP_MASTER_KEY nor ` +
        `listed in ` +
        ('LOCKSTEP_MASTER_KEY_PREVIOUS: configure that key as a previous key (and run `keys rotate`), ' +
          'or reconnect the side'),
    );
  }
}

/**
 * Credentials at rest: AES-256-GCM with a key derived (HKDF-SHA256) from `LOCKSTEP_MASTER_KEY`. The
 * additional authenticated data binds a ciphertext to its owner (`sync:<id>:<side>`), so a ciphertext
 * copied to another sync or side fails to decrypt. Each ciphertext names the master key that sealed it (its
 * key id), so during a rotation the previous keys (`LOCKSTEP_MASTER_KEY_PREVIOUS`) still open what they
 * sealed while everything new is sealed with the current key, and `keys rotate` finds what is left by prefix.
 * `fingerprint` is an HMAC (separate derived key) of the canonical credentials, used to compare two
 * sides' credentials (`base_conflict`) without decrypting either.
 */
@Injectable()
export class CredentialCipher {
  private readonly current: DerivedKeys;
  /** Current first, then the previous keys in the configured order. */
  private readonly keys: DerivedKeys[];

  constructor(config: AppConfig) {
    this.current = derive(config.LOCKSTEP_MASTER_KEY);
    this.keys = [this.current, ...(config.LOCKSTEP_MASTER_KEY_PREVIOUS ?? []).map(derive)];
  }

  /**
   * The first bytes of every ciphertext the current key seals: a stored value without them needs rotating.
   */
  get currentPrefix(): Buffer {
    return Buffer.concat([Buffer.from([VERSION]), this.current.id]);
  }

  encrypt(credentials: Record<string, string>, owner: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.seal, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const data = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
    return Buffer.concat([this.currentPrefix, iv, cipher.getAuthTag(), data]);
  }

  /**
   * Throws when the ciphertext was tampered with or belongs to another owner, and `UnknownMasterKeyError`
   * when the master key that sealed it is not configured.
   */
  decrypt(sealed: Buffer, owner: string): Record<string, string> {
    if (sealed.length >= 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES && sealed[0] === VERSION) {
      const id = sealed.subarray(1, 1 + KEY_ID_BYTES);
      const keys = this.keys.find((candidate) => candidate.id.equals(id));
      if (!keys) throw new UnknownMasterKeyError(id.toString('hex'));
      return open(keys.seal, sealed.subarray(1 + KEY_ID_BYTES), owner);
    }
    if (sealed.length >= 1 + IV_BYTES + TAG_BYTES && sealed[0] === LEGACY_VERSION)
      return this.openLegacy(sealed.subarray(1), owner);
    throw new Error('credentials are not in a known sealed format');
  }

  fingerprint(connector: string, credentials: Record<string, string>): string {
    const canonical = JSON.stringify([
      connector,
      Object.keys(credentials)
        .sort()
        .map((key) => [key, credentials[key]]),
    ]);
    return createHmac('sha256', this.current.fingerprint).update(canonical).digest('base64url');
  }

  /** A legacy ciphertext names no key: the one whose tag verifies opened it. */
  private openLegacy(body: Buffer, owner: string): Record<string, string> {
    for (const keys of this.keys) {
      try {
        return open(keys.seal, body, owner);
      } catch {
        // Another key, another owner or tampered: the next key may still open it.
      }
    }
    throw new Error(
      'credentials (sealed before key ids) open with none of the configured master keys, or were ' +
        'tampered with',
    );
  }
}

/** `body` is IV | tag | data. */
function open(key: Buffer, body: Buffer, owner: string): Record<string, string> {
  const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(owner, 'utf8'));
  decipher.setAuthTag(body.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  const text = Buffer.concat([
    decipher.update(body.subarray(IV_BYTES + TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
  return JSON.parse(text) as Record<string, string>;
}

/** The additional authenticated data of a side's credentials. */
export const sideOwner = (syncId: string, side: string): string => `sync:${syncId}:${side}`;
