/**
 * Live export destination for PostgreSQL (see libs/connectors/core/src/live-export.ts). The location is the
 * connection's schema. Tables an export creates hold `lockstep_source_id text UNIQUE`, `lockstep_row_hash
 * text` and the mapped columns, typed like `createTable` types them (`nativeTypeFor`).
 *
 * A batch is one transaction: rows believed new are copied straight into the table (`COPY FROM STDIN`,
 * the connector's fastest write) behind a savepoint; if one of them exists after all (a unique violation),
 * the savepoint is rolled back and they go the upsert way with the others: `COPY` into a temporary table,
 * then `INSERT ... SELECT ... ON CONFLICT (lockstep_source_id) DO UPDATE`. Deletes name
 * `lockstep_source_id` values, so rows with a NULL id (someone else's) are never touched. An abort cancels the
 * running statement (`pg_cancel_backend`) and rolls the transaction back.
 *
 * As a source (`LiveExportSource`), a row's hash is computed by the server over the row's text output
 * `ROW(<fields>)::text` (unambiguous: NULL is an empty unquoted field, strings with delimiters are quoted; the
 * pool's sessions fix TimeZone=UTC, DateStyle, IntervalStyle and extra_float_digits, so the text of a value is
 * stable): `hashtextextended(text, seed)` (64 bits, seeded with the plan fingerprint) on PostgreSQL 11+, else
 * `md5(salt || text)`. Values and the hash of a row always come from the same statement.
 *
 * Its change capture (`LiveExportSourceCapture`) is the export's own statement-level triggers and log
 * (export-capture.ts), installed and removed here in a transaction under the setup advisory lock.
 */
