/**
 * A throw-away database per test file on the real server (admin URL from TEST_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres), dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { ident, qualified } from '../sql';
import type { OutsideWriter } from '@lockstep/connectors-core/testing';

export const ADMIN_URL = process.env['TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function randomName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

export interface TestDatabase {
  name: string;
  /** Connection string to the test database, optionally as another user or with another host/port. */
  url(options?: { user?: string; password?: string; host?: string; port?: number; query?: string }): string;
  /** Superuser client on the test database ("outside Lockstep"). */
  admin: Client;
  outside(schema: string): OutsideWriter;
  drop(): Promise<void>;
}

export async function createTestDatabase(prefix = 'ls_pg'): Promise<TestDatabase> {
  const name = randomName(prefix);
  const server = new Client({ connectionString: ADMIN_URL });
  await server.connect();
  await server.query(`CREATE DATABASE ${ident(name)}`);
  const url = (
    options: { user?: string; password?: string; host?: string; port?: number; query?: string } = {},
  ) => {
    const parsed = new URL(ADMIN_URL);
    parsed.pathname = `/${name}`;
    if (options.user !== undefined) parsed.username = encodeURIComponent(options.user);
    if (options.password !== undefined) parsed.password = encodeURIComponent(options.password);
    if (options.host !== undefined) parsed.hostname = options.host;
    if (options.port !== undefined) parsed.port = String(options.port);
    parsed.search = options.query ?? '';
    return parsed.toString();
  };
  const admin = new Client({ connectionString: url() });
  await admin.connect();
  const where = (values: Record<string, string | number>, offset: number) =>
    Object.keys(values)
      .map((column, position) => `${ident(column)} = $${offset + position + 1}`)
      .join(' AND ');
  return {
    name,
    url,
    admin,
    outside: (schema) => ({
      async insert(table, values) {
        const columns = Object.keys(values);
        const params = columns.map((_, i) => `$${i + 1}`);
        const names = columns.map(ident);
        await admin.query(
          `INSERT INTO ${qualified(schema, table)} (${names.join(', ')}) VALUES (${params.join(', ')})`,
          Object.values(values),
        );
      },
      async update(table, keys, values) {
        const columns = Object.keys(values);
        const sets = columns.map((column, i) => `${ident(column)} = $${i + 1}`);
        await admin.query(
          `UPDATE ${qualified(schema, table)} SET ${sets.join(', ')} WHERE ${where(keys, columns.length)}`,
          [...Object.values(values), ...Object.values(keys)],
        );
      },
      async delete(table, keys) {
        await admin.query(
          `DELETE FROM ${qualified(schema, table)} WHERE ${where(keys, 0)}`,
          Object.values(keys),
        );
      },
    }),
    async drop() {
      await admin.end().catch(() => undefined);
      await server.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
      await server.end();
    },
  };
}
