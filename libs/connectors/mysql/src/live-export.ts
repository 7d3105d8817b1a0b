/**
 * Live export destination for MySQL / MariaDB (see libs/connectors/core/src/live-export.ts). The location is
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
  type LiveExportTarget,
  type ProvisionResult,
} from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { exec, rows, type Db } from './db';
import { loadTableMeta, type TableMeta } from './schema';
import { chunk, derivedName, placeholders, quoteIdent, quoteString } from './sql';
import { encodeValue, nativeColumnType, ValueError, type ClassifiedColumn, type ServerInfo } from './types';

/** Rows per INSERT statement. */
const ROWS_PER_STATEMENT = 1000;

function idCollation(server: ServerInfo): string {
  return server.flavor === 'mariadb' ? 'utf8mb4_nopad_bin' : 'utf8mb4_0900_bin';
}

function checkName(name: string, what: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
  if (name !== name.trimEnd()) throw new ConnectorError('invalid_data', `The ${what} name "${name}" ends with a space, which MySQL does not allow`);
  if ([...name].length > 64) throw new ConnectorError('invalid_data', `The ${what} name "${name}" is longer than MySQL's 64 characters`);
}

export class MysqlLiveExport implements LiveExportTarget {
  /** Descriptions of the tables this target writes, read at `inspectExportTable` (each run does it first). */
  private readonly metas = new Map<string, TableMeta>();

  constructor(
    private readonly db: Db,
    private readonly database: () => string,
    private readonly invalidate: (table: string) => void,
  ) {}

  private columnDefinition(column: ExportTableSpec['columns'][number], server: ServerInfo): string {
    checkName(column.name, 'column');
    if (column.name === EXPORT_ID_COLUMN || column.name === EXPORT_HASH_COLUMN) {
      throw new ConnectorError('invalid_data', `"${column.name}" is a name Lockstep keeps for itself`);
    }
    const native = nativeColumnType(column, server);
    if (!native) throw new ConnectorError('unsupported', `A column of class "${column.typeClass}" cannot be created in MySQL`);
    return `${quoteIdent(column.name)} ${native.sql} NULL${native.comment ? ` COMMENT ${quoteString(native.comment)}` : ''}`;
  }

  async provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult> {
    checkName(spec.name, 'table');
    const names = spec.columns.map((column) => column.name);
    if (new Set(names).size !== names.length) throw new ConnectorError('invalid_data', 'Two columns have the same name');
    const database = this.database();
    const server = await this.db.server();
    const definitions = spec.columns.map((column) => ({ name: column.name, sql: this.columnDefinition(column, server) }));
    const { created, added } = await this.db.withConnection(async (connection) => {
      const lock = derivedName('lockstep_export', `${database}.${spec.name}`);
      const [locked] = await rows(connection, 'SELECT GET_LOCK(?, 30) AS locked', [lock]);
      if (Number(locked?.['locked']) !== 1) throw new ConnectorError('transient', 'Another save is provisioning this table; try again');
      try {
        const [present] = await rows(connection, 'SELECT TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [
          database,
          spec.name,
        ]);
        if (present && String(present['type']) === 'VIEW') throw new ConnectorError('invalid_data', `"${spec.name}" already exists as a view`);
        if (!present) {
          const hidden = [
            `${quoteIdent(EXPORT_ID_COLUMN)} VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${idCollation(server)} NULL`,
            `${quoteIdent(EXPORT_HASH_COLUMN)} VARCHAR(64) CHARACTER SET ascii NULL`,
          ];
          await exec(
            connection,
            `CREATE TABLE IF NOT EXISTS ${quoteIdent(spec.name)} (${[...hidden, ...definitions.map((definition) => definition.sql)].join(', ')}, ` +
              `UNIQUE KEY ${quoteIdent(EXPORT_ID_COLUMN)} (${quoteIdent(EXPORT_ID_COLUMN)})) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='Created by Lockstep live export'`,
          );
          return { created: true, added: [] as string[] };
        }
        const existing = new Set(
          (await rows(connection, 'SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [database, spec.name])).map(
            (row) => String(row['name']),
          ),
        );
        const missing = definitions.filter((definition) => !existing.has(definition.name));
        for (const definition of missing) await exec(connection, `ALTER TABLE ${quoteIdent(spec.name)} ADD COLUMN ${definition.sql}`);
        return { created: false, added: missing.map((definition) => definition.name) };
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
      let meta: TableMeta;
      try {
        meta = await loadTableMeta(connection, database, name, server);
      } catch (error) {
        if (error instanceof ConnectorError && error.kind === 'not_found') {
          this.metas.delete(name);
          return null;
        }
        throw error;
      }
      this.metas.set(name, meta);
      const unique = await rows(
        connection,
        `SELECT INDEX_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0
          GROUP BY INDEX_NAME HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = ?`,
        [database, name, EXPORT_ID_COLUMN],
      );
      const id = meta.byName.get(EXPORT_ID_COLUMN);
      const hash = meta.byName.get(EXPORT_HASH_COLUMN);
      return {
        name,
        columns: meta.columns
          .filter((column) => column.name !== EXPORT_ID_COLUMN && column.name !== EXPORT_HASH_COLUMN)
          .map((column) => ({ name: column.name, type: column.type, typeClass: column.typeClass, typeDetails: column.typeDetails })),
        idColumn: !id ? 'missing' : id.storage !== 'text' ? 'wrong_type' : unique.length > 0 ? 'ok' : 'not_unique',
        hashColumn: !hash ? 'missing' : hash.storage === 'text' ? 'ok' : 'wrong_type',
        writable: !meta.isView,
      };
    }, `Could not inspect table "${name}"`);
  }

  async readExportHashes(name: string, options: { after?: string | null; limit: number }): Promise<ExportHashPage> {
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
      `SELECT ${id} AS i, ${quoteIdent(EXPORT_HASH_COLUMN)} AS h FROM ${quoteIdent(name)} WHERE ${where} ORDER BY ${id} LIMIT ?`,
      params,
      `Could not read table "${name}"`,
    );
    const page = found.slice(0, limit).map((row) => ({ id: String(row['i']), hash: row['h'] === null ? null : String(row['h']) }));
    return { rows: page, next: found.length > limit ? page[page.length - 1]!.id : null };
  }