import {
  ConnectorError,
  EXPORT_HASH_COLUMN,
  EXPORT_ID_COLUMN,
  ExportAbortedError,
  type ExportBatch,
  type ExportCaptureStart,
  type ExportChangePage,
  type ExportColumnInfo,
  type ExportHashPage,
  type ExportRow,
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
import type { CanonicalValue } from '@lockstep/domain';
import { escapeLiteral, type Pool } from 'pg';
import { loadTable, type Queryable, type TableMeta } from './catalog';
import { decodeCheckpoint, encodeCheckpoint, INFRASTRUCTURE_SQL, type Checkpoint } from './change-capture';
import { copyBuffer, copyOut, splitCopyLine, unescapeCopy } from '@lockstep/pg-copy';
import { copyField } from './copy';
import { withWriteTransaction } from './db';
import { ident, identifierTooLong, isUuid, qualified } from './sql';
import {
  CAPTURE_LOCK_TIMEOUT,
  CAPTURE_STATE_SQL,
  CAPTURE_TRIGGERS,
  captureKey,
  captureToken,
  distinctKeys,
  evaluateCapture,
  EXPORT_LOG,
  EXPORT_PURGE_BATCH,
  EXPORT_PURGE_EVERY_MS,
  EXPORT_RESETS,
  EXPORT_RETENTION_DAYS,
  INFRASTRUCTURE_STATE_SQL,
  infrastructureSql,
  LAST_RESET_SQL,
  PRESENT_TRIGGERS_SQL,
  PURGE_EXPORT_LOG_SQL,
  READ_EXPORT_CHANGES_SQL,
  repairTriggerSql,
  type CaptureStateDoc,
} from './export-capture';
import { decoderFor, encodeValue, nativeTypeFor, SERVICE_ID_COLUMN, type ColumnKind, type Decoder } from './types';

const TEXT_TYPES = new Set(['text', 'varchar', 'bpchar']);
const STAGE = 'lockstep_export_stage';
const MAX_SOURCE_PAGE = 100_000;
const MAX_CHANGE_PAGE = 100_000;
const INT_RANGES: Record<string, bigint> = { int2: 32767n, int4: 2147483647n, int8: 9223372036854775807n };

/** What a source-side read selects: the key, the mapped fields (decoded as `readPage` decodes them), the hash. */
interface SourceRead {
  target: string;
  key: string;
  keyCast: string;
  fields: string[];
  decoders: Decoder[];
  hash: string;
  validKey: (id: string) => boolean;
}

export interface PostgresExportContext {
  pool: Pool;
  schema: () => string;
  translate: (error: unknown, context?: string) => ConnectorError;
  /** Drops the connection's cached description of a table (its columns changed). */
  invalidate: (table: string) => void;
}

const UNIQUE_SQL = `
SELECT EXISTS (
  SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE i.indrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND i.indisunique AND i.indnkeyatts = 1
    AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = $3
) AS unique`;

function checkColumnName(name: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', 'A column name is empty');
  if (identifierTooLong(name)) throw new ConnectorError('invalid_data', `The column name "${name}" is longer than PostgreSQL's 63 bytes`);
  if (name === EXPORT_ID_COLUMN || name === EXPORT_HASH_COLUMN) {
    throw new ConnectorError('invalid_data', `"${name}" is a name Lockstep keeps for itself`);
  }
}

export class PostgresLiveExport implements LiveExportTarget, LiveExportSource, LiveExportSourceCapture {
  /** Descriptions of the tables this target writes, read at `inspectExportTable` (each run does it first). */
  private readonly metas = new Map<string, TableMeta>();
  /** Descriptions of the tables read as a source (a connection lives for one run). */
  private readonly sources = new Map<string, Promise<TableMeta>>();
  private version: Promise<number> | null = null;
  /** When this object last purged the export log (see purgeOccasionally). */
  private lastPurge = 0;

  constructor(private readonly context: PostgresExportContext) {}

  private get db(): Queryable {
    return this.context.pool as unknown as Queryable;
  }

  private async guard<T>(action: () => Promise<T>, message?: string): Promise<T> {
    try {
      return await action();
    } catch (error) {
      if (error instanceof ExportAbortedError) throw error;
      throw this.context.translate(error, message);
    }
  }

  async provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult> {
    if (spec.name.trim() === '') throw new ConnectorError('invalid_data', 'The table name is empty');
    if (identifierTooLong(spec.name)) throw new ConnectorError('invalid_data', `The table name "${spec.name}" is longer than PostgreSQL's 63 bytes`);
    const names = spec.columns.map((column) => column.name);
    if (new Set(names).size !== names.length) throw new ConnectorError('invalid_data', 'Two columns have the same name');
    const definitions = spec.columns.map((column) => {
      checkColumnName(column.name);
      return { name: column.name, sql: `${ident(column.name)} ${nativeTypeFor(column)}` };
    });
    return this.guard(async () => {
      const schema = this.context.schema();
      const target = qualified(schema, spec.name);
      const before = await loadTable(this.db, schema, spec.name);
      const added: string[] = [];
      const client = await this.context.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        // Serialises concurrent provisioning of the same table (two saves, or a save and a retry).
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`lockstep_export:${schema}.${spec.name}`]);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${target} (${ident(EXPORT_ID_COLUMN)} text UNIQUE, ${ident(EXPORT_HASH_COLUMN)} text${definitions
            .map((definition) => `, ${definition.sql}`)
            .join('')})`,
        );
        const existing = new Set(
          (
            await client.query<{ name: string }>(
              `SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
              [target],
            )
          ).rows.map((row) => row.name),
        );
        for (const definition of definitions) {
          if (existing.has(definition.name)) continue;
          await client.query(`ALTER TABLE ${target} ADD COLUMN ${definition.sql}`);
          added.push(definition.name);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        throw error;
      } finally {
        client.release(broken);
      }
      this.context.invalidate(spec.name);
      const table = await this.inspectExportTable(spec.name);
      if (!table) throw new ConnectorError('transient', `Table "${spec.name}" was created but cannot be found`);
      return { table, created: before === null, addedColumns: before === null ? [] : added };
    }, `Could not provision table "${spec.name}"`);
  }

  async inspectExportTable(name: string): Promise<ExportTableInfo | null> {
    return this.guard(async () => {
      const schema = this.context.schema();
      const meta = await loadTable(this.db, schema, name);
      if (!meta) {
        this.metas.delete(name);
        return null;
      }
      this.metas.set(name, meta);
      const unique = (await this.db.query(UNIQUE_SQL, [schema, name, EXPORT_ID_COLUMN])).rows[0]?.['unique'];
      const id = meta.columnByName.get(EXPORT_ID_COLUMN);
      const hash = meta.columnByName.get(EXPORT_HASH_COLUMN);
      const columns: ExportColumnInfo[] = meta.fields
        .filter((field) => field.remoteId !== EXPORT_ID_COLUMN && field.remoteId !== EXPORT_HASH_COLUMN)
        .map((field) => ({ name: field.remoteId, type: field.type, typeClass: field.typeClass, typeDetails: field.typeDetails }));
      return {
        name,
        columns,
        idColumn: !id ? 'missing' : !TEXT_TYPES.has(id.baseName) ? 'wrong_type' : unique === true || unique === 't' ? 'ok' : 'not_unique',
        hashColumn: !hash ? 'missing' : TEXT_TYPES.has(hash.baseName) ? 'ok' : 'wrong_type',
        writable: !meta.readOnly && (meta.relkind === 'r' || meta.relkind === 'p'),
      };
    }, `Could not inspect table "${name}"`);
  }

  async readExportHashes(name: string, options: { after?: string | null; limit: number }): Promise<ExportHashPage> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), 100_000);
    return this.guard(async () => {
      const target = qualified(this.context.schema(), name);
      const id = ident(EXPORT_ID_COLUMN);
      const params: unknown[] = [limit + 1];
      let where = `${id} IS NOT NULL`;
      if (options.after !== undefined && options.after !== null) {
        params.push(options.after);
        where += ` AND ${id} > $2`;
      }
      const { rows } = await this.context.pool.query<[string, string | null]>({
        text: `SELECT ${id}, ${ident(EXPORT_HASH_COLUMN)} FROM ${target} WHERE ${where} ORDER BY ${id} LIMIT $1`,
        values: params,
        rowMode: 'array',
      });
      const page = rows.slice(0, limit).map(([rowId, hash]) => ({ id: rowId, hash }));
      return { rows: page, next: rows.length > limit ? page[page.length - 1]!.id : null };
    }, `Could not read table "${name}"`);
  }

  private async meta(name: string): Promise<TableMeta> {
    const known = this.metas.get(name);
    if (known) return known;
    const meta = await loadTable(this.db, this.context.schema(), name);
    if (!meta) throw new ConnectorError('not_found', `Table "${name}" does not exist`, { appCode: '42P01' });
    this.metas.set(name, meta);
    return meta;
  }

  /** The rows as COPY text lines: `lockstep_source_id`, `lockstep_row_hash`, then `columns`. */
  private copyData(kinds: ColumnKind[], columns: string[], rows: ExportRow[]): Buffer {
    let data = '';
    for (const row of rows) {
      data += copyField(row.id);
      data += '\t';
      data += copyField(row.hash);
      for (let index = 0; index < columns.length; index += 1) {
        const column = columns[index]!;
        data += '\t';
        data += copyField(encodeValue(kinds[index]!, row.values[column] ?? null, column));
      }
      data += '\n';
    }
    return Buffer.from(data, 'utf8');
  }

  async writeExportBatch(name: string, batch: ExportBatch, options: ExportWriteOptions = {}): Promise<{ upserted: number; deleted: number }> {
    const { signal } = options;
    if (signal?.aborted) throw new ExportAbortedError();
    const inserts = batch.inserts ?? [];
    if (batch.upserts.length === 0 && batch.deletes.length === 0 && inserts.length === 0) return { upserted: 0, deleted: 0 };
    return this.guard(async () => {
      const meta = await this.meta(name);
      const kinds = batch.columns.map((column) => {
        const kind = meta.kinds.get(column);
        if (!kind) {
          this.metas.delete(name);
          throw new ConnectorError('not_found', `Column "${column}" does not exist in table "${name}"`, { appCode: '42703' });
        }
        return kind;
      });
      const target = qualified(meta.schema, meta.name);
      const names = [EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN, ...batch.columns].map(ident).join(', ');
      const client = await this.context.pool.connect();
      let broken: Error | undefined;
      let aborted = false;
      const onAbort = (): void => {
        aborted = true;
        // Cancels the statement running now (if any); the transaction is then rolled back below.
        this.context.pool.query('SELECT pg_cancel_backend($1)', [(client as unknown as { processID: number }).processID]).catch(() => undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const step = async (text: string, values?: unknown[]): Promise<void> => {
        if (aborted || signal?.aborted) throw new ExportAbortedError();
        await client.query(text, values);
      };
      const copy = async (text: string, data: Buffer): Promise<void> => {
        if (aborted || signal?.aborted) throw new ExportAbortedError();
        await copyBuffer(client, text, data);
      };
      try {
        await step('BEGIN');
        let upserts = batch.upserts;
        if (inserts.length > 0) {
          await step('SAVEPOINT lockstep_insert');
          try {
            await copy(`COPY ${target} (${names}) FROM STDIN`, this.copyData(kinds, batch.columns, inserts));
            await step('RELEASE SAVEPOINT lockstep_insert');
          } catch (error) {
            if ((error as { code?: string }).code !== '23505' || aborted) throw error;
            // A row believed new exists after all: write these the upsert way.
            await step('ROLLBACK TO SAVEPOINT lockstep_insert');
            upserts = [...inserts, ...upserts];
          }
        }
        if (upserts.length > 0) {
          await step(`CREATE TEMPORARY TABLE ${STAGE} ON COMMIT DROP AS SELECT ${names} FROM ${target} WITH NO DATA`);
          await copy(`COPY ${STAGE} (${names}) FROM STDIN`, this.copyData(kinds, batch.columns, upserts));
          const assignments = [EXPORT_HASH_COLUMN, ...batch.columns].map((column) => `${ident(column)} = EXCLUDED.${ident(column)}`).join(', ');
          await step(`INSERT INTO ${target} (${names}) SELECT ${names} FROM ${STAGE} ON CONFLICT (${ident(EXPORT_ID_COLUMN)}) DO UPDATE SET ${assignments}`);
        }
        let deleted = 0;
        if (batch.deletes.length > 0) {
          if (aborted || signal?.aborted) throw new ExportAbortedError();
          const result = await client.query(`DELETE FROM ${target} WHERE ${ident(EXPORT_ID_COLUMN)} = ANY ($1::text[])`, [batch.deletes]);
          deleted = result.rowCount ?? 0;
        }
        await step('COMMIT');
        return { upserted: batch.upserts.length + inserts.length, deleted };
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        if (aborted || signal?.aborted) throw new ExportAbortedError();
        // A column or type the cached description no longer matches: read it again next time.
        if (typeof (error as { code?: unknown }).code === 'string' && ['42P01', '42703', '42804', '42P10'].includes((error as { code: string }).code)) {
          this.metas.delete(name);
        }
        throw error;
      } finally {
        signal?.removeEventListener('abort', onAbort);
        client.release(broken);
      }
    }, `Could not write to table "${name}"`);
  }

  // ---------------------------------------------------------------------------------------------------
  // source side

  private serverVersion(): Promise<number> {
    this.version ??= this.db.query('SHOW server_version_num').then((result) => Number(result.rows[0]?.['server_version_num'] ?? 0));
    return this.version;
  }

  private sourceMeta(name: string): Promise<TableMeta> {
    let known = this.sources.get(name);
    if (!known) {
      known = loadTable(this.db, this.context.schema(), name).then((meta) => {
        if (!meta) throw new ConnectorError('not_found', `Table "${name}" does not exist in schema "${this.context.schema()}"`, { appCode: '42P01' });
        return meta;
      });
      known.catch(() => this.sources.delete(name));
      this.sources.set(name, known);
    }
    return known;
  }

  private async sourceRead(name: string, options: ExportSourceOptions): Promise<SourceRead> {
    const meta = await this.sourceMeta(name);
    const key = meta.keyColumn;
    if (key === null) {
      throw new ConnectorError('unsupported', `Table "${name}" has no single-column primary key; prepare it for sync first (it gets a ${SERVICE_ID_COLUMN} column)`);
    }
    if (!/^[0-9a-f]{16,}$/.test(options.salt)) throw new ConnectorError('invalid_data', 'The export salt must be hex text of at least 16 characters');
    const fields = [...new Set(options.fields)];
    const decoders = fields.map((field) => {
      if (meta.fieldById.get(field)?.read !== true) {
        throw new ConnectorError('not_found', `Field "${field}" does not exist or cannot be read in table "${name}"`, { appCode: '42703' });
      }
      return decoderFor(meta.kinds.get(field)!);
    });
    // ROW(...)::text of no fields is "()": every row then has the same hash (only ids matter).
    const text = `ROW(${fields.map(ident).join(', ')})::text`;
    const seed = BigInt(`0x${options.salt.slice(0, 15)}`).toString();
    const hash = (await this.serverVersion()) >= 110000 ? `hashtextextended(${text}, ${seed})::text` : `md5(${escapeLiteral(options.salt)} || ${text})`;
    const keyColumn = meta.columnByName.get(key)!;
    const limit = INT_RANGES[keyColumn.baseName];
    return {
      target: qualified(meta.schema, meta.name),
      key: ident(key),
      keyCast: keyColumn.castType,
      fields,
      decoders,
      hash,
      validKey: (id) => {
        if (limit !== undefined) return /^-?\d{1,20}$/.test(id) && BigInt(id) <= limit && BigInt(id) >= -limit - 1n;
        if (keyColumn.baseName === 'uuid') return isUuid(id);
        return true;
      },
    };
  }

  private sourceRow(read: SourceRead, cells: (string | null)[]): ExportSourceRow {
    const values: Record<string, CanonicalValue> = {};
    const { fields, decoders } = read;
    for (let index = 0; index < fields.length; index += 1) {
      const text = cells[index + 1];
      values[fields[index]!] = text === null || text === undefined ? null : decoders[index]!(text);
    }
    return { id: cells[0] ?? '', hash: cells[fields.length + 1] ?? '', values };
  }

  async readSourceHashes(name: string, options: ExportSourceOptions & { after?: string | null; limit: number }): Promise<ExportSourcePage<ExportSourceHash>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    return this.guard(async () => {
      const read = await this.sourceRead(name, options);
      const values: unknown[] = [limit + 1];
      let where = `${read.key} IS NOT NULL`;
      if (options.after !== undefined && options.after !== null) {
        values.push(options.after);
        where += ` AND ${read.key} > $2::${read.keyCast}`;
      }
      const { rows } = await this.context.pool.query<[string, string]>({
        text: `SELECT ${read.key}, ${read.hash} FROM ${read.target} WHERE ${where} ORDER BY ${read.key} LIMIT $1`,
        values,
        rowMode: 'array',
      });
      const count = Math.min(rows.length, limit);
      const page: ExportSourceHash[] = new Array(count);
      for (let index = 0; index < count; index += 1) page[index] = { id: rows[index]![0], hash: rows[index]![1] };
      return { rows: page, next: rows.length > limit ? page[count - 1]!.id : null };
    }, `Could not read table "${name}"`);
  }

  /**
   * `COPY (query) TO STDOUT` on a pooled client, line by line. An abort cancels the statement
   * (`pg_cancel_backend` from another pooled client, as a batch write's abort does) and rejects once the
   * canceled statement has ended.
   */
  private async copyOut(text: string, onLine: (line: string) => void, signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) throw new ExportAbortedError();
    let count = 0;
    let cancel: (() => void) | null = null;
    let aborted = false;
    const onAbort = (): void => {
      aborted = true;
      cancel?.();
    };
    try {
      await copyOut(
        this.context.pool,
        text,
        (line) => {
          count += 1;
          onLine(line);
        },
        (client) => {
          const processId = (client as unknown as { processID: number }).processID;
          cancel = () => void this.context.pool.query('SELECT pg_cancel_backend($1)', [processId]).catch(() => undefined);
          signal?.addEventListener('abort', onAbort, { once: true });
        },
      );
    } catch (error) {
      if (signal?.aborted) throw new ExportAbortedError();
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (aborted) throw new ExportAbortedError();
    return count;
  }

  /** Hands `onRow` the two fields of a COPY line `id<TAB>hash` (hash may be NULL). */
  private static pairLine(line: string, onRow: (id: string, hash: string | null) => void): void {
    const tab = line.indexOf('\t');
    let id = line.slice(0, tab);
    let hash: string | null = line.slice(tab + 1);
    if (line.indexOf('\\') !== -1) {
      if (id.indexOf('\\') !== -1) id = unescapeCopy(id);
      hash = hash === '\\N' ? null : hash.indexOf('\\') !== -1 ? unescapeCopy(hash) : hash;
    }
    onRow(id, hash);
  }

  async scanExportHashes(name: string, onRow: (id: string, hash: string | null) => void, options: ExportWriteOptions = {}): Promise<number> {
    return this.guard(async () => {
      const id = ident(EXPORT_ID_COLUMN);
      const target = qualified(this.context.schema(), name);
      return this.copyOut(`COPY (SELECT ${id}, ${ident(EXPORT_HASH_COLUMN)} FROM ${target} WHERE ${id} IS NOT NULL) TO STDOUT`, (line) => PostgresLiveExport.pairLine(line, onRow), options.signal);
    }, `Could not read table "${name}"`);
  }

  async scanSourceHashes(name: string, options: ExportSourceOptions & { signal?: AbortSignal }, onRow: (id: string, hash: string) => void): Promise<number> {
    return this.guard(async () => {
      const read = await this.sourceRead(name, options);
      return this.copyOut(
        `COPY (SELECT ${read.key}, ${read.hash} FROM ${read.target} WHERE ${read.key} IS NOT NULL) TO STDOUT`,
        (line) => PostgresLiveExport.pairLine(line, (id, hash) => onRow(id, hash ?? '')),
        options.signal,
      );
    }, `Could not read table "${name}"`);
  }

  async readSourceRows(name: string, options: ExportSourceOptions & { after?: string | null; limit: number }): Promise<ExportSourcePage<ExportSourceRow>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    return this.guard(async () => {
      const read = await this.sourceRead(name, options);
      let where = `${read.key} IS NOT NULL`;
      // COPY takes no parameters: the lower bound is a quoted literal, cast to the key's type.
      if (options.after !== undefined && options.after !== null) where += ` AND ${read.key} > ${escapeLiteral(options.after)}::${read.keyCast}`;
      const select = [read.key, ...read.fields.map(ident), read.hash].join(', ');
      const rows: ExportSourceRow[] = [];
      let more = false;
      const text = `COPY (SELECT ${select} FROM ${read.target} WHERE ${where} ORDER BY ${read.key} LIMIT ${limit + 1}) TO STDOUT`;
      await copyOut(this.context.pool, text, (line) => {
        if (rows.length >= limit) {
          more = true;
          return;
        }
        rows.push(this.sourceRow(read, splitCopyLine(line)));
      });
      return { rows, next: more ? rows[rows.length - 1]!.id : null };
    }, `Could not read table "${name}"`);
  }

  async readSourceRowsById(name: string, ids: string[], options: ExportSourceOptions): Promise<ExportSourceRow[]> {
    return this.guard(async () => {
      const read = await this.sourceRead(name, options);
      const wanted = [...new Set(ids.filter(read.validKey))];
      if (wanted.length === 0) return [];
      const select = [read.key, ...read.fields.map(ident), read.hash].join(', ');
      const { rows } = await this.context.pool.query<(string | null)[]>({
        text: `SELECT ${select} FROM ${read.target} WHERE ${read.key} = ANY ($1::${read.keyCast}[])`,
        values: [wanted],
        rowMode: 'array',
      });
      return rows.map((cells) => this.sourceRow(read, cells));
    }, `Could not read table "${name}"`);
  }

  // ---------------------------------------------------------------------------------------------------
  // source change capture (export-capture.ts)

  private async snapshot(): Promise<string> {
    const { rows } = await this.db.query('SELECT pg_current_snapshot()::text AS snapshot');
    return String(rows[0]!['snapshot']);
  }

  /** Runs `action` in a transaction holding the setup advisory lock, with a bounded wait for table locks. */
  private async setupTransaction<T>(action: (client: Queryable) => Promise<T>): Promise<T> {
    return withWriteTransaction(this.context.pool, async (client) => {
      await client.query(INFRASTRUCTURE_SQL[0]!); // serialises setups, the sync's included
      await client.query(`SET LOCAL lock_timeout = '${CAPTURE_LOCK_TIMEOUT}'`);
      return action(client as unknown as Queryable);
    });
  }

  /** The capture's state on the table (key column `key`), or null when the table is gone. */
  private static async captureState(db: Queryable, schema: string, table: string, key: string): Promise<CaptureStateDoc | null> {
    const { rows } = await db.query(CAPTURE_STATE_SQL, [schema, table, key]);
    if (rows.length === 0) return null;
    return JSON.parse(String(rows[0]!['doc'])) as CaptureStateDoc;
  }

  /** The token of the capture described by `doc`, or null when it is incomplete. */
  private static async tokenOf(db: Queryable, schema: string, table: string, doc: CaptureStateDoc): Promise<string | null> {
    if (!evaluateCapture(doc).complete) return null;
    const { rows } = await db.query(LAST_RESET_SQL, [schema, table]);
    return captureToken(doc, String(rows[0]?.['id'] ?? '0'));
  }

  async startSourceCapture(table: string): Promise<ExportCaptureStart | null> {
    return this.guard(async () => {
      const schema = this.context.schema();
      const token = await this.setupTransaction(async (db) => {
        const meta = await loadTable(db, schema, table);
        if (!meta) throw new ConnectorError('not_found', `Table "${table}" does not exist in schema "${schema}"`, { appCode: '42P01' });
        const key = captureKey(meta);
        if (key === null) return null;
        let doc = await PostgresLiveExport.captureState(db, schema, table, key);
        if (!doc || !evaluateCapture(doc).capturable) return null;
        const present = (await db.query(INFRASTRUCTURE_STATE_SQL)).rows[0]!;
        const infrastructure = infrastructureSql({
          schema: present['schema'] === 't',
          log: present['log'] === 't',
          resets: present['resets'] === 't',
          source: present['source'] === null || present['source'] === undefined ? null : String(present['source']),
        });
        for (const statement of infrastructure) await db.query(statement);
        doc = (await PostgresLiveExport.captureState(db, schema, table, key))!;
        // Triggers already installed as they should be are left alone, so the token stays the same.
        const repairs = repairTriggerSql(schema, table, evaluateCapture(doc), doc.keyAttnum!);
        for (const statement of repairs) await db.query(statement);
        if (repairs.length > 0) doc = (await PostgresLiveExport.captureState(db, schema, table, key))!;
        const installed = await PostgresLiveExport.tokenOf(db, schema, table, doc);
        if (installed === null) throw new ConnectorError('transient', `The change capture of table "${table}" was installed but is incomplete`);
        return installed;
      });
      if (token === null) return null;
      // Taken once the install committed: every transaction that can still write without the triggers has
      // ended (CREATE TRIGGER waited for them), so everything committed after this snapshot is logged.
      return { token, checkpoint: encodeCheckpoint({ v: 1, s: await this.snapshot() }) };
    }, `Could not start change capture on table "${table}"`);
  }

  async sourceCaptureToken(table: string): Promise<string | null> {
    return this.guard(async () => {
      const schema = this.context.schema();
      const meta = await loadTable(this.db, schema, table);
      const key = meta ? captureKey(meta) : null;
      if (key === null) return null;
      const doc = await PostgresLiveExport.captureState(this.db, schema, table, key);
      return doc ? PostgresLiveExport.tokenOf(this.db, schema, table, doc) : null;
    }, `Could not read the change capture of table "${table}"`);
  }

  async readSourceChanges(table: string, since: string, options: { limit: number }): Promise<ExportChangePage> {
    const checkpoint = decodeCheckpoint(since);
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_CHANGE_PAGE);
    return this.guard(async () => {
      const current = checkpoint.c ?? (await this.snapshot());
      const { rows: logRows } = await this.db.query(`SELECT to_regclass('${EXPORT_LOG}') IS NOT NULL AS present`);
      // No log, no capture: its token is null, which tells the reader to compare everything.
      if (logRows[0]?.['present'] !== 't') return { ids: [], checkpoint: encodeCheckpoint({ v: 1, s: current }), hasMore: false };
      await this.purgeOccasionally();
      const { rows } = await this.db.query(READ_EXPORT_CHANGES_SQL, [
        this.context.schema(),
        table,
        checkpoint.s,
        current,
        checkpoint.a?.[0] ?? null,
        checkpoint.a?.[1] ?? null,
        limit + 1,
      ]);
      const entries = rows.slice(0, limit);
      const hasMore = rows.length > limit;
      const last = entries[entries.length - 1];
      const next: Checkpoint = hasMore && last ? { v: 1, s: checkpoint.s, c: current, a: [String(last['xid']), String(last['id'])] } : { v: 1, s: current };
      return { ids: distinctKeys(entries as { pk: unknown }[]), checkpoint: encodeCheckpoint(next), hasMore };
    }, `Could not read the changes of table "${table}"`);
  }

  /**
   * Retention: every EXPORT_PURGE_EVERY_MS a reader deletes up to EXPORT_PURGE_BATCH export-log entries older
   * than the retention (all tables). Housekeeping only: a failure here does not fail the read.
   */
  private async purgeOccasionally(): Promise<void> {
    if (Date.now() - this.lastPurge < EXPORT_PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    await this.purgeExportLog().catch(() => undefined);
  }

  /** Deletes up to `batch` export-log entries older than the retention; returns how many. */
  async purgeExportLog(batch = EXPORT_PURGE_BATCH): Promise<number> {
    const result = await this.context.pool.query(PURGE_EXPORT_LOG_SQL, [EXPORT_RETENTION_DAYS, batch]);
    return result.rowCount ?? 0;
  }

  async stopSourceCapture(table: string): Promise<void> {
    await this.guard(async () => {
      const schema = this.context.schema();
      await this.setupTransaction(async (db) => {
        const names = CAPTURE_TRIGGERS.map((trigger) => trigger.name);
        const { rows } = await db.query(PRESENT_TRIGGERS_SQL, [schema, table, names]);
        for (const row of rows) await db.query(`DROP TRIGGER IF EXISTS ${ident(String(row['name']))} ON ${qualified(schema, table)}`);
        const present = (await db.query(INFRASTRUCTURE_STATE_SQL)).rows[0]!;
        if (present['log'] === 't') await db.query(`DELETE FROM ${EXPORT_LOG} WHERE table_schema = $1 AND table_name = $2`, [schema, table]);
        if (present['resets'] === 't') await db.query(`DELETE FROM ${EXPORT_RESETS} WHERE table_schema = $1 AND table_name = $2`, [schema, table]);
      });
    }, `Could not stop change capture on table "${table}"`);
  }
}
