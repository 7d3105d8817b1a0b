/**
 * Live export destination (`LiveExportTarget`, see libs/connectors/core/src/live-export.ts). The location is
 * the connection's database. Tables an export creates hold `lockstep_source_id` (VARCHAR(255), a binary
 * no-pad collation so ids compare byte for byte, UNIQUE), `lockstep_row_hash` and the mapped columns, typed
 * like `createTable` types them (`nativeColumnType`).
 *
 * A batch is one transaction: multi-row `INSERT ... ON DUPLICATE KEY UPDATE` (1,000 rows a statement) for
 * new and changed rows, then `DELETE ... WHERE lockstep_source_id IN (...)`, so rows with a NULL id (someone
 * else's) are never touched. An abort kills the running statement (`KILL QUERY`) and rolls back.
 */
import {
  ConnectorError,
  EXPORT_HASH_COLUMN,
  EXPORT_ID_COLUMN,
  ExportAbortedError,
  type ExportBatch,
  type ExportHashPage,
  type ExportTableInfo,
  type ExportTableSpec,
  type ExportWriteOptions,
  type ProvisionResult,
} from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { findTableMeta, loadTableMeta, type TableMeta } from './catalog';
import { exec, rows, streamRows, type Db } from './db';
import { encodeValue, ValueError } from './encode';
import { nativeColumnType, type ServerInfo } from './native-types';
import { chunk, derivedName, placeholders, quoteIdent, quoteString } from './sql';
import type { ClassifiedColumn } from './types';

/** Rows per INSERT statement. */
const ROWS_PER_STATEMENT = 1000;

const EXPORT_TABLE_TYPE_SQL = `
SELECT TABLE_TYPE AS type
  FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`;

const EXPORT_COLUMNS_SQL = `
SELECT COLUMN_NAME AS name
  FROM information_schema.COLUMNS
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`;

const CREATE_EXPORT_TABLE_SQL = (table: string, definitions: string[]) => `
CREATE TABLE IF NOT EXISTS ${quoteIdent(table)} (
  ${definitions.join(', ')},
  UNIQUE KEY ${quoteIdent(EXPORT_ID_COLUMN)} (${quoteIdent(EXPORT_ID_COLUMN)})
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Created by Lockstep live export'`;

/** The single-column unique indexes on the id column. */
const ID_UNIQUE_SQL = `
SELECT INDEX_NAME AS name
  FROM information_schema.STATISTICS
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0
 GROUP BY INDEX_NAME
HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = ?`;

const EXPORT_HASHES_SQL = (table: string, where: string) => {
  const id = quoteIdent(EXPORT_ID_COLUMN);
  return `
SELECT ${id} AS i, ${quoteIdent(EXPORT_HASH_COLUMN)} AS h
  FROM ${quoteIdent(table)}
 WHERE ${where}
 ORDER BY ${id}
 LIMIT ?`;
};

const SCAN_EXPORT_HASHES_SQL = (table: string) => {
  const id = quoteIdent(EXPORT_ID_COLUMN);
  return `
SELECT ${id}, ${quoteIdent(EXPORT_HASH_COLUMN)} FROM ${quoteIdent(table)} WHERE ${id} IS NOT NULL`;
};

const UPSERT_SQL = (table: string, names: string[], rowCount: number) => {
  const tuple = `(${placeholders(names.length)})`;
  const updates = names.slice(1).map((column) => `${column} = VALUES(${column})`);
  return `
INSERT INTO ${quoteIdent(table)} (${names.join(', ')})
VALUES ${Array.from({ length: rowCount }, () => tuple).join(', ')}
ON DUPLICATE KEY UPDATE ${updates.join(', ')}`;
};

const DELETE_EXPORTED_SQL = (table: string, count: number) => `
DELETE FROM ${quoteIdent(table)} WHERE ${quoteIdent(EXPORT_ID_COLUMN)} IN (${placeholders(count)})`;

function idCollation(server: ServerInfo): string {
  return server.flavor === 'mariadb' ? 'utf8mb4_nopad_bin' : 'utf8mb4_0900_bin';
}

function checkName(name: string, what: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
  if (name !== name.trimEnd())
    throw new ConnectorError(
      'invalid_data',
      `The ${what} name "${name}" ends with a space, which MySQL does not allow`,
    );
  if ([...name].length > 64)
    throw new ConnectorError(
      'invalid_data',
      `The ${what} name "${name}" is longer than MySQL's 64 characters`,
    );
}

