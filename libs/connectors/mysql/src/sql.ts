/**
 * Small SQL helpers shared by the MySQL connector: identifier quoting and placeholder lists. Values always
 * travel as driver parameters (`?`); only identifiers are spliced into statements, and only quoted.
 */
import { createHash } from 'node:crypto';

/** Quotes an identifier with backticks (a backtick inside is doubled), as MySQL and MariaDB require. */
export function quoteIdent(name: string): string {
  if (name.length === 0) throw new Error('empty identifier');
  if (name.includes('\u0000')) throw new Error('identifier contains a NUL character');
  return '`' + name.replace(/`/g, '``') + '`';
}

/** `?, ?, ?` for n parameters. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** Quotes a string literal for the few places a parameter cannot go (DDL: COMMENT, ENUM options). */
export function quoteString(value: string): string {
  if (value.includes('\u0000')) throw new Error('string literal contains a NUL character');
  return "'" + value.replace(/\\/g, '\\\\').replace(/'/g, "''") + "'";
}

/**
 * A short, stable, identifier-safe name derived from a table name, for trigger names (64 characters at most
 * in MySQL): a readable prefix plus a hash so that long or exotic table names never collide.
 */
export function derivedName(prefix: string, table: string): string {
  const readable = table.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 32);
  const hash = createHash('sha1').update(table).digest('hex').slice(0, 10);
  return `${prefix}_${readable}_${hash}`;
}

/** Splits `items` into chunks of at most `size`. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}
