/**
 * Live export destination for MySQL / MariaDB (see libs/connectors/core/src/live-export.ts). The location is
 * the connection's database. Tables an export creates hold `lockstep_source_id` (VARCHAR(255), a binary
 * no-pad collation so ids compare byte for byte, UNIQUE), `lockstep_row_hash` and the mapped columns, typed
 * like `createTable` types them (`nativeColumnType`).
 *
 * A batch is one transaction: multi-row `INSERT ... ON DUPLICATE KEY UPDATE` (1,000 rows a statement) for
 * new and changed rows, then `DELETE ... WHERE lockstep_source_id IN (...)`, so rows with a NULL id (someone
 * else's) are never touched. An abort kills the running statement (`KILL QUERY`) and rolls back.
 *
 * As a source (`LiveExportSource`), a row's hash is computed by the server over
 * `CONCAT_WS(',', salt, QUOTE(CAST(field AS BINARY)), ...)`: QUOTE makes the text unambiguous (NULL is the bare
 * word NULL, every value a quoted, escaped string), BINARY avoids collation clashes, and the session's fixed
 * `time_zone = '+00:00'` makes TIMESTAMP text stable. The hash is CRC32 and CRC32C of that text together
 * (64 bits, MariaDB 10.8+, far cheaper than MD5 there) or MD5 elsewhere. Values and the hash of a row always
 * come from the same statement.
 *
 * As a source it also offers change capture (`LiveExportSourceCapture`, export-capture.ts): its own triggers
 * log changed keys into `lockstep_export_log`, so a run reads the ids changed since its checkpoint instead of
 * hashing the whole table.
 */
import {
  ConnectorError,
  EXPORT_HASH_COLUMN,
  EXPORT_ID_COLUMN,
  ExportAbortedError,
  type ExportBatch,
  type ExportCaptureStart,
  type ExportChangePage,
  type ExportHashPage,
  type ExportTableInfo,
  type ExportSourceHash,
  type ExportSourceOptions,
  type ExportSourcePage,
  type ExportSourceRow,
  type ExportTableSpec,
  type ExportWriteOptions,
  type LiveExportSource,
  type LiveExportSourceCapture,
  type LiveExportTarget,
  type ProvisionResult,
} from '@lockstep/connectors-core';
import type { PoolConnection } from 'mysql2/promise';
import { logExists } from './change-capture';
import { exec, rows, type Db, type Row } from './db';
import {
  capturableKey,
  EXPORT_LOG_TABLE,
  exportCaptureToken,
  exportCheckpoint,
  installExportCapture,
  purgeExportLog,
  readExportChanges,
  removeExportCapture,
} from './export-capture';
import { keyParam, LOOKUP_CHUNK, planRecord, readColumns, readPlan, type ReadPlan } from './records';
import { loadTableMeta, type TableKey, type TableMeta } from './catalog';
import { requireKey } from './schema';
import { chunk, derivedName, placeholders, quoteIdent, quoteString } from './sql';
import { keyText } from './decode';
import { encodeValue, ValueError } from './encode';
import { atLeast, nativeColumnType, type ServerInfo } from './native-types';
import type { ClassifiedColumn } from './types';

/** Rows per INSERT statement. */
const ROWS_PER_STATEMENT = 1000;
const MAX_SOURCE_PAGE = 100_000;
/** The select alias of a row's hash in source reads. */
const HASH_ALIAS = 'lockstep_export_row_hash';
/** The export log is purged at most this often per connection (as the sync's change log is). */
const PURGE_EVERY_MS = 10 * 60_000;

/** What a source-side read selects: the key, the mapped fields (decoded as `readPage` decodes them), the hash. */
interface SourceRead {
  table: string;
  key: TableKey;
  plan: ReadPlan;
  fields: string[];
  hash: string;
}

function idCollation(server: ServerInfo): string {
  return server.flavor === 'mariadb' ? 'utf8mb4_nopad_bin' : 'utf8mb4_0900_bin';
}

function checkName(name: string, what: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
  if (name !== name.trimEnd()) throw new ConnectorError('invalid_data', `The ${what} name "${name}" ends with a space, which MySQL does not allow`);
  if ([...name].length > 64) throw new ConnectorError('invalid_data', `The ${what} name "${name}" is longer than MySQL's 64 characters`);
}

/** The keyset condition of a source page after `after` (in key order), with its parameters ending in `limit + 1`. */
function keysetPage(key: TableKey, after: string | null | undefined, limit: number): { k: string; where: string; params: unknown[] } {
  const k = quoteIdent(key.column);
  const params: unknown[] = [];
  let where = `${k} IS NOT NULL`;
  if (after !== undefined && after !== null) {
    const value = keyParam(key, after);
    if (value === undefined) throw new ConnectorError('invalid_data', 'The page checkpoint is not one this connector issued');
    where += ` AND ${k} > ?`;
    params.push(value);
  }
  params.push(limit + 1);
  return { k, where, params };
}

