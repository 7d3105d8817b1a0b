/**
 * The benchmark's table: ten columns of the common types, the same shape and the same values on PostgreSQL
 * and MariaDB. Row `i` (1..N) is a pure function of `i`, generated natively (SQL) for the source table and in
 * JavaScript (canonical values) for the connector's bulk write, so both writes carry the same data and the
 * written table can be checked against the source with one checksum query.
 */
import type { CanonicalValue } from '@lockstep/domain';

export const SOURCE_TABLE = 'bench_src';
/** Written by the native pipeline (`COPY ... FROM STDIN`; MariaDB: a second database, see targets.ts). */
export const NATIVE_TARGET_TABLE = 'bench_native_dst';
/** Written by the connector's `createRecords`. */
export const CONNECTOR_TARGET_TABLE = 'bench_connector_dst';

export const COLUMNS = [
  'id',
  'n_int',
  'n_big',
  'amount',
  'ratio',
  'flag',
  'code',
  'note',
  'day',
  'at',
] as const;

const NOTE = ' lorem ipsum dolor sit amet, consectetur adipiscing elit';
const EPOCH_MS = Date.UTC(2020, 0, 1);
const DAY_MS = 86_400_000;

export function postgresTableDdl(qualifiedName: string): string {
  return `CREATE TABLE ${qualifiedName} (
    id bigint PRIMARY KEY,
    n_int integer NOT NULL,
    n_big bigint NOT NULL,
    amount numeric(12,2) NOT NULL,
    ratio double precision NOT NULL,
    flag boolean NOT NULL,
    code varchar(40) NOT NULL,
    note text,
    day date NOT NULL,
    at timestamptz NOT NULL
  )`;
}

/** Row expressions of `i` (a bigint), in PostgreSQL. */
export function postgresGenerate(qualifiedName: string, rows: number): string {
  return `INSERT INTO ${qualifiedName}
    SELECT i,
           (i * 7919) % 1000003,
           i * 1000000007,
           ((i * 37) % 10000000)::numeric / 100,
           i::float8 / 7,
           i % 3 = 0,
           'C' || lpad(i::text, 10, '0') || '-' || (i % 97),
           CASE WHEN i % 10 = 0 THEN NULL ELSE 'row ' || i || '${NOTE}' END,
           date '2020-01-01' + (i % 2000)::int,
           timestamptz '2020-01-01 00:00:00+00' + i * interval '17 seconds'
      FROM generate_series(1::bigint, ${rows}::bigint) AS i`;
}

export function mariadbTableDdl(name: string): string {
  return `CREATE TABLE \`${name}\` (
    id BIGINT NOT NULL PRIMARY KEY,
    n_int INT NOT NULL,
    n_big BIGINT NOT NULL,
    amount DECIMAL(12,2) NOT NULL,
    ratio DOUBLE NOT NULL,
    flag BOOLEAN NOT NULL,
    code VARCHAR(40) NOT NULL,
    note TEXT NULL,
    day DATE NOT NULL,
    at TIMESTAMP(0) NULL DEFAULT NULL
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;
}

/** The same rows in MariaDB, from a recursive sequence (run with the session time zone at UTC). */
export function mariadbGenerate(name: string, rows: number): string {
  return `INSERT INTO \`${name}\`
    WITH RECURSIVE seq(i) AS (SELECT CAST(1 AS SIGNED) UNION ALL SELECT i + 1 FROM seq WHERE i < ${rows})
    SELECT i,
           (i * 7919) % 1000003,
           i * 1000000007,
           ((i * 37) % 10000000) / 100,
           i / 7e0,
           i % 3 = 0,
           CONCAT('C', LPAD(i, 10, '0'), '-', i % 97),
           IF(i % 10 = 0, NULL, CONCAT('row ', i, '${NOTE}')),
           DATE '2020-01-01' + INTERVAL (i % 2000) DAY,
           TIMESTAMP '2020-01-01 00:00:00' + INTERVAL (i * 17) SECOND
      FROM seq`;
}

function integer(value: bigint): CanonicalValue {
  const asNumber = Number(value);
  return Number.isSafeInteger(asNumber) ? asNumber : value.toString();
}

/** Row `i` as canonical values (libs/domain/src/types/type-class.ts), keyed by column name. */
export function canonicalRow(i: number): Record<string, CanonicalValue> {
  const big = BigInt(i);
  const cents = (i * 37) % 10_000_000;
  return {
    id: integer(big),
    n_int: integer((big * 7919n) % 1000003n),
    n_big: integer(big * 1000000007n),
    amount: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`,
    ratio: i / 7,
    flag: i % 3 === 0,
    code: `C${String(i).padStart(10, '0')}-${i % 97}`,
    note: i % 10 === 0 ? null : `row ${i}${NOTE}`,
    day: new Date(EPOCH_MS + (i % 2000) * DAY_MS).toISOString().slice(0, 10),
    at: new Date(EPOCH_MS + i * 17_000).toISOString().replace('.000Z', 'Z'),
  };
}
