/**
 * The app side of the engine benchmark: one throw-away PostgreSQL database and one throw-away MariaDB database
 * (the two sides every benchmark sync connects to), the benchmark table in both dialects, native generation
 * of its rows, and the raw bulk write through the connector that the engine's figures are compared with.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import mysql, { type Connection as MysqlConnection, type RowDataPacket } from 'mysql2/promise';
import { Client } from 'pg';
import { DEFAULT_EGRESS_POLICY, type Connection, type RecordCreate } from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import type { CanonicalValue } from '@lockstep/domain';

export type AppKind = 'postgres' | 'mysql';

/** The benchmark table: id integer primary key, two text columns, an integer and a timestamp. */
export const FIELDS = ['id', 'name', 'qty', 'note', 'updated_at'] as const;

const EPOCH_MS = Date.UTC(2024, 0, 1);

/** Row `i` as canonical values, the same values the native generators below produce. */
export function canonicalRow(i: number): Record<string, CanonicalValue> {
  return {
    id: i,
    name: `name ${i}`,
    qty: i % 1000,
    note: `note ${i} lorem ipsum dolor sit amet`,
    updated_at: new Date(EPOCH_MS + i * 1000).toISOString().replace('.000Z', 'Z'),
  };
}

export const uniqueName = (prefix: string) => `${prefix}_${Date.now()}_${randomBytes(3).toString('hex')}`;

export interface AppSide {
  kind: AppKind;
  server: string;
  /** What a sync side stores: the connector's credentials and base. */
  credentials: Record<string, string>;
  base: string;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  createTable(name: string): Promise<void>;
  /** Fills `name` (empty) with rows 1..rows natively. */
  generate(name: string, rows: number): Promise<void>;
  /** Row count, sum of qty and number of rows whose name matches their id (a cheap content check). */
  summary(name: string): Promise<{ rows: number; qtySum: number; namesOk: number }>;
  /** A connector connection as the engine opens it. */
  connect(): Promise<Connection>;
  /** Connections the server currently has open to this benchmark's database (the bench's own included). */
  openConnections(): Promise<number>;
  teardown(): Promise<void>;
}