export class MysqlLiveExport implements LiveExportTarget, LiveExportSource, LiveExportSourceCapture {
  /** Descriptions of the tables this target writes, read at `inspectExportTable` (each run does it first). */
  private readonly metas = new Map<string, TableMeta>();
  /** Descriptions of the tables read as a source (a connection lives for one run). */
  private readonly sources = new Map<string, Promise<TableMeta>>();
  private lastCapturePurge = 0;

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

  // ---------------------------------------------------------------------------------------------------
  // source side

  private sourceMeta(name: string): Promise<TableMeta> {
    let known = this.sources.get(name);
    if (!known) {
      known = this.db.server().then((server) =>
        this.db.withConnection((connection) => loadTableMeta(connection, this.database(), name, server), `Could not read table "${name}"`),
      );
      known.catch(() => this.sources.delete(name));
      this.sources.set(name, known);
    }
    return known;
  }

  private async sourceRead(name: string, options: ExportSourceOptions): Promise<SourceRead> {
    const meta = await this.sourceMeta(name);
    const key = requireKey(meta);
    if (!/^[0-9a-f]{16,}$/.test(options.salt)) throw new ConnectorError('invalid_data', 'The export salt must be hex text of at least 16 characters');
    const wanted = [...new Set(options.fields)];
    for (const field of wanted) {
      if (meta.byName.get(field)?.read !== true) throw new ConnectorError('not_found', `Field "${field}" does not exist or cannot be read in table "${name}"`);
    }
    const columns = readColumns(meta, wanted);
    const fields = columns.map((column) => column.name);
    // Values are taken from the driver row into a fresh object (never in place: the row also holds the hash).
    const plan: ReadPlan = { ...readPlan(meta, fields), inPlace: false };
    const text = `CONCAT_WS(',', ${[quoteString(options.salt), ...fields.map((field) => `QUOTE(CAST(${quoteIdent(field)} AS BINARY))`)].join(', ')})`;
    const server = await this.db.server();
    const hash = server.flavor === 'mariadb' && atLeast(server, 10, 8) ? `CONCAT(HEX(CRC32(${text})), '.', HEX(CRC32C(${text})))` : `MD5(${text})`;
    return { table: quoteIdent(meta.name), key, plan, fields, hash };
  }

  private sourceRow(read: SourceRead, row: Row): ExportSourceRow {
    const hash = String(row[HASH_ALIAS]);
    const record = planRecord(read.plan, row);
    return { id: record.remoteId, hash, values: record.values };
  }

