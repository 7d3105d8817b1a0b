/**
 * The content hashes kept in `record_links.left_hash` / `right_hash`, and the JSON text a shadow is stored
 * as. A hash is sha1 (base64url) of the stable JSON (sorted keys) of exactly the mapped fields of a side's
 * values.
 */
import { hash } from 'node:crypto';
import type { SideName } from '@lockstep/domain';
import type { LinkRow } from './record-links';

/** Stable JSON (sorted keys): what a content hash is taken from. */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${stableJson(record[key])}`)
    .join(',')}}`;
}

interface HashKey {
  field: string;
  prefix: string;
}

/**
 * Per list of mapped fields: the distinct fields in `stableJson`'s key order, each with its JSON key prefix.
 */
const hashKeys = new WeakMap<string[], HashKey[]>();

function hashKeysOf(fields: string[]): HashKey[] {
  let keys = hashKeys.get(fields);
  if (!keys) {
    keys = [...new Set(fields)].sort().map((field) => ({ field, prefix: `${JSON.stringify(field)}:` }));
    hashKeys.set(fields, keys);
  }
  return keys;
}

function valueJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  return typeof value === 'object' ? stableJson(value) : JSON.stringify(value);
}

/**
 * The stable JSON of exactly these fields of `values` (missing ones as null), and whether `values` holds no
 * other key.
 */
function hashedText(values: Record<string, unknown>, keys: HashKey[]): { text: string; exact: boolean } {
  let text = '{';
  let exact = true;
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index]!;
    const value = values[key.field];
    if (value === undefined) exact = false;
    text += (index === 0 ? '' : ',') + key.prefix + valueJson(value);
  }
  text += '}';
  if (exact) {
    let count = 0;
    for (const name in values) if (Object.prototype.hasOwnProperty.call(values, name)) count += 1;
    exact = count === keys.length;
  }
  return { text, exact };
}

let lastHashed = { text: '', hash: '' };

/**
 * The two sides of a record are hashed one after the other, and often hold the same text (the same field
 * names and values on both sides, as after a create): the last hash is reused then, with the text it was
 * taken from (one string for both sides' shadows).
 */
function hashOf(text: string): { text: string; hash: string } {
  if (text !== lastHashed.text) lastHashed = { text, hash: hash('sha1', text, 'base64url') };
  return lastHashed;
}

/**
 * The content hash of a side's mapped values: sha1 (base64url) of the stable JSON of exactly those fields
 * (missing ones as null). Equal to hashing `stableJson` of the picked values, without building the object.
 */
export function contentHash(values: Record<string, unknown> | null, fields: string[]): string | null {
  if (!values) return null;
  return hashOf(hashedText(values, hashKeysOf(fields)).text).hash;
}

/**
 * The texts a link's shadows were hashed from, when they hold exactly the mapped fields (as after a create):
 * the store keeps that text as the shadow (any key order is the same JSON object), so it is not serialized a
 * second time (see `shadowJson`). Kept on the link under a symbol (JSON and key listings do not see it), each
 * with the shadow it was taken from: a text counts only while the link still holds that very shadow. (A weak
 * map by shadow costs the garbage collector more than serializing again would.)
 */
const HASHED = Symbol('hashedShadowTexts');

interface HashedShadows {
  left: object | null;
  leftText: string;
  right: object | null;
  rightText: string;
}

type WithHashedShadows = LinkRow & { [HASHED]?: HashedShadows };

/**
 * Sets a side's shadow and its content hash (`contentHash` of the shadow), and remembers the text for
 * `shadowJson` when it can stand for the whole shadow. The shadow is not changed afterwards.
 */
export function setShadow(
  link: LinkRow,
  side: SideName,
  shadow: Record<string, unknown>,
  fields: string[],
): void {
  const { text, exact } = hashedText(shadow, hashKeysOf(fields));
  const hashed = hashOf(text);
  const known = ((link as WithHashedShadows)[HASHED] ??= {
    left: null,
    leftText: '',
    right: null,
    rightText: '',
  });
  if (side === 'left') {
    link.left_shadow = shadow;
    link.left_hash = hashed.hash;
    known.left = exact ? shadow : null;
    known.leftText = hashed.text;
  } else {
    link.right_shadow = shadow;
    link.right_hash = hashed.hash;
    known.right = exact ? shadow : null;
    known.rightText = hashed.text;
  }
}

/** A side's shadow as stored (null without one): the text it was hashed from when known, else its JSON. */
export function shadowJson(link: LinkRow, side: SideName): string | null {
  const shadow = side === 'left' ? link.left_shadow : link.right_shadow;
  if (shadow === null) return null;
  const known = (link as WithHashedShadows)[HASHED];
  if (known && side === 'left' && known.left === shadow) return known.leftText;
  if (known && side === 'right' && known.right === shadow) return known.rightText;
  return JSON.stringify(shadow);
}
