import { randomFillSync } from 'node:crypto';

/** Id prefixes of spec 2.1, plus the service's own resources. */
export const ID_PREFIX = {
  account: 'acc',
  apiKey: 'key',
  sync: 'sync',
  table: 'table',
  field: 'field',
  operation: 'op',
  issue: 'iss',
  record: 'rec',
  liveExport: 'lex',
  run: 'run',
  /** A held delete (pending deletes are addressed by their record in the spec; the id is internal). */
  pendingDelete: 'pdel',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const ID_BODY = /^[0-9a-z]{20}$/;

/**
 * A new id such as `sync_3k9x...`: prefix, underscore, 20 base-36 characters: the creation time in
 * milliseconds (8 characters, until the year 2059) then 12 random ones (about 62 bits). Ids made one after
 * another sort together, so the store's primary-key indexes grow at their end rather than at random places
 * (an initial sync inserts thousands of record and operation ids a second).
 */
export function newId(kind: IdKind): string {
  if (poolOffset + 12 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let body = timePart();
  for (let index = poolOffset; index < poolOffset + 12; index += 1) body += ALPHABET[pool[index]! % 36];
  poolOffset += 12;
  return `${ID_PREFIX[kind]}_${body}`;
}

let lastTime = -1;
let lastTimePart = '';

/** The creation time's 8 characters, made once per millisecond (a page's ids share a few). */
function timePart(): string {
  const now = Date.now();
  if (now !== lastTime) {
    lastTime = now;
    lastTimePart = now.toString(36).padStart(8, '0').slice(-8);
  }
  return lastTimePart;
}

/**
 * Random bytes drawn 4 KB at a time: an engine page makes thousands of ids, and one system call per id adds
 * up.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** True when `value` has the shape of an id of that kind (it may still not exist). */
export function isId(kind: IdKind, value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const prefix = `${ID_PREFIX[kind]}_`;
  return value.startsWith(prefix) && ID_BODY.test(value.slice(prefix.length));
}