  async readSourceHashes(name: string, options: ExportSourceOptions & { after?: string | null; limit: number }): Promise<ExportSourcePage<ExportSourceHash>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    const read = await this.sourceRead(name, options);
    const { k, where, params } = keysetPage(read.key, options.after, limit);
    const found = await this.db.withConnection(async (connection) => {
      const [result] = await connection.query({ sql: `SELECT ${k}, ${read.hash} FROM ${read.table} WHERE ${where} ORDER BY ${k} LIMIT ?`, values: params, rowsAsArray: true });
      return result as unknown as [unknown, unknown][];
    }, `Could not read table "${name}"`);
    const count = Math.min(found.length, limit);
    const page: ExportSourceHash[] = new Array(count);
    for (let index = 0; index < count; index += 1) page[index] = { id: keyText(found[index]![0]), hash: String(found[index]![1]) };
    return { rows: page, next: found.length > limit ? page[count - 1]!.id : null };
  }

  /**
   * Streams one statement's rows (as arrays) to `onRow` on a pooled connection. An abort kills the statement
   * (`KILL QUERY` from another pooled connection, as a batch write's abort does).
   */
  private async stream(sql: string, onRow: (row: unknown[]) => void, signal: AbortSignal | undefined, context: string): Promise<number> {
    if (signal?.aborted) throw new ExportAbortedError();
    try {
      return await this.db.withConnection(async (connection) => {
        const onAbort = (): void => {
          this.db.rows(`KILL QUERY ${Number(connection.threadId)}`).catch(() => undefined);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const core = connection.connection as unknown as { query(options: { sql: string; rowsAsArray: boolean }): NodeJS.EventEmitter };
        try {
          return await new Promise<number>((resolve, reject) => {
            let count = 0;
            let failure: unknown = null;
            core
              .query({ sql, rowsAsArray: true })
              .on('result', (row: unknown[]) => {
                if (failure !== null) return;
                count += 1;
                try {
                  onRow(row);
                } catch (error) {
                  failure = error;
                }
              })
              .on('error', reject)
              .on('end', () => (failure === null ? resolve(count) : reject(failure)));
          });
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      }, context);
    } catch (error) {
      if (signal?.aborted) throw new ExportAbortedError();
      throw error;
    }
  }

  async scanExportHashes(name: string, onRow: (id: string, hash: string | null) => void, options: ExportWriteOptions = {}): Promise<number> {
    const id = quoteIdent(EXPORT_ID_COLUMN);
    return this.stream(
      `SELECT ${id}, ${quoteIdent(EXPORT_HASH_COLUMN)} FROM ${quoteIdent(name)} WHERE ${id} IS NOT NULL`,
      (row) => onRow(String(row[0]), row[1] === null ? null : String(row[1])),
      options.signal,
      `Could not read table "${name}"`,
    );
  }

  async scanSourceHashes(name: string, options: ExportSourceOptions & { signal?: AbortSignal }, onRow: (id: string, hash: string) => void): Promise<number> {
    const read = await this.sourceRead(name, options);
    const k = quoteIdent(read.key.column);
    return this.stream(
      `SELECT ${k}, ${read.hash} FROM ${read.table} WHERE ${k} IS NOT NULL`,
      (row) => onRow(keyText(row[0]), String(row[1])),
      options.signal,
      `Could not read table "${name}"`,
    );
  }

  async readSourceRows(name: string, options: ExportSourceOptions & { after?: string | null; limit: number }): Promise<ExportSourcePage<ExportSourceRow>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    const read = await this.sourceRead(name, options);
    const { k, where, params } = keysetPage(read.key, options.after, limit);
    const found = await this.db.rows(
      `SELECT ${read.plan.selectList}, ${read.hash} AS ${quoteIdent(HASH_ALIAS)} FROM ${read.table} WHERE ${where} ORDER BY ${k} LIMIT ?`,
      params,
      `Could not read table "${name}"`,
    );
    const count = Math.min(found.length, limit);
    const page: ExportSourceRow[] = new Array(count);
    for (let index = 0; index < count; index += 1) page[index] = this.sourceRow(read, found[index]!);
    return { rows: page, next: found.length > limit ? page[count - 1]!.id : null };
  }

  async readSourceRowsById(name: string, ids: string[], options: ExportSourceOptions): Promise<ExportSourceRow[]> {
    const read = await this.sourceRead(name, options);
    const params = [...new Set(ids)].map((id) => keyParam(read.key, id)).filter((param) => param !== undefined);
    const result: ExportSourceRow[] = [];
    for (const part of chunk(params, LOOKUP_CHUNK)) {
      const found = await this.db.rows(
        `SELECT ${read.plan.selectList}, ${read.hash} AS ${quoteIdent(HASH_ALIAS)} FROM ${read.table} WHERE ${quoteIdent(read.key.column)} IN (${placeholders(part.length)})`,
        part,
        `Could not read table "${name}"`,
      );
      for (const row of found) result.push(this.sourceRow(read, row));
    }
    return result;
  }

  // ---------------------------------------------------------------------------------------------------
  // source change capture (export-capture.ts)

  async startSourceCapture(name: string): Promise<ExportCaptureStart | null> {
    const database = this.database();
    const server = await this.db.server();
    return this.db.withConnection(async (connection) => {
      const meta = await loadTableMeta(connection, database, name, server);
      const key = await capturableKey(connection, database, meta);
      if (!key) return null;
      await installExportCapture(connection, database, name, key);
      const token = await exportCaptureToken(connection, database, name, key);
      if (!token) throw new ConnectorError('transient', `The change capture of "${name}" was removed while it was being installed; try again`);
      // Taken after the install: every change committed after it is logged.
      return { token, checkpoint: await exportCheckpoint(connection, database) };
    }, `Could not install change capture on "${name}"`);
  }

  async sourceCaptureToken(name: string): Promise<string | null> {
    const database = this.database();
    const server = await this.db.server();
    return this.db.withConnection(async (connection) => {
      let meta: TableMeta;
      try {
        meta = await loadTableMeta(connection, database, name, server);
      } catch (error) {
        if (error instanceof ConnectorError && error.kind === 'not_found') return null;
        throw error;
      }
      const key = await capturableKey(connection, database, meta);
      return key ? exportCaptureToken(connection, database, name, key) : null;
    }, `Could not read the change capture of "${name}"`);
  }

  async readSourceChanges(name: string, since: string, options: { limit: number }): Promise<ExportChangePage> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    const database = this.database();
    await this.purgeCaptureLog();
    return this.db.withConnection((connection) => readExportChanges(connection, { database, table: name, since, limit }), `Could not read the changes of "${name}"`);
  }

  async stopSourceCapture(name: string): Promise<void> {
    const database = this.database();
    await this.db.withConnection((connection) => removeExportCapture(connection, database, name), `Could not remove the change capture of "${name}"`);
  }

  /** Deletes log entries past the retention now and then (a bounded batch); a failure never fails the read. */
  private async purgeCaptureLog(): Promise<void> {
    if (Date.now() - this.lastCapturePurge < PURGE_EVERY_MS) return;
    this.lastCapturePurge = Date.now();
    const database = this.database();
    await this.db
      .withConnection(async (connection) => {
        if (await logExists(connection, database, EXPORT_LOG_TABLE)) await purgeExportLog(connection);
      })
      .catch(() => undefined);
  }
}
