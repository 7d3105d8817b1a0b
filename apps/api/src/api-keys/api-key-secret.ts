import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API key secrets look like `lsk_<lookup>_<secret>`: `lookup` (16 base-36 characters) finds the row through
 * a unique index; the whole string's SHA-256 is compared in constant time. Keys are 256-bit random, so a
 * fast hash is the right tool (a slow KDF would only slow every request).
 */
const KEY_SHAPE = /^lsk_([0-9a-z]{16})_([A-Za-z0-9_-]{43})$/;
const LOOKUP_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

export function generateKeySecret(): { secret: string; lookup: string; hash: Buffer } {
  let lookup = '';
  for (const byte of randomBytes(16)) lookup += LOOKUP_ALPHABET[byte % 36];
  const secret = `lsk_${lookup}_${randomBytes(32).toString('base64url')}`;
  return { secret, lookup, hash: hashKeySecret(secret) };
}

export function hashKeySecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** The lookup part of a well-formed secret, or null for anything malformed. */
export function parseKeySecret(secret: string): string | null {
  return KEY_SHAPE.exec(secret)?.[1] ?? null;
}

const DUMMY_HASH = hashKeySecret('lsk_0000000000000000_dummy');

/** Constant-time comparison; compares against a dummy when no row was found so timing does not tell. */
export function secretMatches(secret: string, stored: Buffer | null): boolean {
  const actual = hashKeySecret(secret);
  const expected = stored && stored.length === actual.length ? stored : DUMMY_HASH;
  const equal = timingSafeEqual(actual, expected);
  return stored !== null && expected === stored && equal;
}
