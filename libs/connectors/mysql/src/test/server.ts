/**
 * Test helpers: a throw-away database on the test server (`TEST_MYSQL_URL`, default
 * `mysql://root@127.0.0.1:3306`), an admin client and the contract-suite harness.
 */
import { randomBytes } from 'node:crypto';
import { createConnection, type Connection as DriverConnection } from 'mysql2/promise';
import type { ContractHarness, FixtureColumn, OutsideWriter } from '@lockstep/connectors-core/testing';
import { mysqlConnector } from '../declaration';

export const TEST_MYSQL_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

/** The test server URL with another database, user, password or host. */
export function testUrl(
  parts: { database?: string; user?: string; password?: string; host?: string; port?: number } = {},
): string {
  const url = new URL(TEST_MYSQL_URL);
  if (parts.database !== undefined) url.pathname = `/${encodeURIComponent(parts.database)}`;
  if (parts.user !== undefined) url.username = encodeURIComponent(parts.user);
  if (parts.password !== undefined) url.password = encodeURIComponent(parts.password);
  if (parts.host !== undefined) url.hostname = parts.host.includes(':') ? `[${parts.host}]` : parts.host;
  if (parts.port !== undefined) url.port = String(parts.port);
  return url.toString();
}

export function randomName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

/** A native client, "outside Lockstep" (no @lockstep_origin), on the given database. */
export async function nativeClient(database?: string): Promise<DriverConnection> {
  return createConnection({
    uri: testUrl(database ? { database } : {}),
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
}

export interface TestDatabase {
  name: string;
  admin: DriverConnection;
  drop(): Promise<void>;
}

/** Creates a database with a random name and an admin client using it. */
export async function createTestDatabase(prefix = 'lockstep_test'): Promise<TestDatabase> {
  const name = randomName(prefix);
  const bootstrap = await nativeClient();
  await bootstrap.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  await bootstrap.end();
  const admin = await nativeClient(name);
  return {
    name,
    admin,
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.end();
    },
  };
}

function whereSql(where: Record<string, string | number>): { sql: string; params: (string | number)[] } {
  const keys = Object.keys(where);
  return { sql: keys.map((key) => `\`${key}\` = ?`).join(' AND '), params: keys.map((key) => where[key]!) };
}

export function outsideWriter(client: () => DriverConnection): OutsideWriter {
  return {
    async insert(table, values) {
      const keys = Object.keys(values);
      await client().query(
        `INSERT INTO \`${table}\` (${keys.map((key) => `\`${key}\``).join(', ')}) VALUES (?)`,
        [keys.map((key) => values[key])],
      );
    },
    async update(table, where, values) {
      const condition = whereSql(where);
      const keys = Object.keys(values);
      await client().query(
        `UPDATE \`${table}\` SET ${keys.map((key) => `\`${key}\` = ?`).join(', ')} WHERE ${condition.sql}`,
        [...keys.map((key) => values[key]), ...condition.params],
      );
    },
    async delete(table, where) {
      const condition = whereSql(where);
      await client().query(`DELETE FROM \`${table}\` WHERE ${condition.sql}`, condition.params);
    },
  };
}

/** Display widths: MariaDB and MySQL before 8.0.19 show `int(11)`, MySQL 8.0.19+ shows `int`. */
const sized = (name: string, width: string, suffix = '') => new RegExp(`^${name}(\\(${width}\\))?${suffix}$`);