  private async meta(connection: PoolConnection, name: string): Promise<TableMeta> {
    const known = this.metas.get(name);
    if (known) return known;
    const meta = await loadTableMeta(connection, this.database(), name, await this.db.server());
    this.metas.set(name, meta);
    return meta;
  }

  async writeExportBatch(name: string, batch: ExportBatch, options: ExportWriteOptions = {}): Promise<{ upserted: number; deleted: number }> {
    const { signal } = options;
    if (signal?.aborted) throw new ExportAbortedError();
    const upserts = batch.inserts && batch.inserts.length > 0 ? [...batch.inserts, ...batch.upserts] : batch.upserts;
    if (upserts.length === 0 && batch.deletes.length === 0) return { upserted: 0, deleted: 0 };
    let aborted = false;
    try {
      return await this.db.withConnection(async (connection) => {
        const meta = await this.meta(connection, name);
        const columns: ClassifiedColumn[] = batch.columns.map((column) => {
          const found = meta.byName.get(column);
          if (!found) {
            this.metas.delete(name);
            throw new ConnectorError('not_found', `Column "${column}" does not exist in table "${name}"`, { appCode: 'ER_BAD_FIELD_ERROR' });
          }
          return found;
        });
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
          const table = quoteIdent(name);
          const names = [EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN, ...batch.columns].map(quoteIdent);
          const updates = names.slice(1).map((column) => `${column} = VALUES(${column})`).join(', ');
          const tuple = `(${placeholders(names.length)})`;
          for (const part of chunk(upserts, ROWS_PER_STATEMENT)) {
            const params: unknown[] = [];
            for (const row of part) {
              params.push(row.id, row.hash);
              for (let index = 0; index < columns.length; index += 1) {
                const column = columns[index]!;
                try {
                  params.push(encodeValue(column, row.values[column.name] ?? null));
                } catch (error) {
                  if (error instanceof ValueError) throw new ConnectorError('invalid_data', `Record "${row.id}": ${error.message}`);
                  throw error;
                }
              }
            }
            await run(`INSERT INTO ${table} (${names.join(', ')}) VALUES ${part.map(() => tuple).join(', ')} ON DUPLICATE KEY UPDATE ${updates}`, params);
          }
          let deleted = 0;
          for (const part of chunk(batch.deletes, ROWS_PER_STATEMENT)) {
            deleted += await run(`DELETE FROM ${table} WHERE ${quoteIdent(EXPORT_ID_COLUMN)} IN (${placeholders(part.length)})`, part);
          }
          await run('COMMIT', []);
          return { upserted: upserts.length, deleted };
        } catch (error) {
          await connection.query('ROLLBACK').catch(() => undefined);
          if (error instanceof ConnectorError || (typeof error === 'object' && error !== null && 'code' in error)) this.metas.delete(name);
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