export async function postgresApp(adminUrl: string): Promise<AppSide> {
  const database = uniqueName('lockstep_bench_app');
  const schema = 'bench';
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!
    .server_version;
  const q = (table: string) => `"${schema}"."${table}"`;
  const sql = async <T>(text: string, params: unknown[] = []) =>
    (await client.query(text, params)).rows as T[];
  return {
    kind: 'postgres',
    server: `PostgreSQL ${version}`,
    credentials: { connectionString: url.toString() },
    base: schema,
    sql,
    async createTable(name) {
      await client.query(
        `CREATE TABLE ${q(name)} (id integer PRIMARY KEY, name text NOT NULL, qty integer NOT NULL, note text, updated_at timestamptz)`,
      );
    },
    async generate(name, rows) {
      await client.query(
        `INSERT INTO ${q(name)} SELECT i, 'name ' || i, i % 1000, 'note ' || i || ' lorem ipsum dolor sit amet',
           timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second' FROM generate_series(1, ${rows}) AS i`,
      );
      await client.query(`ANALYZE ${q(name)}`);
    },
    async summary(name) {
      const row = (
        await sql<{ n: string; s: string | null; ok: string }>(
          `SELECT count(*) AS n, sum(qty) AS s, count(*) FILTER (WHERE name = 'name ' || id) AS ok FROM ${q(name)}`,
        )
      )[0]!;
      return { rows: Number(row.n), qtySum: Number(row.s ?? 0), namesOk: Number(row.ok) };
    },
    connect: () =>
      findConnector('postgres')!.connect({ connectionString: url.toString() }, schema, {
        egress: DEFAULT_EGRESS_POLICY,
      }),
    async openConnections() {
      return Number(
        (
          await sql<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1`, [
            database,
          ])
        )[0]!.n,
      );
    },
    async teardown() {
      await client.end().catch(() => undefined);
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    },
  };
}

export async function mariadbApp(adminUrl: string): Promise<AppSide> {
  const database = uniqueName('lockstep_bench_app');
  const url = new URL(adminUrl);
  const conn: MysqlConnection = await mysql.createConnection({ uri: adminUrl, dateStrings: true });
  await conn.query(`CREATE DATABASE \`${database}\``);
  await conn.query(`USE \`${database}\``);
  await conn.query(`SET time_zone = '+00:00'`);
  const [version] = await conn.query<RowDataPacket[]>('SELECT VERSION() AS v');
  const sql = async <T>(text: string, params: unknown[] = []) => (await conn.query(text, params))[0] as T[];
  const credentials = {
    connectionString: `${url.protocol}//${url.username ? `${url.username}${url.password ? `:${url.password}` : ''}@` : ''}${url.host}`,
  };
  return {
    kind: 'mysql',
    server: /mariadb/i.test(String(version[0]!.v)) ? `MariaDB ${version[0]!.v}` : `MySQL ${version[0]!.v}`,
    credentials,
    base: database,
    sql,
    async createTable(name) {
      await conn.query(
        `CREATE TABLE \`${name}\` (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL, qty INT NOT NULL, note TEXT NULL, updated_at TIMESTAMP(0) NULL DEFAULT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
      );
    },
    async generate(name, rows) {
      await conn.query(`SET SESSION max_recursive_iterations = ${rows + 10}`).catch(() => undefined);
      await conn.query(`SET SESSION cte_max_recursion_depth = ${rows + 10}`).catch(() => undefined);
      await conn.query(
        `INSERT INTO \`${name}\` WITH RECURSIVE seq(i) AS (SELECT CAST(1 AS SIGNED) UNION ALL SELECT i + 1 FROM seq WHERE i < ${rows})
           SELECT i, CONCAT('name ', i), i % 1000, CONCAT('note ', i, ' lorem ipsum dolor sit amet'), TIMESTAMP '2024-01-01 00:00:00' + INTERVAL i SECOND FROM seq`,
      );
      await conn.query(`ANALYZE TABLE \`${name}\``);
    },
    async summary(name) {
      const row = (
        await sql<{ n: number; s: string | null; ok: string | null }>(
          `SELECT COUNT(*) AS n, SUM(qty) AS s, SUM(name = CONCAT('name ', id)) AS ok FROM \`${name}\``,
        )
      )[0]!;
      return { rows: Number(row.n), qtySum: Number(row.s ?? 0), namesOk: Number(row.ok ?? 0) };
    },
    connect: () => findConnector('mysql')!.connect(credentials, database, { egress: DEFAULT_EGRESS_POLICY }),
    async openConnections() {
      return Number(
        (
          await sql<{ n: number }>(`SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ?`, [
            database,
          ])
        )[0]!.n,
      );
    },
    async teardown() {
      await conn.query(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => undefined);
      await conn.end().catch(() => undefined);
    },
  };
}

export interface RawWrite {
  rows: number;
  failed: number;
  seconds: number;
  rowsPerSecond: number;
  changeCapture: boolean;
}

/**
 * The connector's raw bulk write (as in tools/bench/connectors): `createRecords` of rows 1..rows with service
 * ids, in batches of `batch`, into a fresh table prepared with a service id column (and change capture
 * triggers when `changeCapture`, as the engine prepares its targets). The table is dropped afterwards.
 */
export async function rawWrite(
  app: AppSide,
  rows: number,
  batch: number,
  changeCapture: boolean,
): Promise<RawWrite> {
  const table = `raw_write_${changeCapture ? 'cc' : 'plain'}`;
  await app.createTable(table);
  const connection = await app.connect();
  let failed = 0;
  let written = 0;
  try {
    await connection.prepareTable(table, { changeCapture, serviceIdColumn: true });
    const started = performance.now();
    for (let first = 1; first <= rows; first += batch) {
      const last = Math.min(rows, first + batch - 1);
      const records: RecordCreate[] = [];
      for (let i = first; i <= last; i += 1)
        records.push({ serviceId: randomUUID(), values: canonicalRow(i) });
      for (const result of await connection.createRecords(table, records)) {
        if (result.ok) written += 1;
        else failed += 1;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    if (changeCapture) await connection.unprepareTable(table).catch(() => undefined);
    return { rows: written, failed, seconds, rowsPerSecond: written / seconds, changeCapture };
  } finally {
    await connection.close().catch(() => undefined);
    await app
      .sql(
        app.kind === 'postgres'
          ? `DROP TABLE IF EXISTS "${app.base}"."${table}" CASCADE`
          : `DROP TABLE IF EXISTS \`${table}\``,
      )
      .catch(() => undefined);
  }
}