function columnDefinition(column: ExportTableSpec['columns'][number], server: ServerInfo): string {
  checkName(column.name, 'column');
  if (column.name === EXPORT_ID_COLUMN || column.name === EXPORT_HASH_COLUMN) {
    throw new ConnectorError('invalid_data', `"${column.name}" is a name Lockstep keeps for itself`);
  }
  const native = nativeColumnType(column, server);
  if (!native)
    throw new ConnectorError(
      'unsupported',
      `A column of class "${column.typeClass}" cannot be created in MySQL`,
    );
  const comment = native.comment ? ` COMMENT ${quoteString(native.comment)}` : '';
  return `${quoteIdent(column.name)} ${native.sql} NULL${comment}`;
}

/** A batch's parameters for one INSERT of `part`: per row its id, hash and the encoded column values. */
function upsertParams(part: ExportBatch['upserts'], columns: ClassifiedColumn[]): unknown[] {
  const params: unknown[] = [];
  for (const row of part) {
    params.push(row.id, row.hash);
    for (let index = 0; index < columns.length; index += 1) {
      const column = columns[index]!;
      try {
        params.push(encodeValue(column, row.values[column.name] ?? null));
      } catch (error) {
        if (error instanceof ValueError)
          throw new ConnectorError('invalid_data', `Record "${row.id}": ${error.message}`);
        throw error;
      }
    }
  }
  return params;
}

export class MysqlExportTarget {
  /** Descriptions of the tables this target writes, read at `inspectExportTable` (each run does it first). */
  private readonly metas = new Map<string, TableMeta>();

  constructor(
    private readonly db: Db,
    private readonly database: () => string,
    private readonly invalidate: (table: string) => void,
  ) {}

  async provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult> {
    checkName(spec.name, 'table');
    const names = spec.columns.map((column) => column.name);
    if (new Set(names).size !== names.length)
      throw new ConnectorError('invalid_data', 'Two columns have the same name');
    const database = this.database();
    const server = await this.db.server();
    const definitions = spec.columns.map((column) => ({
      name: column.name,
      sql: columnDefinition(column, server),
    }));
    const { created, added } = await this.db.withConnection(async (connection) => {
      const lock = derivedName('lockstep_export', `${database}.${spec.name}`);
      const [locked] = await rows(connection, 'SELECT GET_LOCK(?, 30) AS locked', [lock]);
      if (Number(locked?.['locked']) !== 1)
        throw new ConnectorError('transient', 'Another save is provisioning this table; try again');
      try {
        return await createOrWiden(connection, database, spec.name, definitions, server);
      } finally {
        await connection.query('SELECT RELEASE_LOCK(?)', [lock]).catch(() => undefined);
      }
    }, `Could not provision table "${spec.name}"`);
    this.invalidate(spec.name);
    const table = await this.inspectExportTable(spec.name);
    if (!table) throw new ConnectorError('transient', `Table "${spec.name}" was created but cannot be found`);
    return { table, created, addedColumns: added };
  }

  async inspectExportTable(name: string): Promise<ExportTableInfo | null> {
    const database = this.database();
    const server = await this.db.server();
    return this.db.withConnection(async (connection) => {
      const meta = await findTableMeta(connection, database, name, server);
      if (!meta) {
        this.metas.delete(name);
        return null;
      }
      this.metas.set(name, meta);
      const unique = await rows(connection, ID_UNIQUE_SQL, [database, name, EXPORT_ID_COLUMN]);
      const id = meta.byName.get(EXPORT_ID_COLUMN);
      const hash = meta.byName.get(EXPORT_HASH_COLUMN);
      return {
        name,
        columns: meta.columns
          .filter((column) => column.name !== EXPORT_ID_COLUMN && column.name !== EXPORT_HASH_COLUMN)
          .map((column) => ({
            name: column.name,
            type: column.type,
            typeClass: column.typeClass,
            typeDetails: column.typeDetails,
          })),
        idColumn: !id
          ? 'missing'
          : id.storage !== 'text'
            ? 'wrong_type'
            : unique.length > 0
              ? 'ok'
              : 'not_unique',
        hashColumn: !hash ? 'missing' : hash.storage === 'text' ? 'ok' : 'wrong_type',
        writable: !meta.isView,
      };
    }, `Could not inspect table "${name}"`);
  }

