/**
 * The content hashes kept in `record_links.left_hash` / `right_hash`, and the JSON text a shadow is stored
 * as. A hash is sha1 (base64url) of the stable JSON (sorted keys) of exactly the mapped fields of a side's
 * values.
 */
import { hash } from 'node:crypto';

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
 * names and values on both sides, as after a create): the last hash is reused then.
 */
function hashOf(text: string): string {
  if (text !== lastHashed.text) lastHashed = { text, hash: hash('sha1', text, 'base64url') };
  return lastHashed.hash;
}

/**
 * The content hash of a side's mapped values: sha1 (base64url) of the stable JSON of exactly those fields
 * (missing ones as null). Equal to hashing `stableJson` of the picked values, without building the object.
 */
export function contentHash(values: Record<string, unknown> | null, fields: string[]): string | null {
  if (!values) return null;
  return hashOf(hashedText(values, hashKeysOf(fields)).text);
}

/**
 * Shadows whose JSON text is already known: the stable JSON their hash was taken from, when they hold exactly
 * the mapped fields (as after a create). The store keeps that text as the shadow (any key order is the same
 * JSON object), so it is not serialized a second time (see `shadowJson`).
 */
const shadowTexts = new WeakMap<object, string>();

/**
 * `contentHash` of a shadow about to be stored; remembers its text for `shadowJson` when it can stand for the
 * whole shadow.
 */
export function shadowHash(shadow: Record<string, unknown>, fields: string[]): string {
  const { text, exact } = hashedText(shadow, hashKeysOf(fields));
  if (exact) shadowTexts.set(shadow, text);
  return hashOf(text);
}

/** A shadow's JSON text as stored. */
export function shadowJson(shadow: Record<string, unknown>): string {
  return shadowTexts.get(shadow) ?? JSON.stringify(shadow);
}
