/** Scratch PostgreSQL schemas and MariaDB databases for e2e tests, dropped afterwards. */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { Client } from 'pg';

export const PG_URL = process.env['TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const MYSQL_URL = process.env['TEST_MYSQL_URL'] ?? 'mysql://root@127.0.0.1:3306';

export const uniqueName = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex')}`;

export interface ScratchPg {
  schema: string;
  url: string;
  sql(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  drop(): Promise<void>;
}

export async function scratchPg(setup = ''): Promise<ScratchPg> {
  const schema = uniqueName('e2e');
  const client = new Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path TO ${schema}`);
  if (setup) await client.query(setup);
  return {
    schema,
    url: PG_URL,
    sql: async (text, params = []) => (await client.query(text, params)).rows,
    drop: async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

export interface ScratchMysql {
  database: string;
  url: string;
  sql(text: string, params?: unknown[]): Promise<unknown>;
  drop(): Promise<void>;
}

export async function scratchMysql(setup: string[] = []): Promise<ScratchMysql> {
  const database = uniqueName('e2e');
  const connection = await mysql.createConnection({ uri: MYSQL_URL, multipleStatements: false });
  await connection.query(`CREATE DATABASE \`${database}\``);
  await connection.query(`USE \`${database}\``);
  for (const statement of setup) await connection.query(statement);
  return {
    database,
    url: MYSQL_URL,
    sql: async (text, params = []) => (await connection.query(text, params))[0],
    drop: async () => {
      await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await connection.end();
    },
  };
}
