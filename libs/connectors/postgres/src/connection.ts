/**
 * A PostgreSQL connection: one pool per (credentials, base). The base is a schema; table and field remote
 * ids are the table and column names inside it. Rows are addressed by their key column (the single-column
 * primary key, else the `lockstep_id` service id column that `prepareTable` adds); the remote id is the key's
 * text form. Table descriptions are cached per connection (metadata-cache.ts, README "Metadata cache").
 */
import {
  changedError,
  changedField,
  ConnectorError,
  type BaseInfo,
  type Change,
  type ChangeBatch,
  type Connection,
  type FieldInfo,
  type FieldSpec,
  type PreparedTable,
  type PrepareOptions,
  type ReadChangesOptions,
  type ReadPageOptions,
  type RecordCreate,
  type RecordPage,
  type RecordUpdate,
  type SourceRecord,
  type TableInfo,
  type WriteResult,
} from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import { Client, escapeLiteral, Pool, type ClientConfig, type PoolClient, type QueryArrayConfig, type QueryArrayResult } from 'pg';
import { listTables, loadTable, schemaExists, type Queryable, type TableMeta } from './catalog';
import {
  addServiceIdSql,
  CAPTURE_TARGET_SQL,
  captureLevel,
  CHANGE_LOG,
  COLUMN_COMMENT_SQL,
  decodeCheckpoint,
  DEFAULT_RETENTION_DAYS,
  DROP_UNUSED_CAPTURE_SQL,
  dropTriggerSql,
  encodeCheckpoint,
  INFRASTRUCTURE_SQL,
  CAPTURE_READERS,
  FORGET_TABLE_READERS_SQL,
  REGISTER_READER_SQL,
  UNREGISTER_READER_SQL,
  installTriggerSql,
  NOTIFY_CHANNEL,
  ORIGIN_SETTING,
  PURGE_SQL,
  READ_CHANGES_SQL,
  SERVICE_ID_COMMENT,
  type Checkpoint,
} from './change-capture';
import { SESSION_SQL } from './config';
import { copyBuffer, copyOut, isCopyNull, unescapeCopy } from '@lockstep/pg-copy';
import { copyField, type TextRow } from './copy';
import { translatePgError } from './errors';
import { PostgresLiveExport } from './live-export';
import { MetadataCache, type CacheHit, writeOriginTag } from '@lockstep/connectors-core';
import { ident, identifierTooLong, isUuid, qualified } from './sql';
import {
  arrayLiteral,
  decoderFor,
  elementLiteral,
  encodeValue,
  nativeTypeFor,
  SERVICE_ID_COLUMN,
  timestamptzToCanonical,
  type ColumnKind,
  type Decoder,
  type PgParam,
} from './types';

/** Parameters per statement stay well under PostgreSQL's limit of 65,535 (multi-row UPDATEs). */
const MAX_PARAMS = 30_000;
/** Rows per INSERT; each column of the rows travels as one array parameter. */
const INSERT_CHUNK = 5_000;
const MAX_PAGE = 10_000;
/** How often a reader purges old change-log entries. */
const PURGE_EVERY_MS = 10 * 60_000;
const EXCLUDED_SCHEMAS = ['information_schema', 'lockstep'];
/** How long a cached table description is used before it is read again (a change made elsewhere shows up). */
export const DEFAULT_METADATA_TTL_MS = 60_000;

/**
 * SQLSTATEs that suggest the table changed under a cached description (undefined table, column or type,
 * datatype mismatch, ON CONFLICT without the unique index): the call is retried once with a fresh one.
 */
const SCHEMA_CHANGE_CODES = new Set(['42P01', '42703', '42704', '42804', '42P10']);

type Row = Record<string, string | null>;

/** The pool, or one of its clients inside a transaction. */
interface ArrayQueryable {
  query<R extends unknown[]>(config: QueryArrayConfig): Promise<QueryArrayResult<R>>;
}

async function textRows(db: ArrayQueryable, text: string, values: unknown[] = []): Promise<TextRow[]> {
  return (await db.query<TextRow>({ text, values, rowMode: 'array' })).rows;
}

interface PreparedRow {
  index: number;
  values: Map<string, PgParam>;
  serviceId: string | null;
  remoteId?: string;
}

/** A row to insert: its encoded values in the order of its group's columns. */
interface InsertRow {
  index: number;
  cells: PgParam[];
  serviceId: string | null;
}

/** Rows of a create that name the same fields in the same order: they share an INSERT. */
interface InsertGroup {
  columns: string[];
  kinds: ColumnKind[];
  rows: InsertRow[];
}

const CANONICAL_INTEGER = /^(0|-?[1-9]\d*)$/;

/**
 * The text PostgreSQL prints for a key written as `value`, when that is exactly the written value (an integer
 * in canonical form, a uuid, text), so the row's remote id is known without reading it back; otherwise null.
 */
function printedKey(baseName: string, value: PgParam): string | null {
  switch (baseName) {
    case 'int2':
    case 'int4':
    case 'int8':
      if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : null;
      return typeof value === 'string' && CANONICAL_INTEGER.test(value) ? value : null;
    case 'uuid':
      return typeof value === 'string' && isUuid(value) ? value.toLowerCase() : null;
    case 'text':
      return typeof value === 'string' ? value : null;
    default:
      return null;
  }
}

/**
 * The integer written in `line[start, end)` (PostgreSQL's output: optional minus, digits), read without making
 * a string of it; undefined when it is longer than `MAX_SCANNED_DIGITS` digits or not plain digits.
 */
