/**
 * The two databases the benchmark runs against. Each target makes its own throw-away database(s), fills the
 * source table natively, times the native tools (psql COPY, mysqldump | mariadb) as child processes, and
 * drops everything in `teardown`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { createConnection, type Connection as MysqlConnection, type RowDataPacket } from 'mysql2/promise';
import type { ConnectorDeclaration, Credentials } from '@lockstep/connectors-core';
import { postgresConnector } from '@lockstep/connector-postgres';
import { mysqlConnector } from '@lockstep/connector-mysql';
import {
  COLUMNS,
  CONNECTOR_TARGET_TABLE,
  NATIVE_TARGET_TABLE,
  SOURCE_TABLE,
  mariadbGenerate,
  mariadbTableDdl,
  postgresGenerate,
  postgresTableDdl,
} from './dataset';

export interface TableSummary {
  rows: number;
  /** A checksum of every row's text (same value = same data). */
  checksum: string;
}

export interface BenchTarget {
  /** Connector type (`postgres`, `mysql`). */
  name: string;
  /** Server version, for the report. */
  server: string;
  /** What the native figures are. */
  nativeRead: string;
  nativeWrite: string;
  declaration: ConnectorDeclaration;
  credentials: Credentials;
  base: string;
  /** Makes the throw-away database(s), the source table with `rows` rows and the empty target tables. */
  setup(rows: number): Promise<void>;
  /** Times the native full read of the source table; returns seconds. */
  timeNativeRead(): Promise<number>;
  /** Times the native dump-and-load pipeline into an empty copy of the table; returns seconds. */
  timeNativeWrite(): Promise<number>;
  /** Rows in the native pipeline's target table (checked after each native write). */
  nativeTargetRows(): Promise<number>;
  /** Empties the connector's target table. */
  resetConnectorTarget(): Promise<void>;
  summary(table: string): Promise<TableSummary>;
  teardown(): Promise<void>;
}

/** Runs a bash script (with `set -euo pipefail`) and returns its wall time in seconds. */
function timeShell(script: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code === 0) resolve(seconds);
      else reject(new Error(`native command failed (exit ${code}): ${script.trim()}\n${stderr.trim()}`));
    });
  });
}