  async readExportHashes(
    name: string,
    options: { after?: string | null; limit: number },
  ): Promise<ExportHashPage> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), 100_000);
    const id = quoteIdent(EXPORT_ID_COLUMN);
    const params: unknown[] = [];
    let where = `${id} IS NOT NULL`;
    if (options.after !== undefined && options.after !== null) {
      where += ` AND ${id} > ?`;
      params.push(options.after);
    }
    params.push(limit + 1);
    const found = await this.db.rows(
      EXPORT_HASHES_SQL(name, where),
      params,
      `Could not read table "${name}"`,
    );
    const page = found
      .slice(0, limit)
      .map((row) => ({ id: String(row['i']), hash: row['h'] === null ? null : String(row['h']) }));
    return { rows: page, next: found.length > limit ? page[page.length - 1]!.id : null };
  }

  async scanExportHashes(
    name: string,
    onRow: (id: string, hash: string | null) => void,
    options: ExportWriteOptions = {},
  ): Promise<number> {
    return streamRows(
      this.db,
      SCAN_EXPORT_HASHES_SQL(name),
      (row) => onRow(String(row[0]), row[1] === null ? null : String(row[1])),
      options.signal,
      `Could not read table "${name}"`,
    );
  }

  private async meta(connection: PoolConnection, name: string): Promise<TableMeta> {
    const known = this.metas.get(name);
    if (known) return known;
    const meta = await loadTableMeta(connection, this.database(), name, await this.db.server());
    this.metas.set(name, meta);
    return meta;
  }

  /** The described columns of a batch; a column the description lacks drops the description. */
  private async batchColumns(
    connection: PoolConnection,
    name: string,
    batch: ExportBatch,
  ): Promise<ClassifiedColumn[]> {
    const meta = await this.meta(connection, name);
    return batch.columns.map((column) => {
      const found = meta.byName.get(column);
      if (!found) {
        this.metas.delete(name);
        throw new ConnectorError('not_found', `Column "${column}" does not exist in table "${name}"`, {
          appCode: 'ER_BAD_FIELD_ERROR',
        });
      }
      return found;
    });
  }

  async writeExportBatch(
    name: string,
    batch: ExportBatch,
    options: ExportWriteOptions = {},
  ): Promise<{ upserted: number; deleted: number }> {
    const { signal } = options;
    if (signal?.aborted) throw new ExportAbortedError();
    const upserts =
      batch.inserts && batch.inserts.length > 0 ? [...batch.inserts, ...batch.upserts] : batch.upserts;
    if (upserts.length === 0 && batch.deletes.length === 0) return { upserted: 0, deleted: 0 };
    let aborted = false;
    try {
      return await this.db.withConnection(async (connection) => {
        const columns = await this.batchColumns(connection, name, batch);
        const onAbort = (): void => {
          aborted = true;
          this.db.rows(`KILL QUERY ${Number(connection.threadId)}`).catch(() => undefined);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const run = async (sql: string, params: unknown[]): Promise<number> => {
          if (aborted || signal?.aborted) throw new ExportAbortedError();
          return (await exec(connection, sql, params)).affectedRows;
        };
        try {
          await run('START TRANSACTION', []);
          const names = [EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN, ...batch.columns].map(quoteIdent);
          for (const part of chunk(upserts, ROWS_PER_STATEMENT))
            await run(UPSERT_SQL(name, names, part.length), upsertParams(part, columns));
          let deleted = 0;
          for (const part of chunk(batch.deletes, ROWS_PER_STATEMENT))
            deleted += await run(DELETE_EXPORTED_SQL(name, part.length), part);
          await run('COMMIT', []);
          return { upserted: upserts.length, deleted };
        } catch (error) {
          await connection.query('ROLLBACK').catch(() => undefined);
          if (
            error instanceof ConnectorError ||
            (typeof error === 'object' && error !== null && 'code' in error)
          )
            this.metas.delete(name);
          throw error;
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      }, `Could not write to table "${name}"`);
    } catch (error) {
      if (aborted || signal?.aborted) throw new ExportAbortedError();
      throw error;
    }
  }
}

/** Creates the export table, or adds the columns it lacks; the caller holds the table's provisioning lock. */
async function createOrWiden(
  connection: PoolConnection,
  database: string,
  name: string,
  definitions: { name: string; sql: string }[],
  server: ServerInfo,
): Promise<{ created: boolean; added: string[] }> {
  const [present] = await rows(connection, EXPORT_TABLE_TYPE_SQL, [database, name]);
  if (present && String(present['type']) === 'VIEW')
    throw new ConnectorError('invalid_data', `"${name}" already exists as a view`);
  if (!present) {
    const idType = `VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${idCollation(server)}`;
    const hidden = [
      `${quoteIdent(EXPORT_ID_COLUMN)} ${idType} NULL`,
      `${quoteIdent(EXPORT_HASH_COLUMN)} VARCHAR(64) CHARACTER SET ascii NULL`,
    ];
    await exec(connection, CREATE_EXPORT_TABLE_SQL(name, [...hidden, ...definitions.map(({ sql }) => sql)]));
    return { created: true, added: [] as string[] };
  }
  const existing = new Set(
    (await rows(connection, EXPORT_COLUMNS_SQL, [database, name])).map((row) => String(row['name'])),
  );
  const missing = definitions.filter((definition) => !existing.has(definition.name));
  for (const definition of missing)
    await exec(connection, `ALTER TABLE ${quoteIdent(name)} ADD COLUMN ${definition.sql}`);
  return { created: false, added: missing.map((definition) => definition.name) };
}