function scanInteger(line: string, start: number, end: number): number | undefined {
  const negative = line.charCodeAt(start) === 0x2d; // -
  let index = negative ? start + 1 : start;
  if (index === end || end - index > MAX_SCANNED_DIGITS) return undefined;
  let value = 0;
  for (; index < end; index += 1) {
    const digit = line.charCodeAt(index) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return negative ? -value : value;
}

/** Whether `values` has exactly the keys `columns`, in that order (without building a list of them). */
function hasKeys(values: Record<string, unknown>, columns: string[]): boolean {
  let position = 0;
  for (const key in values) {
    if (key !== columns[position]) return false;
    position += 1;
  }
  return position === columns.length;
}

/** How `lineRecord` takes a column's value out of a COPY line. */
const enum Scan {
  /** The field's text (unescaped), then its decoder. */
  Text,
  /** An integer's digits, read in place (no string for it). */
  Integer,
  /** `t` or `f`. */
  Boolean,
}

/** Up to 15 digits an integer is read digit by digit, exactly (10^15 < 2^53); longer ones go through Number. */
const MAX_SCANNED_DIGITS = 15;

/**
 * What a read selects and how it turns a row into a record: `columns` are the key, the service id (when the
 * table has one) and the fields, each once; `fieldIds[i]` is read from `columns[fieldIndexes[i]]`, and
 * `columnFields[c]` is the field read from column `c` (or -1).
 */
interface ReadPlan {
  columns: string[];
  selectList: string;
  fieldIds: string[];
  fieldIndexes: number[];
  decoders: Decoder[];
  columnFields: number[];
  scans: Scan[];
  /** Index of the service id column in `columns`, or -1. */
  serviceIndex: number;
  /** `values` with every field set to null: records copy it, so they all share one object shape. */
  emptyValues: Record<string, CanonicalValue>;
}

const INT_RANGES: Record<string, bigint> = { int2: 32767n, int4: 2147483647n, int8: 9223372036854775807n };

function failure(error: ConnectorError): WriteResult {
  return { ok: false, error: error.toInfo() };
}

/**
 * Records are made by copying this (object spread), not with an object literal: V8 tracks where literals
 * allocate and, seeing most of a page of records outlive a young-generation collection, may allocate them
 * straight in the old generation from then on ("pretenuring"). A page of short-lived records then costs a
 * major collection every few pages: full reads ran about 1.6x slower in roughly half of the processes.
 */
const RECORD_TEMPLATE: SourceRecord = { remoteId: '', values: {} };

/** Errors raised by this connection's own checks against a table description (which may be stale). */
const metadataErrors = new WeakSet<object>();

function metadataError(kind: ConnectorError['kind'], message: string, appCode?: string): ConnectorError {
  const error = new ConnectorError(kind, message, { appCode });
  metadataErrors.add(error);
  return error;
}

/** Whether `error` (raw or translated) suggests the table is not what its description says. */
function suggestsSchemaChange(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (metadataErrors.has(error)) return true;
  const { code, appCode } = error as { code?: unknown; appCode?: unknown };
  const sqlState = typeof appCode === 'string' ? appCode : code;
  return typeof sqlState === 'string' && SCHEMA_CHANGE_CODES.has(sqlState);
}

export class PostgresConnection implements Connection {
  readonly type = 'postgres';
  private readonly pool: Pool;
  private readonly watchers = new Set<Client>();
  /** The `lockstep.origin` value of this connection's sessions, which its writes carry (see change-capture.ts). */
  private readonly origin: string;
  /** Table descriptions by table remote id (this connection's base is fixed). */
  private readonly tables: MetadataCache<TableMeta>;
  /** Change-log entries older than this many days are purged (see purgeOccasionally). */
  private readonly retentionDays: number;
  private lastPurge = 0;
  /** Read plans of every readable field, per description. */
  private readonly defaultPlans = new WeakMap<TableMeta, ReadPlan>();

  constructor(
    private readonly clientConfig: ClientConfig,
    private readonly base: string | null,
    private readonly secrets: string[],
    options: { poolSize?: number; writeOrigin?: string; metadataTtlMs?: number; changeLogRetentionDays?: number } = {},
  ) {
    this.retentionDays = options.changeLogRetentionDays ?? DEFAULT_RETENTION_DAYS;
    this.origin = writeOriginTag(options.writeOrigin);
    this.tables = new MetadataCache<TableMeta>(options.metadataTtlMs ?? DEFAULT_METADATA_TTL_MS);
    this.pool = new Pool({
      ...clientConfig,
      max: options.poolSize ?? 5,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
      onConnect: async (client) => {
        await client.query(SESSION_SQL);
        // Every statement of this pool is Lockstep's own (this connection's), so the origin the capture
        // trigger records is set once per session rather than in each write transaction: a single-statement
        // write then needs no transaction of its own.
        await client.query('SELECT set_config($1, $2, false)', [ORIGIN_SETTING, this.origin]);
      },
    });
    // An idle client losing its server must not crash the process; the next query reports it.
    this.pool.on('error', () => undefined);
  }

  // ---------------------------------------------------------------------------------------------------
  // helpers

  private translate(error: unknown, context?: string): ConnectorError {
    return translatePgError(error, { secrets: this.secrets, context });
  }

  private async guard<T>(action: () => Promise<T>, context?: string): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw this.translate(error, context);
    }
  }

  private get db(): Queryable {
    return this.pool as unknown as Queryable;
  }

  private schema(): string {
    if (!this.base) throw new ConnectorError('invalid_data', 'No base (schema) was chosen for this PostgreSQL connection');
    return this.base;
  }

  // ---------------------------------------------------------------------------------------------------
  // table descriptions (cached)

  private async loadMeta(remoteId: string): Promise<TableMeta> {
    const meta = await loadTable(this.db, this.schema(), remoteId);
    if (!meta) throw new ConnectorError('not_found', `Table "${remoteId}" does not exist in schema "${this.schema()}"`, { appCode: '42P01' });
    return meta;
  }

  /** The table's description, from the cache when it holds one. */
  private table(remoteId: string): Promise<CacheHit<TableMeta>> {
    return this.tables.get(remoteId, () => this.loadMeta(remoteId));
  }

  /** The table's description read now from the catalog (and cached). */
  private freshTable(remoteId: string): Promise<TableMeta> {
    return this.tables.refresh(remoteId, () => this.loadMeta(remoteId));
  }

  /**
   * Runs `action` with the table's description. With a cached description, `action` runs again once with a
   * fresh one when it failed in a way that suggests the table changed since (`suggestsSchemaChange`: a
   * column or table the database does not know, or a field, key or service id the description lacks).
   * `action` gets `cached` to stop at the first such failure rather than report it per row.
   */
  private async withTable<T>(remoteId: string, action: (meta: TableMeta, cached: boolean) => Promise<T>): Promise<T> {
    const hit = await this.table(remoteId);
    if (!hit.cached) return action(hit.value, false);
    try {
      return await action(hit.value, true);
    } catch (error) {
      if (!suggestsSchemaChange(error)) throw error;
      return action(await this.freshTable(remoteId), false);
    }
  }

  private requireKey(meta: TableMeta): string {
    if (meta.keyColumn === null) {
      throw metadataError(
        'unsupported',
        `Table "${meta.name}" has no single-column primary key; prepare it for sync first (it gets a ${SERVICE_ID_COLUMN} column)`,
      );
    }
    return meta.keyColumn;
  }

  private castOf(meta: TableMeta, column: string): string {
    const found = meta.columnByName.get(column);
    if (!found) throw metadataError('not_found', `Field "${column}" does not exist in table "${meta.name}"`, '42703');
    return found.castType;
  }

  private target(meta: TableMeta): string {
    return qualified(meta.schema, meta.name);
  }

  /** What a read selects (the key, the service id and the requested readable fields) and how it decodes. */
  private readPlan(meta: TableMeta, requested?: string[]): ReadPlan {
    if (!requested) {
      const known = this.defaultPlans.get(meta);
      if (known) return known;
    }
    let fields = meta.fields.filter((field) => field.read);
    if (requested) {
      for (const id of requested) {
        if (meta.fieldById.get(id)?.read !== true) {
          throw metadataError('not_found', `Field "${id}" does not exist or cannot be read in table "${meta.name}"`, '42703');
        }
      }
      const wanted = new Set(requested);
      fields = fields.filter((field) => wanted.has(field.remoteId));
    }
    const columns = [...new Set([this.requireKey(meta), ...(meta.serviceIdColumn ? [meta.serviceIdColumn] : []), ...fields.map((field) => field.remoteId)])];
    const fieldIds = fields.map((field) => field.remoteId);
    const columnFields = columns.map((column) => fieldIds.indexOf(column));
    const plan: ReadPlan = {
      columns,
      selectList: this.selectList(columns),
      fieldIds,
      fieldIndexes: fieldIds.map((id) => columns.indexOf(id)),
      decoders: fieldIds.map((id) => decoderFor(meta.kinds.get(id)!)),
      columnFields,
      scans: columns.map((column, index) => {
        const kind = meta.kinds.get(column)!;
        if (columnFields[index]! < 0 || kind.isArray) return Scan.Text;
        if (kind.typeClass === 'integer') return Scan.Integer;
        return kind.typeClass === 'boolean' ? Scan.Boolean : Scan.Text;
      }),
      serviceIndex: meta.serviceIdColumn ? columns.indexOf(meta.serviceIdColumn) : -1,
      emptyValues: Object.fromEntries(fieldIds.map((id) => [id, null])),
    };
    if (!requested) this.defaultPlans.set(meta, plan);
    return plan;
  }

  private selectList(columns: string[], alias?: string): string {
    return columns.map((column) => (alias ? `${alias}.${ident(column)}` : ident(column))).join(', ');
  }

  /** A record from a row selected with `plan.columns`, starting at `offset` in the row. */
  private toRecord(plan: ReadPlan, row: TextRow, offset = 0): SourceRecord {
    const values = { ...plan.emptyValues };
    const { fieldIds, fieldIndexes, decoders } = plan;
    for (let i = 0; i < fieldIds.length; i += 1) {
      const text = row[offset + fieldIndexes[i]!];
      if (text !== null && text !== undefined) values[fieldIds[i]!] = decoders[i]!(text);
    }
    const record = { ...RECORD_TEMPLATE };
    record.remoteId = row[offset] ?? ''; // the key column: never NULL (reads filter on it, writes return it)
    record.values = values;
    if (plan.serviceIndex >= 0) record.serviceId = row[offset + plan.serviceIndex] ?? null;
    return record;
  }

  /**
   * A record from one line of `COPY (SELECT <plan.columns> ...) TO STDOUT` (text format), taking the values
   * straight out of the line: no array of fields, and no string at all for integers and booleans. Fields are
   * separated by tabs (a tab in the data is escaped); only a line holding a backslash can have NULLs (`\N`)
   * or escaped characters.
   */
  private lineRecord(plan: ReadPlan, line: string): SourceRecord {
    const escaped = line.indexOf('\\') !== -1;
    const values = { ...plan.emptyValues };
    const record = { ...RECORD_TEMPLATE };
    const { columnFields, scans, fieldIds, decoders } = plan;
    let start = 0;
    for (let column = 0; column < columnFields.length; column += 1) {
      let end = line.indexOf('\t', start);
      if (end === -1) end = line.length;
      if (escaped && isCopyNull(line, start, end)) {
        if (column === plan.serviceIndex) record.serviceId = null;
        start = end + 1;
        continue;
      }
      const field = columnFields[column]!;
      const scan = scans[column]!;
      let text: string | null = null;
      if (scan === Scan.Text || column === 0 || column === plan.serviceIndex) {
        text = line.slice(start, end);
        if (escaped && text.indexOf('\\') !== -1) text = unescapeCopy(text);
        if (column === 0) record.remoteId = text;
        if (column === plan.serviceIndex) record.serviceId = text;
      }
      if (field >= 0) {
        if (scan === Scan.Boolean) values[fieldIds[field]!] = line.charCodeAt(start) === 0x74; // t
        else if (scan === Scan.Integer) values[fieldIds[field]!] = scanInteger(line, start, end) ?? decoders[field]!(text ?? line.slice(start, end));
        else values[fieldIds[field]!] = decoders[field]!(text!);
      }
      start = end + 1;
    }
    record.values = values;
    return record;
  }

  private keyColumnOf(meta: TableMeta) {
    return meta.keyColumn === null ? undefined : meta.columnByName.get(meta.keyColumn);
  }

  /** Whether a remote id can be a value of the key column at all (so a malformed id is simply absent). */
  private validKey(meta: TableMeta, remoteId: string): boolean {
    const column = this.keyColumnOf(meta);
    if (!column) return false;
    const limit = INT_RANGES[column.baseName];
    if (limit !== undefined) return /^-?\d{1,20}$/.test(remoteId) && BigInt(remoteId) <= limit && BigInt(remoteId) >= -limit - 1n;
    if (column.baseName === 'uuid') return isUuid(remoteId);
    return true;
  }

  /** Runs `action` in one transaction (the session already carries this connection's origin). */
  private async withWriteTransaction<T>(action: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await action(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Runs `action` for all rows at once inside a savepoint; if that fails, runs it again row by row, each in
   * its own savepoint, so one bad row is reported and the others are written. With `stopOnSchemaChange`
   * (the table description came from the cache), a batch failure that suggests the table changed is thrown
   * instead, so the whole call is rolled back and retried with a fresh description.
   */
  private async batchWithFallback<R extends { index: number }>(
    client: PoolClient,
    rows: R[],
    action: (rows: R[]) => Promise<Map<number, WriteResult>>,
    results: WriteResult[],
    stopOnSchemaChange = false,
  ): Promise<void> {
    if (rows.length === 0) return;
    await client.query('SAVEPOINT lockstep_batch');
    try {
      const written = await action(rows);
      await client.query('RELEASE SAVEPOINT lockstep_batch');
      written.forEach((result, index) => (results[index] = result));
      return;
    } catch (error) {
      if (stopOnSchemaChange && suggestsSchemaChange(error)) throw error;
      await client.query('ROLLBACK TO SAVEPOINT lockstep_batch');
    }
    await this.rowByRow(client, rows, action, results);
  }

  /** Runs `action` for each row in its own savepoint; a row that fails gets its error as its result. */
  private async rowByRow<R extends { index: number }>(
    client: PoolClient,
    rows: R[],
    action: (rows: R[]) => Promise<Map<number, WriteResult>>,
    results: WriteResult[],
  ): Promise<void> {
    for (const row of rows) {
      await client.query('SAVEPOINT lockstep_row');
      try {
        const written = await action([row]);
        await client.query('RELEASE SAVEPOINT lockstep_row');
        written.forEach((result, index) => (results[index] = result));
      } catch (error) {
        await client.query('ROLLBACK TO SAVEPOINT lockstep_row');
        results[row.index] = failure(this.translate(error));
      }
    }
  }

  /** Validates and encodes one row's values; returns an error instead of throwing. */
  private encodeRow(meta: TableMeta, values: RecordCreate['values']): Map<string, PgParam> | ConnectorError {
    const encoded = new Map<string, PgParam>();
    for (const fieldId in values) {
      const value = values[fieldId];
      const field = meta.fieldById.get(fieldId);
      if (!field) return metadataError('invalid_data', `Field "${fieldId}" does not exist in table "${meta.name}"`, '42703');
      if (!field.write) return new ConnectorError('invalid_data', `Field "${fieldId}" of table "${meta.name}" cannot be written`);
      try {
        encoded.set(fieldId, encodeValue(meta.kinds.get(fieldId)!, value, fieldId));
      } catch (error) {
        return this.translate(error);
      }
    }
    return encoded;
  }

  private chunks<T>(rows: T[], paramsPerRow: number): T[][] {
    const size = Math.max(1, Math.floor(MAX_PARAMS / Math.max(1, paramsPerRow)));
    const result: T[][] = [];
    for (let start = 0; start < rows.length; start += size) result.push(rows.slice(start, start + size));
    return result;
  }

  // ---------------------------------------------------------------------------------------------------
  // credentials and discovery

  async checkCredentials(): Promise<void> {
    await this.guard(async () => {
      await this.pool.query('SELECT 1');
    });
  }

  async listBases(): Promise<BaseInfo[]> {
    return this.guard(async () => {
      const { rows } = await this.db.query(
        `SELECT nspname AS name FROM pg_namespace
         WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> ALL ($1::text[]) AND has_schema_privilege(oid, 'USAGE')
         ORDER BY nspname`,
        [EXCLUDED_SCHEMAS],
      );
      return rows.map((row) => ({ id: String(row['name']), name: String(row['name']) }));
    });
  }

  async listTables(): Promise<TableInfo[]> {
    return this.guard(async () => {
      const schema = this.schema();
      if (!(await schemaExists(this.db, schema))) {
        throw new ConnectorError('not_found', `Schema "${schema}" does not exist`, { appCode: '3F000' });
      }
      return listTables(this.db, schema);
    });
  }

  /** Discovery always reads the catalog (and refreshes the cached description). */
  async listFields(tableRemoteId: string): Promise<FieldInfo[]> {
    return this.guard(async () => (await this.freshTable(tableRemoteId)).fields);
  }

  // ---------------------------------------------------------------------------------------------------
  // reads

  async readPage(tableRemoteId: string, options: ReadPageOptions): Promise<RecordPage> {
    const after = options.after ?? null;
    if (after !== null && after.includes('\u0000')) throw new ConnectorError('invalid_data', 'The page checkpoint is not one this connector issued');
    return this.guard(() =>
      this.withTable(tableRemoteId, async (meta) => {
        const key = this.requireKey(meta);
        const plan = this.readPlan(meta, options.fields);
        const pageSize = Math.min(Math.max(1, Math.floor(options.pageSize)), MAX_PAGE);
        let where = `${ident(key)} IS NOT NULL`;
        // COPY takes no parameters: the lower bound is a quoted literal, cast to the key's type.
        if (after !== null) where += ` AND ${ident(key)} > ${escapeLiteral(after)}::${this.castOf(meta, key)}`;
        const records: SourceRecord[] = [];
        let more = false;
        await this.copyRows(
          `COPY (SELECT ${plan.selectList} FROM ${this.target(meta)} WHERE ${where} ORDER BY ${ident(key)} LIMIT ${pageSize + 1}) TO STDOUT`,
          (line) => {
            if (records.length < pageSize) records.push(this.lineRecord(plan, line));
            else more = true;
          },
        );
        return { records, next: more ? records[records.length - 1]!.remoteId : null };
      }),
    );
  }

  /**
   * Runs `COPY (query) TO STDOUT` on a pooled client and hands each line to `onLine` as soon as it arrives
   * (see copy.ts), so decoding overlaps the server's work. An error `onLine` throws is raised at the end.
   */
  private copyRows(text: string, onLine: (line: string) => void): Promise<void> {
    return copyOut(this.pool, text, onLine);
  }

  /** With `lock`, the rows are locked for update (in key order, so two writers lock them in the same order). */
  private async selectByKeys(db: ArrayQueryable, meta: TableMeta, remoteIds: string[], lock = false): Promise<SourceRecord[]> {
    const key = this.requireKey(meta);
    const ids = [...new Set(remoteIds.filter((id) => this.validKey(meta, id)))];
    if (ids.length === 0) return [];
    const plan = this.readPlan(meta);
    const locking = lock ? ` ORDER BY ${ident(key)} FOR UPDATE` : '';
    const rows = await textRows(db, `SELECT ${plan.selectList} FROM ${this.target(meta)} WHERE ${ident(key)} = ANY ($1::${this.castOf(meta, key)}[])${locking}`, [ids]);
    return rows.map((row) => this.toRecord(plan, row));
  }

  async countRecords(tableRemoteId: string): Promise<number> {
    return this.guard(() =>
      this.withTable(tableRemoteId, async (meta) => {
        const key = this.requireKey(meta);
        const result = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.target(meta)} WHERE ${ident(key)} IS NOT NULL`);
        return Number(result.rows[0]!.n);
      }),
    );
  }

  async readByIds(tableRemoteId: string, remoteIds: string[]): Promise<SourceRecord[]> {
    return this.guard(() => this.withTable(tableRemoteId, (meta) => this.selectByKeys(this.pool, meta, remoteIds)));
  }

  private async selectByServiceIds(db: ArrayQueryable, meta: TableMeta, serviceIds: string[]): Promise<SourceRecord[]> {
    const column = meta.serviceIdColumn;
    const ids = [...new Set(serviceIds.filter(isUuid).map((id) => id.toLowerCase()))];
    if (!column || ids.length === 0) return [];
    const plan = this.readPlan(meta);
    const rows = await textRows(db, `SELECT ${plan.selectList} FROM ${this.target(meta)} WHERE ${ident(column)} = ANY ($1::uuid[])`, [ids]);
    return rows.map((row) => this.toRecord(plan, row));
  }

  async readByServiceIds(tableRemoteId: string, serviceIds: string[]): Promise<SourceRecord[]> {
    return this.guard(() => this.withTable(tableRemoteId, (meta) => this.selectByServiceIds(this.pool, meta, serviceIds)));
  }

  // ---------------------------------------------------------------------------------------------------
  // change feed

  async currentCheckpoint(_tableRemoteId: string): Promise<string> {
    return this.guard(async () => encodeCheckpoint({ v: 1, s: await this.snapshot() }));
  }

  private async snapshot(): Promise<string> {
    const { rows } = await this.db.query('SELECT pg_current_snapshot()::text AS snapshot');
    return String(rows[0]!['snapshot']);
  }

  async readChanges(tableRemoteId: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch> {
    const checkpoint = decodeCheckpoint(since);
    return this.guard(async () => {
      const { rows: logRows } = await this.db.query(`SELECT to_regclass('${CHANGE_LOG}') IS NOT NULL AS present`);
      const current = checkpoint.c ?? (await this.snapshot());
      if (logRows[0]?.['present'] !== 't') {
        return { changes: [], checkpoint: encodeCheckpoint({ v: 1, s: current }), hasMore: false };
      }
      await this.purgeOccasionally();
      const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_PAGE);
      const { rows } = await this.db.query(READ_CHANGES_SQL, [
        this.schema(),
        tableRemoteId,
        checkpoint.s,
        current,
        checkpoint.a?.[0] ?? null,
        checkpoint.a?.[1] ?? null,
        options.ignoreOwnWrites === true,
        limit + 1,
        this.origin,
      ]);
      const entries = (rows as Row[]).slice(0, limit);
      const hasMore = rows.length > limit;
      const last = entries[entries.length - 1];
      const next: Checkpoint =
        hasMore && last ? { v: 1, s: checkpoint.s, c: current, a: [String(last['xid']), String(last['id'])] } : { v: 1, s: current };
      return { changes: await this.toChanges(tableRemoteId, entries), checkpoint: encodeCheckpoint(next), hasMore };
    });
  }

  /**
   * Retention: every PURGE_EVERY_MS a reader deletes change-log entries older than the retention (a bounded
   * batch). Housekeeping only: a failure here does not fail the read.
   */
  private async purgeOccasionally(): Promise<void> {
    if (Date.now() - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    await this.purgeChangeLog().catch(() => undefined);
  }

  /** Deletes up to `batch` change-log entries older than the retention; returns how many. */
  async purgeChangeLog(batch = 10_000): Promise<number> {
    const result = await this.db.query(PURGE_SQL, [this.retentionDays, batch]);
    return (result as unknown as { rowCount: number | null }).rowCount ?? 0;
  }

  /** One change per record (its last operation in the batch); upserts carry the record as it is now. */
  private async toChanges(tableRemoteId: string, entries: Row[]): Promise<Change[]> {
    if (entries.length === 0) return [];
    const latest = new Map<string, { op: string; at: string; own: boolean }>();
    for (const entry of entries) {
      const pk = String(entry['pk']);
      const own = entry['origin'] === this.origin && (latest.get(pk)?.own ?? true);
      latest.delete(pk); // re-insert so the map is ordered by each record's last change
      latest.set(pk, { op: String(entry['op']), at: timestamptzToCanonical(String(entry['at'])), own });
    }
    const upserts = [...latest].filter(([, change]) => change.op === 'upsert').map(([pk]) => pk);
    const records = new Map<string, SourceRecord>();
    if (upserts.length > 0) {
      const found = await this.withTable(tableRemoteId, (meta) => this.selectByKeys(this.pool, meta, upserts));
      for (const record of found) records.set(record.remoteId, record);
    }
    const changes: Change[] = [];
    for (const [pk, change] of latest) {
      if (change.op === 'delete') {
        changes.push({ kind: 'delete', remoteId: pk, at: change.at, own: change.own });
      } else {
        const record = records.get(pk);
        // A row gone by now was deleted after this change; its delete is in the log too.
        if (record) changes.push({ kind: 'upsert', remoteId: pk, record, at: change.at, own: change.own });
      }
    }
    return changes;
  }

  async watch(tableRemoteIds: string[], onChange: (tableRemoteId: string) => void): Promise<() => Promise<void>> {
    const schema = this.schema();
    const client = new Client(this.clientConfig);
    client.on('error', () => undefined);
    await this.guard(async () => {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
    }).catch(async (error: unknown) => {
      await client.end().catch(() => undefined);
      throw error;
    });
    this.watchers.add(client);
    client.on('notification', (message) => {
      if (message.channel !== NOTIFY_CHANNEL || !message.payload) return;
      try {
        const payload = JSON.parse(message.payload) as { schema?: string; table?: string };
        if (payload.schema === schema && payload.table && tableRemoteIds.includes(payload.table)) onChange(payload.table);
      } catch {
        // a payload from something else on the channel: ignore it
      }
    });
    return async () => {
      this.watchers.delete(client);
      client.removeAllListeners('notification');
      await client.end().catch(() => undefined);
    };
  }

  // ---------------------------------------------------------------------------------------------------
  // writes

  /** The remote ids of the rows holding these service ids, by service id. */
  private async keysByServiceIds(db: ArrayQueryable, meta: TableMeta, serviceIds: string[]): Promise<Map<string, string>> {
    const key = this.requireKey(meta);
    const column = meta.serviceIdColumn!;
    const rows = await textRows(db, `SELECT ${ident(key)}, ${ident(column)} FROM ${this.target(meta)} WHERE ${ident(column)} = ANY ($1::uuid[])`, [
      [...new Set(serviceIds)],
    ]);
    return new Map(rows.map((row) => [String(row[1]), String(row[0])]));
  }

  /**
   * Inserts rows of one group with one statement: each column of the rows travels as one array parameter
   * (`INSERT ... SELECT ... FROM unnest($1::type[], ...) WITH ORDINALITY ... ORDER BY`, so rows are inserted
   * in input order), and only the key (and the service id) come back: results carry the remote id, not the
   * record. Array-typed columns travel as text arrays of array literals, cast per row. With a service id
   * column, `ON CONFLICT (lockstep_id) DO NOTHING`, and the rows it skipped are adopted.
   */
  private async insertRows(db: ArrayQueryable, meta: TableMeta, group: InsertGroup, rows: InsertRow[]): Promise<Map<number, WriteResult>> {
    const key = this.requireKey(meta);
    const serviceColumn = meta.serviceIdColumn;
    const { columns, kinds } = group;
    const written = new Map<number, WriteResult>();
    if (columns.length === 0 && !serviceColumn) {
      // Nothing to write but defaults (a table with a generated key and no values given): one row at a time.
      for (const row of rows) {
        const [returned] = await textRows(db, `INSERT INTO ${this.target(meta)} DEFAULT VALUES RETURNING ${ident(key)}`);
        written.set(row.index, { ok: true, remoteId: String(returned![0]), record: null });
      }
      return written;
    }
    const params: string[] = [];
    const sources: string[] = [];
    const selected: string[] = [];
    for (let column = 0; column < columns.length; column += 1) {
      const isArray = kinds[column]!.isArray;
      let literal = '{';
      for (let index = 0; index < rows.length; index += 1) {
        if (index > 0) literal += ',';
        const cell = rows[index]!.cells[column]!;
        literal += elementLiteral(isArray && Array.isArray(cell) ? arrayLiteral(cell) : cell);
      }
      params.push(`${literal}}`);
      const cast = this.castOf(meta, columns[column]!);
      sources.push(isArray ? `$${params.length}::text[]` : `$${params.length}::${cast}[]`);
      selected.push(isArray ? `u.c${column}::${cast}` : `u.c${column}`);
    }
    const names = [...columns];
    if (serviceColumn) {
      params.push(arrayLiteral(rows.map((row) => row.serviceId)));
      sources.push(`$${params.length}::uuid[]`);
      selected.push(`u.c${names.length}`);
      names.push(serviceColumn);
    }
    const aliases = names.map((_, position) => `c${position}`).join(', ');
    const conflict = serviceColumn ? ` ON CONFLICT (${ident(serviceColumn)}) DO NOTHING` : '';
    const returning = serviceColumn && serviceColumn !== key ? `${ident(key)}, ${ident(serviceColumn)}` : ident(key);
    const returned = await textRows(
      db,
      `INSERT INTO ${this.target(meta)} (${this.selectList(names)})
       SELECT ${selected.join(', ')} FROM unnest(${sources.join(', ')}) WITH ORDINALITY AS u (${aliases}, lockstep_ord)
       ORDER BY u.lockstep_ord${conflict} RETURNING ${returning}`,
      params,
    );
    if (serviceColumn) {
      const serviceIndex = serviceColumn === key ? 0 : 1;
      const byServiceId = new Map(returned.map((row) => [String(row[serviceIndex]), String(row[0])]));
      const missing = rows.filter((row) => !byServiceId.has(row.serviceId!)).map((row) => row.serviceId!);
      if (missing.length > 0) {
        // Rows a previous (crashed or repeated) create already wrote, or a repeat within this call: adopt them.
        for (const [serviceId, remoteId] of await this.keysByServiceIds(db, meta, missing)) byServiceId.set(serviceId, remoteId);
      }
      for (const row of rows) {
        const remoteId = byServiceId.get(row.serviceId!);
        if (remoteId === undefined) throw new ConnectorError('transient', 'A created row could not be found by its service id');
        written.set(row.index, { ok: true, remoteId, record: null });
      }
    } else {
      if (returned.length !== rows.length) throw new ConnectorError('transient', 'INSERT returned an unexpected number of rows');
      rows.forEach((row, position) => written.set(row.index, { ok: true, remoteId: String(returned[position]![0]), record: null }));
    }
    return written;
  }

  /**
   * Writes one group of rows with `COPY ... FROM STDIN` (see copy.ts) when every row's remote id is known
   * before writing: the key is the service id, or every row writes the key in the form PostgreSQL prints
   * it (`printedKey`). Returns null, having written nothing, when they are not. With a service id column,
   * rows whose service id is already in the table are adopted and a service id repeated within the call
   * shares its first row's result, as `ON CONFLICT DO NOTHING` does for an INSERT. Throws when the COPY
   * fails; nothing was written then.
   *
   * Creates are almost always new rows, so the COPY is tried first without looking anything up: a service id
   * already in the table fails it on the column's unique index (nothing written), and only then are the rows
   * looked up by service id and the others copied. That saves a statement (a thousand index probes) per call.
   */
  private async copyIn(meta: TableMeta, group: InsertGroup, rows: InsertRow[]): Promise<Map<number, WriteResult> | null> {
    const key = this.requireKey(meta);
    const serviceColumn = meta.serviceIdColumn;
    const keyPosition = group.columns.indexOf(key);
    const keyType = meta.columnByName.get(key)?.baseName ?? '';
    const remoteIds: string[] = new Array(rows.length);
    for (let index = 0; index < rows.length; index += 1) {
      const row = rows[index]!;
      const remoteId = key === serviceColumn ? row.serviceId : keyPosition >= 0 ? printedKey(keyType, row.cells[keyPosition]!) : null;
      if (remoteId === null) return null;
      remoteIds[index] = remoteId;
    }
    if (serviceColumn && new Set(rows.map((row) => row.serviceId)).size === rows.length) {
      try {
        return await this.copyNewRows(meta, group, rows, remoteIds);
      } catch (error) {
        if (!this.serviceIdTaken(meta, error)) throw error;
        // A row with one of these service ids exists (a repeated create): adopt it below.
      }
    }
    const written = new Map<number, WriteResult>();
    let toCopy = rows;
    let copiedIds = remoteIds;
    if (serviceColumn) {
      const existing = await this.keysByServiceIds(this.pool, meta, rows.map((row) => row.serviceId!));
      const copied = new Map<string, string>();
      toCopy = [];
      copiedIds = [];
      rows.forEach((row, index) => {
        const adopted = existing.get(row.serviceId!) ?? copied.get(row.serviceId!);
        if (adopted !== undefined) {
          written.set(row.index, { ok: true, remoteId: adopted, record: null });
        } else {
          copied.set(row.serviceId!, remoteIds[index]!);
          toCopy.push(row);
          copiedIds.push(remoteIds[index]!);
        }
      });
    }
    if (toCopy.length > 0) for (const [index, result] of await this.copyNewRows(meta, group, toCopy, copiedIds)) written.set(index, result);
    return written;
  }

  /** Whether a failed write failed on the unique index of the table's service id column (the value is in the table). */
  private serviceIdTaken(meta: TableMeta, error: unknown): boolean {
    const column = meta.serviceIdColumn;
    if (!column || (error as { code?: unknown } | null)?.code !== '23505') return false;
    const detail = (error as { detail?: unknown }).detail;
    return typeof detail === 'string' && (detail.startsWith(`Key (${column})=`) || detail.startsWith(`Key (${ident(column)})=`));
  }

  /** `COPY`s the rows (every one new) and answers their results by input index. */
  private async copyNewRows(meta: TableMeta, group: InsertGroup, rows: InsertRow[], remoteIds: string[]): Promise<Map<number, WriteResult>> {
    const serviceColumn = meta.serviceIdColumn;
    let data = '';
    for (const row of rows) {
      const { cells } = row;
      for (let column = 0; column < cells.length; column += 1) {
        if (column > 0) data += '\t';
        data += copyField(cells[column]!);
      }
      if (serviceColumn) data += cells.length > 0 ? `\t${row.serviceId}` : row.serviceId;
      data += '\n';
    }
    const names = serviceColumn ? [...group.columns, serviceColumn] : group.columns;
    await this.copyFrom(`COPY ${this.target(meta)} (${this.selectList(names)}) FROM STDIN`, Buffer.from(data, 'utf8'));
    const written = new Map<number, WriteResult>();
    rows.forEach((row, index) => written.set(row.index, { ok: true, remoteId: remoteIds[index]!, record: null }));
    return written;
  }

  /** Runs `COPY ... FROM STDIN` on a pooled client with `data` as the rows (a statement of its own). */
  private async copyFrom(text: string, data: Buffer): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await copyBuffer(client, text, data).catch((error: Error) => {
        broken = error;
        throw error;
      });
    } finally {
      client.release(broken);
    }
  }

  /** The group for rows naming `fields` (in this order), or why such rows cannot be written. */
  private insertGroup(meta: TableMeta, fields: string[]): InsertGroup | ConnectorError {
    const kinds: ColumnKind[] = [];
    for (const fieldId of fields) {
      const field = meta.fieldById.get(fieldId);
      if (!field) return metadataError('invalid_data', `Field "${fieldId}" does not exist in table "${meta.name}"`, '42703');
      if (!field.write) return new ConnectorError('invalid_data', `Field "${fieldId}" of table "${meta.name}" cannot be written`);
      kinds.push(meta.kinds.get(fieldId)!);
    }
    return { columns: fields, kinds, rows: [] };
  }

  async createRecords(tableRemoteId: string, rows: RecordCreate[]): Promise<WriteResult[]> {
    if (rows.length === 0) return [];
    return this.guard(() => this.withTable(tableRemoteId, (meta, cached) => this.create(meta, rows, cached)));
  }

  private async create(meta: TableMeta, rows: RecordCreate[], cached: boolean): Promise<WriteResult[]> {
    this.requireKey(meta);
    if (meta.readOnly) throw new ConnectorError('permission', `Table "${meta.name}" cannot be written`);
    const results: WriteResult[] = new Array(rows.length);
    // Rows naming the same fields (in the same order) share a statement; absent fields get their default.
    const groups = new Map<string, InsertGroup | ConnectorError>();
    let group: InsertGroup | ConnectorError | null = null;
    let groupColumns: string[] = [];
    for (let index = 0; index < rows.length; index += 1) {
      const { values, serviceId } = rows[index]!;
      if (group === null || !hasKeys(values, groupColumns)) {
        groupColumns = Object.keys(values);
        const signature = groupColumns.join('\u0000');
        group = groups.get(signature) ?? this.insertGroup(meta, groupColumns);
        groups.set(signature, group);
      }
      if (group instanceof ConnectorError) {
        // A field the cached description does not know may have been added since: retry with a fresh one.
        if (cached && metadataErrors.has(group)) throw group;
        results[index] = failure(group);
        continue;
      }
      if (meta.serviceIdColumn && !isUuid(serviceId)) {
        results[index] = failure(new ConnectorError('invalid_data', `The service id "${serviceId}" is not a UUID`));
        continue;
      }
      const cells: PgParam[] = new Array(groupColumns.length);
      try {
        for (let column = 0; column < groupColumns.length; column += 1) {
          const fieldId = groupColumns[column]!;
          cells[column] = encodeValue(group.kinds[column]!, values[fieldId], fieldId);
        }
      } catch (error) {
        results[index] = failure(this.translate(error));
        continue;
      }
      group.rows.push({ index, cells, serviceId: meta.serviceIdColumn ? serviceId.toLowerCase() : null });
    }
    const statements: { group: InsertGroup; rows: InsertRow[] }[] = [];
    for (const candidate of groups.values()) {
      if (candidate instanceof ConnectorError) continue;
      for (let start = 0; start < candidate.rows.length; start += INSERT_CHUNK) {
        statements.push({ group: candidate, rows: candidate.rows.slice(start, start + INSERT_CHUNK) });
      }
    }
    const only = statements.length === 1 ? statements[0]! : null;
    if (only && (only.group.columns.length > 0 || meta.serviceIdColumn)) {
      // One statement is a transaction of its own: no BEGIN, savepoint or COMMIT round trips. COPY when the
      // table and the rows allow it (see `copyIn`), else one INSERT.
      try {
        const copied = meta.copyable ? await this.copyIn(meta, only.group, only.rows) : null;
        const written = copied ?? (await this.insertRows(this.pool, meta, only.group, only.rows));
        written.forEach((result, index) => (results[index] = result));
        return results;
      } catch (error) {
        if (cached && suggestsSchemaChange(error)) throw error;
        // Nothing was written: find the bad rows one by one below.
      }
      await this.withWriteTransaction((client) => this.rowByRow(client, only.rows, (batch) => this.insertRows(client, meta, only.group, batch), results));
      return results;
    }
    if (statements.length > 0) {
      await this.withWriteTransaction(async (client) => {
        for (const statement of statements) {
          await this.batchWithFallback(client, statement.rows, (batch) => this.insertRows(client, meta, statement.group, batch), results, cached);
        }
      });
    }
    return results;
  }

  private async updateGroup(client: PoolClient, meta: TableMeta, rows: PreparedRow[]): Promise<Map<number, WriteResult>> {
    const key = this.requireKey(meta);
    const plan = this.readPlan(meta);
    const written = new Map<number, WriteResult>();
    const columns = [...rows[0]!.values.keys()];
    if (columns.length === 0) {
      const found = new Map((await this.selectByKeys(client, meta, rows.map((row) => row.remoteId!))).map((record) => [record.remoteId, record]));
      for (const row of rows) {
        const record = found.get(row.remoteId!);
        written.set(row.index, record ? { ok: true, remoteId: record.remoteId, record } : failure(this.notFound(meta, row.remoteId!)));
      }
      return written;
    }
    for (const chunk of this.chunks(rows, columns.length + 2)) {
      const params: unknown[] = [];
      const tuples = chunk.map((row) => {
        params.push(row.index, row.remoteId);
        const cells = [`$${params.length - 1}::integer`, `$${params.length}::${this.castOf(meta, key)}`];
        for (const column of columns) {
          params.push(row.values.get(column));
          cells.push(`$${params.length}::${this.castOf(meta, column)}`);
        }
        return `(${cells.join(', ')})`;
      });
      const aliases = ['lockstep_ord', 'lockstep_key', ...columns.map((_, position) => `c${position}`)].map(ident).join(', ');
      const assignments = columns.map((column, position) => `${ident(column)} = lockstep_values.${ident(`c${position}`)}`).join(', ');
      const returned = await textRows(
        client,
        `UPDATE ${this.target(meta)} AS lockstep_target SET ${assignments}
         FROM (VALUES ${tuples.join(', ')}) AS lockstep_values (${aliases})
         WHERE lockstep_target.${ident(key)} = lockstep_values.lockstep_key
         RETURNING lockstep_values.lockstep_ord::text, ${this.selectList(plan.columns, 'lockstep_target')}`,
        params,
      );
      const byIndex = new Map(returned.map((row) => [Number(row[0]), row]));
      for (const row of chunk) {
        const found = byIndex.get(row.index);
        if (found) {
          const record = this.toRecord(plan, found, 1);
          written.set(row.index, { ok: true, remoteId: record.remoteId, record });
        } else {
          written.set(row.index, failure(this.notFound(meta, row.remoteId!)));
        }
      }
    }
    return written;
  }

  private notFound(meta: TableMeta, remoteId: string): ConnectorError {
    return new ConnectorError('not_found', `Record "${remoteId}" does not exist in table "${meta.name}"`);
  }

  async updateRecords(tableRemoteId: string, rows: RecordUpdate[]): Promise<WriteResult[]> {
    if (rows.length === 0) return [];
    return this.guard(() => this.withTable(tableRemoteId, (meta, cached) => this.update(meta, rows, cached)));
  }

  private async update(meta: TableMeta, rows: RecordUpdate[], cached: boolean): Promise<WriteResult[]> {
    this.requireKey(meta);
    if (meta.readOnly) throw new ConnectorError('permission', `Table "${meta.name}" cannot be written`);
    const results: WriteResult[] = new Array(rows.length);
    // Rows with the same set of fields share a statement; a record appearing twice goes to a later group.
    const groups: { signature: string; ids: Set<string>; rows: PreparedRow[] }[] = [];
    rows.forEach((row, index) => {
      if (!this.validKey(meta, row.remoteId)) {
        results[index] = failure(this.notFound(meta, row.remoteId));
        return;
      }
      const values = this.encodeRow(meta, row.values);
      if (values instanceof ConnectorError) {
        if (cached && metadataErrors.has(values)) throw values;
        results[index] = failure(values);
        return;
      }
      const signature = JSON.stringify([...values.keys()]);
      let group = groups.find((candidate) => candidate.signature === signature && !candidate.ids.has(row.remoteId));
      if (!group) {
        group = { signature, ids: new Set(), rows: [] };
        groups.push(group);
      }
      group.ids.add(row.remoteId);
      group.rows.push({ index, values, serviceId: null, remoteId: row.remoteId });
    });
    await this.withWriteTransaction(async (client) => {
      await this.checkExpected(client, meta, rows, groups, results);
      for (const group of groups) await this.batchWithFallback(client, group.rows, (batch) => this.updateGroup(client, meta, batch), results, cached);
    });
    return results;
  }

  /**
   * Conditional updates (`RecordUpdate.expected`): their rows are locked and read in the write transaction, and a
   * row that no longer holds the expected values (or is gone) leaves its group with result `changed` (`not_found`).
   * The lock holds until the commit, so no edit can come between this check and the UPDATE.
   */
  private async checkExpected(client: PoolClient, meta: TableMeta, input: RecordUpdate[], groups: { rows: PreparedRow[] }[], results: WriteResult[]): Promise<void> {
    const conditional = groups.flatMap((group) => group.rows).filter((row) => input[row.index]!.expected !== undefined);
    if (conditional.length === 0) return;
    const found = await this.selectByKeys(client, meta, conditional.map((row) => row.remoteId!), true);
    const current = new Map(found.map((record) => [this.sameKey(meta, record.remoteId), record]));
    const refused = new Set<number>();
    for (const row of conditional) {
      const record = current.get(this.sameKey(meta, row.remoteId!));
      const field = record ? changedField(record, input[row.index]!.expected) : null;
      if (record && field === null) continue;
      results[row.index] = failure(record ? changedError(meta.name, row.remoteId!, field!) : this.notFound(meta, row.remoteId!));
      refused.add(row.index);
    }
    if (refused.size > 0) for (const group of groups) group.rows = group.rows.filter((row) => !refused.has(row.index));
  }

  /** A remote id as the key column reads it back (an integer key written as "007" reads "7"). */
  private sameKey(meta: TableMeta, remoteId: string): string {
    const column = this.keyColumnOf(meta);
    return column && INT_RANGES[column.baseName] !== undefined && /^-?\d+$/.test(remoteId) ? BigInt(remoteId).toString() : remoteId;
  }

  async deleteRecords(tableRemoteId: string, remoteIds: string[]): Promise<WriteResult[]> {
    if (remoteIds.length === 0) return [];
    return this.guard(() =>
      this.withTable(tableRemoteId, async (meta, cached) => {
        const key = this.requireKey(meta);
        if (meta.readOnly) throw new ConnectorError('permission', `Table "${meta.name}" cannot be written`);
        const results: WriteResult[] = new Array(remoteIds.length);
        const rows: PreparedRow[] = [];
        remoteIds.forEach((remoteId, index) => {
          // A remote id the key column cannot hold names no row: it is already gone.
          if (this.validKey(meta, remoteId)) rows.push({ index, values: new Map(), serviceId: null, remoteId });
          else results[index] = { ok: true, remoteId, record: null };
        });
        await this.withWriteTransaction((client) =>
          this.batchWithFallback(
            client,
            rows,
            async (batch) => {
              await client.query(`DELETE FROM ${this.target(meta)} WHERE ${ident(key)} = ANY ($1::${this.castOf(meta, key)}[])`, [
                batch.map((row) => row.remoteId),
              ]);
              return new Map(batch.map((row) => [row.index, { ok: true, remoteId: row.remoteId!, record: null } as WriteResult]));
            },
            results,
            cached,
          ),
        );
        return results;
      }),
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // schema changes

  private checkName(name: string, what: string): void {
    if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
    if (identifierTooLong(name)) throw new ConnectorError('invalid_data', `The ${what} name "${name}" is longer than PostgreSQL's 63 bytes`);
  }

  private columnDefinition(field: FieldSpec): string {
    this.checkName(field.name, 'field');
    if (field.name === SERVICE_ID_COLUMN) throw new ConnectorError('invalid_data', `"${SERVICE_ID_COLUMN}" is the service id column's name`);
    return `${ident(field.name)} ${nativeTypeFor(field)}`;
  }

  async createTable(name: string, fields: FieldSpec[]): Promise<TableInfo> {
    this.checkName(name, 'table');
    const definitions = fields.map((field) => this.columnDefinition(field));
    const names = fields.map((field) => field.name);
    if (new Set(names).size !== names.length) throw new ConnectorError('invalid_data', 'Two fields have the same name');
    return this.guard(async () => {
      const target = qualified(this.schema(), name);
      this.tables.invalidate(name);
      await this.withWriteTransaction(async (client) => {
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${target} (${[`${ident(SERVICE_ID_COLUMN)} uuid PRIMARY KEY DEFAULT gen_random_uuid()`, ...definitions].join(', ')})`,
        );
        // A retried create adopts the table a previous attempt made, adding what it lacks.
        for (const definition of definitions) await client.query(`ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${definition}`);
      });
      this.tables.invalidate(name);
      const tables = await listTables(this.db, this.schema());
      const table = tables.find((candidate) => candidate.remoteId === name);
      if (!table) throw new ConnectorError('transient', `Table "${name}" was created but is not listed`);
      return table;
    }, `Could not create table "${name}"`);
  }

  async createField(tableRemoteId: string, field: FieldSpec): Promise<FieldInfo> {
    const definition = this.columnDefinition(field);
    return this.guard(async () => {
      const meta = (await this.table(tableRemoteId)).value;
      try {
        await this.pool.query(`ALTER TABLE ${this.target(meta)} ADD COLUMN IF NOT EXISTS ${definition}`);
      } finally {
        this.tables.invalidate(tableRemoteId);
      }
      const created = (await this.freshTable(tableRemoteId)).fieldById.get(field.name);
      if (!created) throw new ConnectorError('transient', `Field "${field.name}" was created but is not listed`);
      return created;
    }, `Could not create field "${field.name}"`);
  }

  async prepareTable(tableRemoteId: string, options: PrepareOptions): Promise<PreparedTable> {
    return this.guard(async () => {
      const meta = await this.freshTable(tableRemoteId);
      if (meta.isView) return { serviceIdField: null, changeCapture: false };
      this.tables.invalidate(tableRemoteId);
      await this.withWriteTransaction(async (client) => {
        await client.query(INFRASTRUCTURE_SQL[0]!); // serialise concurrent setups
        // A table without a single-column primary key is keyed by the service id column; with the
        // `serviceIdColumn` option a keyed table gets one too (its primary key stays the remote id), so creates
        // are idempotent there as well (`ON CONFLICT (lockstep_id)` and adoption in `insertRows`/`copyIn`).
        // A `lockstep_id` column without a unique index only gets the unique constraint.
        const needsServiceId = meta.serviceIdColumn === null && (meta.primaryKey.length !== 1 || options.serviceIdColumn === true);
        if (needsServiceId) {
          const hasColumn = meta.columns.some((column) => column.name === SERVICE_ID_COLUMN);
          for (const statement of addServiceIdSql(meta.schema, meta.name, SERVICE_ID_COLUMN, hasColumn)) await client.query(statement);
        }
        if (options.changeCapture) {
          for (const statement of INFRASTRUCTURE_SQL.slice(1)) await client.query(statement);
          const key = meta.primaryKey.length === 1 ? meta.primaryKey[0]! : SERVICE_ID_COLUMN;
          const { rows } = await client.query<Row>(CAPTURE_TARGET_SQL, [meta.schema, meta.name, key]);
          const target = rows[0];
          if (!target || target['attnum'] === null) throw new ConnectorError('not_found', `The key column "${key}" of table "${meta.name}" was not found`);
          const level = captureLevel(String(target['relkind']), target['child'] === 't');
          for (const statement of installTriggerSql(meta.schema, meta.name, Number(target['attnum']), level)) await client.query(statement);
          // After CREATE TRIGGER: its lock has waited for the table's open writes, and holds off new ones until this
          // commit, so a write made without logging for this reader commits before it starts reading.
          await client.query(REGISTER_READER_SQL, [meta.schema, meta.name, this.origin]);
        }
      });
      const after = await this.freshTable(tableRemoteId);
      return { serviceIdField: after.serviceIdColumn, changeCapture: options.changeCapture };
    }, `Could not prepare table "${tableRemoteId}" for sync`);
  }

  async unprepareTable(tableRemoteId: string): Promise<void> {
    await this.guard(async () => {
      this.tables.invalidate(tableRemoteId);
      const meta = await loadTable(this.db, this.schema(), tableRemoteId);
      if (!meta || meta.isView) return;
      await this.withWriteTransaction(async (client) => {
        await client.query(INFRASTRUCTURE_SQL[0]!); // serialise with setups
        const { rows } = await client.query<Row>(`SELECT to_regclass('${CHANGE_LOG}') IS NOT NULL AS present, to_regclass('${CAPTURE_READERS}') IS NOT NULL AS readers`);
        if (rows[0]?.['readers'] === 't') {
          // Another sync still reads the table's changes: only this connection's reader goes.
          const { rows: left } = await client.query<Row>(UNREGISTER_READER_SQL, [meta.schema, meta.name, this.origin]);
          if (Number(left[0]?.['remaining'] ?? 0) > 0) return;
          await client.query(FORGET_TABLE_READERS_SQL, [meta.schema, meta.name]);
        }
        for (const statement of dropTriggerSql(meta.schema, meta.name)) await client.query(statement);
        if (rows[0]?.['present'] === 't') {
          await client.query(`DELETE FROM ${CHANGE_LOG} WHERE table_schema = $1 AND table_name = $2`, [meta.schema, meta.name]);
        }
        // No sync reads the table any more: the service id column setup added goes (its unique constraint with
        // it), and the change log once no table of the database is read.
        const { rows: column } = await client.query<Row>(COLUMN_COMMENT_SQL, [meta.schema, meta.name, SERVICE_ID_COLUMN]);
        if (column[0]?.['comment'] === SERVICE_ID_COMMENT) await client.query(`ALTER TABLE ${qualified(meta.schema, meta.name)} DROP COLUMN ${ident(SERVICE_ID_COLUMN)}`);
        await client.query(DROP_UNUSED_CAPTURE_SQL);
      });
      this.tables.invalidate(tableRemoteId);
    }, `Could not remove sync setup from table "${tableRemoteId}"`);
  }

  private exportTarget: PostgresLiveExport | null = null;

  /** Live export destination operations (live-export.ts). */
  get liveExport(): PostgresLiveExport {
    this.exportTarget ??= new PostgresLiveExport({
      pool: this.pool,
      schema: () => this.schema(),
      translate: (error, context) => this.translate(error, context),
      invalidate: (table) => this.tables.invalidate(table),
    });
    return this.exportTarget;
  }

  async close(): Promise<void> {
    this.tables.clear();
    for (const client of [...this.watchers]) await client.end().catch(() => undefined);
    this.watchers.clear();
    await this.pool.end();
  }
}
