/**
 * Creating: canonical class (+ the counterpart's details) -> the native column definition of a field
 * Lockstep creates; and the server's version, which decides what it can hold (UUID type, expression
 * defaults, invisible columns).
 */
import type { FieldSpec } from '@lockstep/connectors-core';
import { isTypeClass } from '@lockstep/domain';
import type { ServerFlavor } from './errors';
import { quoteString } from './sql';

export interface ServerInfo {
  flavor: ServerFlavor;
  version: [number, number, number];
}

export function parseServerVersion(text: string): ServerInfo {
  const flavor: ServerFlavor = /mariadb/i.test(text) ? 'mariadb' : 'mysql';
  const match = /(\d+)\.(\d+)\.(\d+)/.exec(text.replace(/^5\.5\.5-/, ''));
  const version: [number, number, number] = match
    ? [Number(match[1]), Number(match[2]), Number(match[3])]
    : [0, 0, 0];
  return { flavor, version };
}

export function atLeast(server: ServerInfo, major: number, minor: number, patch = 0): boolean {
  const [a, b, c] = server.version;
  return a !== major ? a > major : b !== minor ? b > minor : c >= patch;
}

/** MariaDB 10.7+ has a native UUID type. */
export function hasUuidType(server: ServerInfo): boolean {
  return server.flavor === 'mariadb' && atLeast(server, 10, 7);
}

/** `DEFAULT (uuid())`: MariaDB 10.2.1+, MySQL 8.0.13+. */
export function hasExpressionDefaults(server: ServerInfo): boolean {
  return server.flavor === 'mariadb' ? atLeast(server, 10, 2, 1) : atLeast(server, 8, 0, 13);
}

/**
 * INVISIBLE columns (left out of `SELECT *` and of `INSERT` without a column list): MariaDB 10.3.3+,
 * MySQL 8.0.23+.
 */
export function hasInvisibleColumns(server: ServerInfo): boolean {
  return server.flavor === 'mariadb' ? atLeast(server, 10, 3, 3) : atLeast(server, 8, 0, 23);
}

/** Default precision and scale of a decimal whose counterpart did not say (numeric without a modifier). */
export const DEFAULT_DECIMAL = Object.freeze({ precision: 38, scale: 10 });

function positiveInt(value: unknown): number | null {
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number > 0 ? number : null;
}

function options(details: Record<string, unknown> | null | undefined): string[] | null {
  const list = details?.options;
  if (!Array.isArray(list) || list.length === 0) return null;
  const names = list.map((item) =>
    typeof item === 'string'
      ? item
      : typeof item === 'object' && item !== null && 'name' in item
        ? String((item as { name: unknown }).name)
        : String(item),
  );
  return [...new Set(names)];
}

/**
 * The column type (and marker comment) for a field Lockstep creates, the closest native type to the
 * counterpart's class and details. Returns null for a class that cannot be created (`unsupported`).
 */
export function nativeColumnType(
  spec: Pick<FieldSpec, 'typeClass' | 'typeDetails'>,
  server: ServerInfo,
): { sql: string; comment: string | null } | null {
  const details = spec.typeDetails ?? null;
  switch (spec.typeClass) {
    case 'text': {
      const maxLength = positiveInt(details?.max_length);
      return {
        sql: maxLength !== null && maxLength <= 1024 ? `VARCHAR(${maxLength})` : 'TEXT',
        comment: null,
      };
    }
    case 'integer':
      return { sql: 'BIGINT', comment: null };
    case 'decimal': {
      const precision = Math.min(positiveInt(details?.precision) ?? DEFAULT_DECIMAL.precision, 65);
      const givenScale = typeof details?.scale === 'number' && details.scale >= 0 ? details.scale : null;
      const scale = Math.min(
        givenScale ?? (details?.precision !== undefined ? 0 : DEFAULT_DECIMAL.scale),
        30,
        precision,
      );
      return { sql: `DECIMAL(${precision},${scale})`, comment: null };
    }
    case 'float':
      return { sql: 'DOUBLE', comment: null };
    case 'boolean':
      return { sql: 'TINYINT(1)', comment: null };
    case 'date':
      return { sql: 'DATE', comment: null };
    case 'time':
      return { sql: 'TIME(6)', comment: null };
    case 'datetime':
      return { sql: 'DATETIME(6)', comment: null };
    case 'timestamp':
      // TIMESTAMP stops in 2038; a DATETIME(6) holding UTC, marked so it reads back as an instant, does not.
      return { sql: 'DATETIME(6)', comment: 'lockstep:timestamp' };
    case 'interval':
      return { sql: 'VARCHAR(64)', comment: 'lockstep:interval' };
    case 'uuid':
      return hasUuidType(server)
        ? { sql: 'UUID', comment: null }
        : { sql: 'CHAR(36) CHARACTER SET ascii', comment: 'lockstep:uuid' };
    case 'json':
      return { sql: 'JSON', comment: null };
    case 'select': {
      const list = options(details);
      return list
        ? { sql: `ENUM(${list.map(quoteString).join(',')})`, comment: null }
        : { sql: 'VARCHAR(255)', comment: null };
    }
    case 'multi_select': {
      const list = options(details);
      if (list && list.length <= 64 && list.every((item) => !item.includes(',')))
        return { sql: `SET(${list.map(quoteString).join(',')})`, comment: null };
      return { sql: 'JSON', comment: 'lockstep:multi_select' };
    }
    case 'array': {
      const element =
        typeof details?.element_class === 'string' && isTypeClass(details.element_class)
          ? details.element_class
          : 'json';
      return { sql: 'JSON', comment: `lockstep:array:${element}` };
    }
    case 'relation':
      // The target table on this side is not known when the field is created: the linked record's id as text.
      return { sql: 'VARCHAR(255)', comment: null };
    case 'unsupported':
      return null;
  }
}
