import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Credentials at rest: AES-256-GCM with a key derived (HKDF-SHA256) from `LOCKSTEP_MASTER_KEY`. The
 * additional authenticated data binds a ciphertext to its owner (`sync:<id>:<side>`), so a ciphertext
 * copied to another sync or side fails to decrypt. Layout: version byte | 12-byte IV | 16-byte tag | data.
 * `fingerprint` is an HMAC (separate derived key) of the canonical credentials, used to compare two
 * sides' credentials (`base_conflict`) without decrypting either.
 */
@Injectable()
export class CredentialCipher {
  private readonly key: Buffer;
  private readonly fingerprintKey: Buffer;

  constructor(config: AppConfig) {
    const master = Buffer.from(config.LOCKSTEP_MASTER_KEY, 'base64');
    this.key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'lockstep credentials v1', 32));
    this.fingerprintKey = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'lockstep credential fingerprint v1', 32));
  }

  encrypt(credentials: Record<string, string>, owner: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const data = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), data]);
  }

  /** Throws when the ciphertext was tampered with, belongs to another owner or another master key. */
  decrypt(sealed: Buffer, owner: string): Record<string, string> {
    if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new Error('credentials are not in a known sealed format');
    const iv = sealed.subarray(1, 1 + IV_BYTES);
    const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAAD(Buffer.from(owner, 'utf8'));
    decipher.setAuthTag(tag);
    const text = Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Record<string, string>;
  }

  fingerprint(connector: string, credentials: Record<string, string>): string {
    const canonical = JSON.stringify([connector, Object.keys(credentials).sort().map((key) => [key, credentials[key]])]);
    return createHmac('sha256', this.fingerprintKey).update(canonical).digest('base64url');
  }
}

/** The additional authenticated data of a side's credentials. */
export const sideOwner = (syncId: string, side: string): string => `sync:${syncId}:${side}`;