function uniqueName(): string {
  return `lockstep_bench_${Date.now()}_${randomBytes(3).toString('hex')}`;
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL

export function postgresTarget(adminUrl: string): BenchTarget {
  const database = uniqueName();
  const schema = 'bench';
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();
  const q = (table: string) => `"${schema}"."${table}"`;
  let client: Client | null = null;
  let created = false;

  const db = (): Client => {
    if (!client) throw new Error('postgres target is not set up');
    return client;
  };

  return {
    name: 'postgres',
    server: 'PostgreSQL',
    nativeRead: 'psql -c "COPY bench_src TO STDOUT" > /dev/null',
    nativeWrite: 'psql -c "COPY bench_src TO STDOUT" | psql -c "\\copy bench_native_dst FROM pstdin"',
    declaration: postgresConnector,
    credentials: { connectionString: databaseUrl },
    base: schema,

    async setup(rows) {
      const admin = new Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${database}`);
        created = true;
        const version = await admin.query<{ server_version: string }>('SHOW server_version');
        this.server = `PostgreSQL ${version.rows[0].server_version}`;
      } finally {
        await admin.end();
      }
      client = new Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`CREATE SCHEMA ${schema}`);
      for (const table of [SOURCE_TABLE, NATIVE_TARGET_TABLE, CONNECTOR_TARGET_TABLE]) {
        await client.query(postgresTableDdl(q(table)));
      }
      await client.query(postgresGenerate(q(SOURCE_TABLE), rows));
      await client.query(`VACUUM ANALYZE ${q(SOURCE_TABLE)}`);
    },

    async timeNativeRead() {
      return timeShell(
        `psql "$BENCH_DB" -X -q -v ON_ERROR_STOP=1 -c 'COPY ${q(SOURCE_TABLE)} TO STDOUT' > /dev/null`,
        {
          BENCH_DB: databaseUrl,
        },
      );
    },

    async timeNativeWrite() {
      await db().query(`TRUNCATE ${q(NATIVE_TARGET_TABLE)}`);
      return timeShell(
        `psql "$BENCH_DB" -X -q -v ON_ERROR_STOP=1 -c 'COPY ${q(SOURCE_TABLE)} TO STDOUT' \\
           | psql "$BENCH_DB" -X -q -v ON_ERROR_STOP=1 -c '\\copy ${q(NATIVE_TARGET_TABLE)} FROM pstdin'`,
        { BENCH_DB: databaseUrl },
      );
    },

    async nativeTargetRows() {
      const result = await db().query<{ n: string }>(`SELECT count(*) AS n FROM ${q(NATIVE_TARGET_TABLE)}`);
      return Number(result.rows[0].n);
    },

    async resetConnectorTarget() {
      await db().query(`TRUNCATE ${q(CONNECTOR_TARGET_TABLE)}`);
    },

    async summary(table) {
      const columns = COLUMNS.map((column) => `"${column}"`).join(', ');
      const result = await db().query<{ n: string; checksum: string | null }>(
        `SELECT count(*) AS n, md5(string_agg(row(${columns})::text, E'\\n' ORDER BY id)) AS checksum FROM ${q(table)}`,
      );
      return { rows: Number(result.rows[0].n), checksum: result.rows[0].checksum ?? '' };
    },

    async teardown() {
      if (client) {
        await client.end().catch(() => undefined);
        client = null;
      }
      if (!created) return;
      const admin = new Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// MariaDB / MySQL

export function mariadbTarget(adminUrl: string): BenchTarget {
  const database = uniqueName();
  /** mysqldump | mariadb loads the dumped `bench_src` into this second database. */
  const copyDatabase = `${database}_copy`;
  const url = new URL(adminUrl);
  const host = url.hostname || '127.0.0.1';
  const port = url.port || '3306';
  const user = decodeURIComponent(url.username || 'root');
  const password = decodeURIComponent(url.password);
  const connectorUrl = new URL(adminUrl);
  connectorUrl.pathname = `/${database}`;
  // The client binaries take the password from MYSQL_PWD (never on the command line).
  const cliEnv = { BENCH_HOST: host, BENCH_PORT: port, BENCH_USER: user, MYSQL_PWD: password };
  const cli = '-h "$BENCH_HOST" -P "$BENCH_PORT" -u "$BENCH_USER"';
  let conn: MysqlConnection | null = null;
  let created = false;

  const db = (): MysqlConnection => {
    if (!conn) throw new Error('mysql target is not set up');
    return conn;
  };

  return {
    name: 'mysql',
    server: 'MariaDB',
    nativeRead: 'mysqldump db bench_src > /dev/null',
    nativeWrite: 'mysqldump db bench_src | mariadb db_copy',
    declaration: mysqlConnector,
    credentials: { connectionString: connectorUrl.toString() },
    base: database,

    async setup(rows) {
      conn = await createConnection({
        host,
        port: Number(port),
        user,
        password,
        multipleStatements: false,
        dateStrings: true,
      });
      const [version] = await conn.query<RowDataPacket[]>('SELECT VERSION() AS v');
      this.server = /mariadb/i.test(String(version[0].v))
        ? `MariaDB ${version[0].v}`
        : `MySQL ${version[0].v}`;
      await conn.query(`CREATE DATABASE \`${database}\``);
      created = true;
      await conn.query(`CREATE DATABASE \`${copyDatabase}\``);
      await conn.query(`USE \`${database}\``);
      await conn.query(`SET time_zone = '+00:00'`);
      // MariaDB bounds recursive CTEs by max_recursive_iterations, MySQL by cte_max_recursion_depth.
      await conn.query(`SET SESSION max_recursive_iterations = ${rows + 10}`).catch(() => undefined);
      await conn.query(`SET SESSION cte_max_recursion_depth = ${rows + 10}`).catch(() => undefined);
      for (const table of [SOURCE_TABLE, CONNECTOR_TARGET_TABLE]) await conn.query(mariadbTableDdl(table));
      await conn.query(mariadbGenerate(SOURCE_TABLE, rows));
      await conn.query(`ANALYZE TABLE \`${SOURCE_TABLE}\``);
    },

    async timeNativeRead() {
      return timeShell(`mysqldump ${cli} "$BENCH_DB" ${SOURCE_TABLE} > /dev/null`, {
        ...cliEnv,
        BENCH_DB: database,
      });
    },

    async timeNativeWrite() {
      await db().query(`DROP TABLE IF EXISTS \`${copyDatabase}\`.\`${SOURCE_TABLE}\``);
      return timeShell(`mysqldump ${cli} "$BENCH_DB" ${SOURCE_TABLE} | mariadb ${cli} "$BENCH_COPY_DB"`, {
        ...cliEnv,
        BENCH_DB: database,
        BENCH_COPY_DB: copyDatabase,
      });
    },

    async nativeTargetRows() {
      const [rows] = await db().query<RowDataPacket[]>(
        `SELECT COUNT(*) AS n FROM \`${copyDatabase}\`.\`${SOURCE_TABLE}\``,
      );
      return Number(rows[0].n);
    },

    async resetConnectorTarget() {
      await db().query(`TRUNCATE TABLE \`${CONNECTOR_TARGET_TABLE}\``);
    },

    async summary(table) {
      const row = `CONCAT_WS('|', ${COLUMNS.map((column) => `IFNULL(\`${column}\`, '\\\\N')`).join(', ')})`;
      const [rows] = await db().query<RowDataPacket[]>(
        `SELECT COUNT(*) AS n, CAST(SUM(CRC32(${row})) AS CHAR) AS s1, CAST(BIT_XOR(CRC32(CONCAT(id, '#', ${row}))) AS CHAR) AS s2 FROM \`${table}\``,
      );
      return { rows: Number(rows[0].n), checksum: `${rows[0].s1 ?? ''}/${rows[0].s2 ?? ''}` };
    },

    async teardown() {
      if (conn) {
        if (created) {
          await conn.query(`DROP DATABASE IF EXISTS \`${database}\``);
          await conn.query(`DROP DATABASE IF EXISTS \`${copyDatabase}\``);
        }
        await conn.end().catch(() => undefined);
        conn = null;
      }
    },
  };
}