/** One column per native type MySQL 8 and MariaDB 10.11 both have (MariaDB-only ones: connection.spec.ts). */
export const FIXTURE_COLUMNS: FixtureColumn[] = [
  {
    name: 'id',
    type: sized('bigint', '20'),
    typeClass: 'integer',
    read: true,
    write: false,
    primary: true,
    required: false,
    typeDetails: { generated: true },
  },
  {
    name: 'c_varchar',
    type: 'varchar(40)',
    typeClass: 'text',
    read: true,
    write: true,
    required: false,
    primary: false,
    typeDetails: { max_length: 40 },
    samples: ['hello', '', 'ünïcødé ✓ "q" \\ \'s'],
  },
  {
    name: 'c_char',
    type: 'char(3)',
    typeClass: 'text',
    read: true,
    write: true,
    samples: ['abc'],
    normalized: [{ write: 'ab ', read: 'ab' }],
  },
  {
    name: 'c_text',
    type: 'text',
    typeClass: 'text',
    read: true,
    write: true,
    samples: ['long text\nwith lines'],
  },
  {
    name: 'c_tinyint',
    type: sized('tinyint', '4'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [-128, 127],
  },
  {
    name: 'c_smallint',
    type: sized('smallint', '6'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [-32768, 32767],
  },
  {
    name: 'c_mediumint',
    type: sized('mediumint', '\\d+'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [8388607],
  },
  {
    name: 'c_int',
    type: sized('int', '11'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [0, -7, 2147483647],
  },
  {
    name: 'c_bigint',
    type: sized('bigint', '20'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [9007199254740991, '9007199254740993', '-9223372036854775808'],
    normalized: [{ write: '42', read: 42 }],
  },
  {
    name: 'c_ubigint',
    type: sized('bigint', '20', ' unsigned'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: ['18446744073709551615'],
  },
  {
    name: 'c_decimal',
    type: 'decimal(12,2)',
    typeClass: 'decimal',
    read: true,
    write: true,
    typeDetails: { precision: 12, scale: 2 },
    samples: ['12.50', '-0.01', '1234567890.00'],
    normalized: [{ write: '1.5', read: '1.50' }],
  },
  { name: 'c_float', type: 'float', typeClass: 'float', read: true, write: true, samples: [1.5, -0.25] },
  {
    name: 'c_double',
    type: 'double',
    typeClass: 'float',
    read: true,
    write: true,
    samples: [0.1, -2.5e-10, 10000000000],
  },
  {
    name: 'c_bool',
    type: 'tinyint(1)',
    typeClass: 'boolean',
    read: true,
    write: true,
    samples: [true, false],
  },
  { name: 'c_bit1', type: 'bit(1)', typeClass: 'boolean', read: true, write: true, samples: [true, false] },
  { name: 'c_bit8', type: 'bit(8)', typeClass: 'integer', read: true, write: true, samples: [0, 255] },
  {
    name: 'c_date',
    type: 'date',
    typeClass: 'date',
    read: true,
    write: true,
    samples: ['2024-02-29', '1000-01-01'],
  },
  {
    name: 'c_datetime',
    type: 'datetime',
    typeClass: 'datetime',
    read: true,
    write: true,
    samples: ['2024-02-29T13:45:30', '9999-12-31T23:59:59'],
  },
  {
    name: 'c_datetime6',
    type: 'datetime(6)',
    typeClass: 'datetime',
    read: true,
    write: true,
    samples: ['2024-02-29T13:45:30.123456', '2024-02-29T13:45:30.5'],
  },
  {
    name: 'c_timestamp',
    type: 'timestamp(3)',
    typeClass: 'timestamp',
    read: true,
    write: true,
    samples: ['2024-02-29T13:45:30.5Z', '2000-01-01T00:00:00Z'],
    normalized: [{ write: '2024-02-29T15:45:30+02:00', read: '2024-02-29T13:45:30Z' }],
  },
  {
    name: 'c_time',
    type: 'time',
    typeClass: 'time',
    read: true,
    write: true,
    samples: ['13:45:30', '00:00:00', '23:59:59'],
  },
  {
    name: 'c_year',
    type: sized('year', '4'),
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [2024],
  },
  {
    name: 'c_json',
    type: 'json',
    typeClass: 'json',
    read: true,
    write: true,
    samples: [{ a: 1, b: [true, null, 'x'] }, [1, 2, 3], 'text'],
  },
  {
    name: 'c_enum',
    type: 'enum',
    typeClass: 'select',
    read: true,
    write: true,
    typeDetails: { options: ['red', 'green', "it's"] },
    samples: ['red', "it's"],
  },
  {
    name: 'c_set',
    type: 'set',
    typeClass: 'multi_select',
    read: true,
    write: true,
    typeDetails: { options: ['red', 'green', 'blue'], allows_multiple_values: true },
    samples: [['red', 'blue'], []],
    normalized: [{ write: ['blue', 'red'], read: ['red', 'blue'] }],
  },
  {
    name: 'c_ref',
    type: sized('int', '11'),
    typeClass: 'relation',
    read: true,
    write: true,
    typeDetails: { target_table: 'ls_fixture_target' },
    samples: ['1', '2'],
  },
  {
    name: 'c_default',
    type: 'varchar(10)',
    typeClass: 'text',
    read: true,
    write: true,
    required: false,
    samples: ['y'],
  },
  {
    name: 'c_generated',
    type: sized('int', '11'),
    typeClass: 'integer',
    read: true,
    write: false,
    typeDetails: { generated: true },
  },
  { name: 'c_blob', type: 'blob', typeClass: 'unsupported', read: false, write: false },
  { name: 'c_varbinary', type: 'varbinary(16)', typeClass: 'unsupported', read: false, write: false },
  { name: 'c_point', type: 'point', typeClass: 'unsupported', read: false, write: false },
];

export const FIXTURE_DDL = (name: string) => `CREATE TABLE \`${name}\` (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  c_varchar VARCHAR(40), c_char CHAR(3), c_text TEXT,
  c_tinyint TINYINT, c_smallint SMALLINT, c_mediumint MEDIUMINT, c_int INT, c_bigint BIGINT,
  c_ubigint BIGINT UNSIGNED,
  c_decimal DECIMAL(12,2), c_float FLOAT, c_double DOUBLE, c_bool TINYINT(1), c_bit1 BIT(1), c_bit8 BIT(8),
  c_date DATE, c_datetime DATETIME, c_datetime6 DATETIME(6), c_timestamp TIMESTAMP(3) NULL, c_time TIME,
  c_year YEAR,
  c_json JSON, c_enum ENUM('red','green','it''s'), c_set SET('red','green','blue'),
  c_ref INT, c_default VARCHAR(10) NULL DEFAULT 'x', c_generated INT AS (c_int * 2) VIRTUAL,
  c_blob BLOB, c_varbinary VARBINARY(16), c_point POINT,
  CONSTRAINT \`${name}_ref\` FOREIGN KEY (c_ref) REFERENCES \`ls_fixture_target\` (id)
) ENGINE=InnoDB`;

/** The contract-suite harness for MySQL / MariaDB. */
export function mysqlHarness(): ContractHarness {
  let database: TestDatabase | null = null;
  const wrongPassword = `wrong-${randomBytes(6).toString('hex')}`;
  const admin = () => {
    if (!database) throw new Error('harness not set up');
    return database.admin;
  };
  return {
    name: 'mysql (MariaDB / MySQL)',
    declaration: mysqlConnector,
    async setup() {
      database = await createTestDatabase('lockstep_contract');
      return database.name;
    },
    async teardown() {
      await database?.drop();
      database = null;
    },
    goodCredentials: () => ({ connectionString: TEST_MYSQL_URL }),
    badCredentials: () => ({
      connectionString: testUrl({ user: 'lockstep_nobody', password: wrongPassword }),
    }),
    unreachableCredentials: () => ({ connectionString: testUrl({ host: '127.0.0.1', port: 1 }) }),
    credentialsForHost: (host) => ({ connectionString: testUrl({ host, password: wrongPassword }) }),
    secrets: () => [wrongPassword, testUrl({ user: 'lockstep_nobody', password: wrongPassword })],
    outside: outsideWriter(admin),
    fixture: {
      async create(name) {
        await admin().query('CREATE TABLE `ls_fixture_target` (id INT PRIMARY KEY, label VARCHAR(20))');
        await admin().query("INSERT INTO `ls_fixture_target` VALUES (1, 'one'), (2, 'two')");
        await admin().query(FIXTURE_DDL(name));
      },
      columns: FIXTURE_COLUMNS,
    },
    async createPlainTable(name, options) {
      const id = options.primaryKey ? 'id INT NOT NULL PRIMARY KEY, ' : '';
      await admin().query(
        `CREATE TABLE \`${name}\` (${id}title VARCHAR(100) NULL, amount INT NULL) ENGINE=InnoDB`,
      );
    },
    // Fields created for these classes come back as the class MySQL can hold.
    createdClass: { relation: 'text' },
    changeTimeoutMs: 5_000,
  };
}
