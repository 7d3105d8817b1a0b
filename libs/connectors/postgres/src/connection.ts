/**
 * A PostgreSQL connection: one pool per (credentials, base). The base is a schema; table and field remote
 * ids are the table and column names inside it. Rows are addressed by their key column (the single-column
 * primary key, else the `lockstep_id` service id column that `prepareTable` adds); the remote id is the key's
 * text form.
 */
import {
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
import { Client, Pool, type ClientConfig, type PoolClient } from 'pg';
import { listTables, loadTable, schemaExists, type Queryable, type TableMeta } from './catalog';
import {
  addServiceIdSql,
  CHANGE_LOG,
  decodeCheckpoint,
  dropTriggerSql,
  encodeCheckpoint,
  INFRASTRUCTURE_SQL,
  installTriggerSql,
  NOTIFY_CHANNEL,
  ORIGIN_SETTING,
  originTag,
  READ_CHANGES_SQL,
  type Checkpoint,
} from './change-capture';
import { SESSION_SQL } from './config';
import { translatePgError } from './errors';
import { ident, identifierTooLong, isUuid, qualified } from './sql';
import { decodeValue, encodeValue, nativeTypeFor, SERVICE_ID_COLUMN, timestamptzToCanonical, type PgParam } from './types';

/** Parameters per statement stay well under PostgreSQL's limit of 65,535. */
const MAX_PARAMS = 30_000;
const MAX_PAGE = 10_000;
const EXCLUDED_SCHEMAS = ['information_schema', 'lockstep'];

type Row = Record<string, string | null>;

interface PreparedRow {
  index: number;
  values: Map<string, PgParam>;
  serviceId: string | null;
  remoteId?: string;
}

const INT_RANGES: Record<string, bigint> = { int2: 32767n, int4: 2147483647n, int8: 9223372036854775807n };

function failure(error: ConnectorError): WriteResult {
  return { ok: false, error: error.toInfo() };
}

export class PostgresConnection implements Connection {
  readonly type = 'postgres';
  private readonly pool: Pool;
  private readonly watchers = new Set<Client>();
  /** The `lockstep.origin` value this connection's write transactions set (see change-capture.ts). */
  private readonly origin: string;

  constructor(
    private readonly clientConfig: ClientConfig,
    private readonly base: string | null,
    private readonly secrets: string[],
    options: { poolSize?: number; writeOrigin?: string } = {},
  ) {
    this.origin = originTag(options.writeOrigin);
    this.pool = new Pool({
      ...clientConfig,
      max: options.poolSize ?? 5,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
      onConnect: async (client) => {
        await client.query(SESSION_SQL);
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

  private async table(remoteId: string, db: Queryable = this.db): Promise<TableMeta> {
    const meta = await loadTable(db, this.schema(), remoteId);
    if (!meta) throw new ConnectorError('not_found', `Table "${remoteId}" does not exist in schema "${this.schema()}"`, { appCode: '42P01' });
    return meta;
  }

  private requireKey(meta: TableMeta): string {
    if (meta.keyColumn === null) {
      throw new ConnectorError(
        'unsupported',
        `Table "${meta.name}" has no single-column primary key; prepare it for sync first (it gets a ${SERVICE_ID_COLUMN} column)`,
      );
    }
    return meta.keyColumn;
  }

  private castOf(meta: TableMeta, column: string): string {
    const found = meta.columns.find((candidate) => candidate.name === column);
    if (!found) throw new ConnectorError('not_found', `Field "${column}" does not exist in table "${meta.name}"`, { appCode: '42703' });
    return found.castType;
  }

  private target(meta: TableMeta): string {
    return qualified(meta.schema, meta.name);
  }

  /** The columns a read selects: the key, the service id and the requested readable fields. */
  private readColumns(meta: TableMeta, requested?: string[]): { columns: string[]; fields: FieldInfo[] } {
    const readable = meta.fields.filter((field) => field.read);
    let fields = readable;
    if (requested) {
      for (const id of requested) {
        if (!readable.some((field) => field.remoteId === id)) {
          throw new ConnectorError('not_found', `Field "${id}" does not exist or cannot be read in table "${meta.name}"`);
        }
      }
      fields = readable.filter((field) => requested.includes(field.remoteId));
    }
    const columns = [...new Set([this.requireKey(meta), ...(meta.serviceIdColumn ? [meta.serviceIdColumn] : []), ...fields.map((field) => field.remoteId)])];
    return { columns, fields };
  }

  private selectList(columns: string[], alias?: string): string {
    return columns.map((column) => (alias ? `${alias}.${ident(column)}` : ident(column))).join(', ');
  }

  private toRecord(meta: TableMeta, row: Row, fields: FieldInfo[]): SourceRecord {
    const values: SourceRecord['values'] = {};
    for (const field of fields) values[field.remoteId] = decodeValue(meta.kinds.get(field.remoteId)!, row[field.remoteId] ?? null);
    const record: SourceRecord = { remoteId: String(row[meta.keyColumn!]), values };
    if (meta.serviceIdColumn) record.serviceId = row[meta.serviceIdColumn] ?? null;
    return record;
  }

  /** Whether a remote id can be a value of the key column at all (so a malformed id is simply absent). */
  private validKey(meta: TableMeta, remoteId: string): boolean {
    const column = meta.columns.find((candidate) => candidate.name === meta.keyColumn);
    if (!column) return false;
    const limit = INT_RANGES[column.baseName];
    if (limit !== undefined) return /^-?\d{1,20}$/.test(remoteId) && BigInt(remoteId) <= limit && BigInt(remoteId) >= -limit - 1n;
    if (column.baseName === 'uuid') return isUuid(remoteId);
    return true;
  }

  private async withWriteTransaction<T>(action: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query('SELECT set_config($1, $2, true)', [ORIGIN_SETTING, this.origin]);
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
   * its own savepoint, so one bad row is reported and the others are written.
   */
  private async batchWithFallback<R extends { index: number }>(
    client: PoolClient,
    rows: R[],
    action: (rows: R[]) => Promise<Map<number, WriteResult>>,
    results: WriteResult[],
  ): Promise<void> {
    if (rows.length === 0) return;
    await client.query('SAVEPOINT lockstep_batch');
    try {
      const written = await action(rows);
      await client.query('RELEASE SAVEPOINT lockstep_batch');
      for (const [index, result] of written) results[index] = result;
      return;
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT lockstep_batch');
    }
    for (const row of rows) {
      await client.query('SAVEPOINT lockstep_row');
      try {
        const written = await action([row]);
        await client.query('RELEASE SAVEPOINT lockstep_row');
        for (const [index, result] of written) results[index] = result;
      } catch (error) {
        await client.query('ROLLBACK TO SAVEPOINT lockstep_row');
        results[row.index] = failure(this.translate(error));
      }
    }
  }

  /** Validates and encodes one row's values; returns an error instead of throwing. */
  private encodeRow(meta: TableMeta, values: RecordCreate['values']): Map<string, PgParam> | ConnectorError {
    const encoded = new Map<string, PgParam>();
    for (const [fieldId, value] of Object.entries(values)) {
      const field = meta.fields.find((candidate) => candidate.remoteId === fieldId);
      if (!field) return new ConnectorError('invalid_data', `Field "${fieldId}" does not exist in table "${meta.name}"`, { appCode: '42703' });
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

  async listFields(tableRemoteId: string): Promise<FieldInfo[]> {
    return this.guard(async () => (await this.table(tableRemoteId)).fields);
  }

  // ---------------------------------------------------------------------------------------------------
  // reads

  async readPage(tableRemoteId: string, options: ReadPageOptions): Promise<RecordPage> {
    return this.guard(async () => {
      const meta = await this.table(tableRemoteId);
      const key = this.requireKey(meta);
      const { columns, fields } = this.readColumns(meta, options.fields);
      const pageSize = Math.min(Math.max(1, Math.floor(options.pageSize)), MAX_PAGE);
      const params: unknown[] = [];
      let where = `${ident(key)} IS NOT NULL`;
      if (options.after !== undefined && options.after !== null) {
        params.push(options.after);
        where += ` AND ${ident(key)} > $1::${this.castOf(meta, key)}`;
      }
      const { rows } = await this.pool.query<Row>(
        `SELECT ${this.selectList(columns)} FROM ${this.target(meta)} WHERE ${where} ORDER BY ${ident(key)} LIMIT ${pageSize + 1}`,
        params,
      );
      const page = rows.slice(0, pageSize);
      const next = rows.length > pageSize ? String(page[page.length - 1]![key]) : null;
      return { records: page.map((row) => this.toRecord(meta, row, fields)), next };
    });
  }

  private async selectByKeys(db: Queryable, meta: TableMeta, remoteIds: string[]): Promise<SourceRecord[]> {
    const key = this.requireKey(meta);
    const ids = [...new Set(remoteIds.filter((id) => this.validKey(meta, id)))];
    if (ids.length === 0) return [];
    const { columns, fields } = this.readColumns(meta);
    const { rows } = await db.query(
      `SELECT ${this.selectList(columns)} FROM ${this.target(meta)} WHERE ${ident(key)} = ANY ($1::${this.castOf(meta, key)}[])`,
      [ids],
    );
    return (rows as Row[]).map((row) => this.toRecord(meta, row, fields));
  }

  async readByIds(tableRemoteId: string, remoteIds: string[]): Promise<SourceRecord[]> {
    return this.guard(async () => this.selectByKeys(this.db, await this.table(tableRemoteId), remoteIds));
  }

  private async selectByServiceIds(db: Queryable, meta: TableMeta, serviceIds: string[]): Promise<SourceRecord[]> {
    const column = meta.serviceIdColumn;
    const ids = [...new Set(serviceIds.filter(isUuid).map((id) => id.toLowerCase()))];
    if (!column || ids.length === 0) return [];
    const { columns, fields } = this.readColumns(meta);
    const { rows } = await db.query(`SELECT ${this.selectList(columns)} FROM ${this.target(meta)} WHERE ${ident(column)} = ANY ($1::uuid[])`, [ids]);
    return (rows as Row[]).map((row) => this.toRecord(meta, row, fields));
  }

  async readByServiceIds(tableRemoteId: string, serviceIds: string[]): Promise<SourceRecord[]> {
    return this.guard(async () => this.selectByServiceIds(this.db, await this.table(tableRemoteId), serviceIds));
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
      const meta = await this.table(tableRemoteId);
      for (const record of await this.selectByKeys(this.db, meta, upserts)) records.set(record.remoteId, record);
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

  private async insertRows(client: PoolClient, meta: TableMeta, rows: PreparedRow[]): Promise<Map<number, WriteResult>> {
    const { columns: selected, fields } = this.readColumns(meta);
    const serviceColumn = meta.serviceIdColumn;
    const written = new Map<number, WriteResult>();
    const columns = [...new Set(rows.flatMap((row) => [...row.values.keys()]))];
    if (serviceColumn) columns.push(serviceColumn);
    if (columns.length === 0) {
      // Nothing to write but defaults (a table with a generated key and no values given): one row at a time.
      for (const row of rows) {
        const { rows: returned } = await client.query<Row>(`INSERT INTO ${this.target(meta)} DEFAULT VALUES RETURNING ${this.selectList(selected)}`);
        const record = this.toRecord(meta, returned[0]!, fields);
        written.set(row.index, { ok: true, remoteId: record.remoteId, record });
      }
      return written;
    }
    for (const chunk of this.chunks(rows, columns.length)) {
      const params: unknown[] = [];
      const tuples = chunk.map((row) => {
        const cells = columns.map((column) => {
          if (column === serviceColumn && !row.values.has(column)) {
            params.push(row.serviceId);
            return `$${params.length}::uuid`;
          }
          if (!row.values.has(column)) return 'DEFAULT';
          params.push(row.values.get(column));
          return `$${params.length}::${this.castOf(meta, column)}`;
        });
        return `(${cells.join(', ')})`;
      });
      const conflict = serviceColumn ? ` ON CONFLICT (${ident(serviceColumn)}) DO NOTHING` : '';
      const sql = `INSERT INTO ${this.target(meta)} (${this.selectList(columns)}) VALUES ${tuples.join(', ')}${conflict} RETURNING ${this.selectList(selected)}`;
      const { rows: returned } = await client.query<Row>(sql, params);
      if (serviceColumn) {
        const byServiceId = new Map(returned.map((row) => [String(row[serviceColumn]), row]));
        const missing = chunk.filter((row) => !byServiceId.has(row.serviceId!));
        if (missing.length > 0) {
          // Rows a previous (crashed or repeated) create already wrote: adopt them.
          const adopted = await this.selectByServiceIds(client as unknown as Queryable, meta, missing.map((row) => row.serviceId!));
          const byAdopted = new Map(adopted.map((record) => [record.serviceId, record]));
          for (const row of missing) {
            const record = byAdopted.get(row.serviceId);
            if (record) written.set(row.index, { ok: true, remoteId: record.remoteId, record });
          }
        }
        for (const row of chunk) {
          const found = byServiceId.get(row.serviceId!);
          if (found) {
            const record = this.toRecord(meta, found, fields);
            written.set(row.index, { ok: true, remoteId: record.remoteId, record });
          } else if (!written.has(row.index)) {
            throw new ConnectorError('transient', 'A created row could not be read back');
          }
        }
      } else {
        if (returned.length !== chunk.length) throw new ConnectorError('transient', 'INSERT returned an unexpected number of rows');
        chunk.forEach((row, position) => {
          const record = this.toRecord(meta, returned[position]!, fields);
          written.set(row.index, { ok: true, remoteId: record.remoteId, record });
        });
      }
    }
    return written;
  }

  async createRecords(tableRemoteId: string, rows: RecordCreate[]): Promise<WriteResult[]> {
    if (rows.length === 0) return [];
    return this.guard(async () => {
      const meta = await this.table(tableRemoteId);
      this.requireKey(meta);
      if (meta.readOnly) throw new ConnectorError('permission', `Table "${meta.name}" cannot be written`);
      const results: WriteResult[] = new Array(rows.length);
      const prepared: PreparedRow[] = [];
      rows.forEach((row, index) => {
        const values = this.encodeRow(meta, row.values);
        if (values instanceof ConnectorError) {
          results[index] = failure(values);
        } else if (meta.serviceIdColumn && !isUuid(row.serviceId)) {
          results[index] = failure(new ConnectorError('invalid_data', `The service id "${row.serviceId}" is not a UUID`));
        } else {
          prepared.push({ index, values, serviceId: meta.serviceIdColumn ? row.serviceId.toLowerCase() : null });
        }
      });
      await this.withWriteTransaction((client) => this.batchWithFallback(client, prepared, (batch) => this.insertRows(client, meta, batch), results));
      return results;
    });
  }

  private async updateGroup(client: PoolClient, meta: TableMeta, rows: PreparedRow[]): Promise<Map<number, WriteResult>> {
    const key = this.requireKey(meta);
    const { columns: selected, fields } = this.readColumns(meta);
    const written = new Map<number, WriteResult>();
    const columns = [...rows[0]!.values.keys()];
    if (columns.length === 0) {
      const found = new Map((await this.selectByKeys(client as unknown as Queryable, meta, rows.map((row) => row.remoteId!))).map((record) => [record.remoteId, record]));
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
      const { rows: returned } = await client.query<Row>(
        `UPDATE ${this.target(meta)} AS lockstep_target SET ${assignments}
         FROM (VALUES ${tuples.join(', ')}) AS lockstep_values (${aliases})
         WHERE lockstep_target.${ident(key)} = lockstep_values.lockstep_key
         RETURNING lockstep_values.lockstep_ord::text AS lockstep_ord, ${this.selectList(selected, 'lockstep_target')}`,
        params,
      );
      const byIndex = new Map(returned.map((row) => [Number(row['lockstep_ord']), row]));
      for (const row of chunk) {
        const found = byIndex.get(row.index);
        if (found) {
          const record = this.toRecord(meta, found, fields);
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
    return this.guard(async () => {
      const meta = await this.table(tableRemoteId);
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
        for (const group of groups) await this.batchWithFallback(client, group.rows, (batch) => this.updateGroup(client, meta, batch), results);
      });
      return results;
    });
  }

  async deleteRecords(tableRemoteId: string, remoteIds: string[]): Promise<WriteResult[]> {
    if (remoteIds.length === 0) return [];
    return this.guard(async () => {
      const meta = await this.table(tableRemoteId);
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
        ),
      );
      return results;
    });
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
      await this.withWriteTransaction(async (client) => {
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${target} (${[`${ident(SERVICE_ID_COLUMN)} uuid PRIMARY KEY DEFAULT gen_random_uuid()`, ...definitions].join(', ')})`,
        );
        // A retried create adopts the table a previous attempt made, adding what it lacks.
        for (const definition of definitions) await client.query(`ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${definition}`);
      });
      const tables = await listTables(this.db, this.schema());
      const table = tables.find((candidate) => candidate.remoteId === name);
      if (!table) throw new ConnectorError('transient', `Table "${name}" was created but is not listed`);
      return table;
    }, `Could not create table "${name}"`);
  }

  async createField(tableRemoteId: string, field: FieldSpec): Promise<FieldInfo> {
    const definition = this.columnDefinition(field);
    return this.guard(async () => {
      const meta = await this.table(tableRemoteId);
      await this.pool.query(`ALTER TABLE ${this.target(meta)} ADD COLUMN IF NOT EXISTS ${definition}`);
      const created = (await this.table(tableRemoteId)).fields.find((candidate) => candidate.remoteId === field.name);
      if (!created) throw new ConnectorError('transient', `Field "${field.name}" was created but is not listed`);
      return created;
    }, `Could not create field "${field.name}"`);
  }

  async prepareTable(tableRemoteId: string, options: PrepareOptions): Promise<PreparedTable> {
    return this.guard(async () => {
      const meta = await this.table(tableRemoteId);
      if (meta.isView) return { serviceIdField: null, changeCapture: false };
      await this.withWriteTransaction(async (client) => {
        await client.query(INFRASTRUCTURE_SQL[0]!); // serialise concurrent setups
        const needsServiceId = meta.primaryKey.length !== 1 && meta.serviceIdColumn === null;
        if (needsServiceId) {
          const hasColumn = meta.columns.some((column) => column.name === SERVICE_ID_COLUMN);
          for (const statement of addServiceIdSql(meta.schema, meta.name, SERVICE_ID_COLUMN, hasColumn)) await client.query(statement);
        }
        if (options.changeCapture) {
          for (const statement of INFRASTRUCTURE_SQL.slice(1)) await client.query(statement);
          const key = meta.primaryKey.length === 1 ? meta.primaryKey[0]! : SERVICE_ID_COLUMN;
          for (const statement of installTriggerSql(meta.schema, meta.name, key)) await client.query(statement);
        }
      });
      const after = await this.table(tableRemoteId);
      return { serviceIdField: after.serviceIdColumn, changeCapture: options.changeCapture };
    }, `Could not prepare table "${tableRemoteId}" for sync`);
  }

  async unprepareTable(tableRemoteId: string): Promise<void> {
    await this.guard(async () => {
      const meta = await loadTable(this.db, this.schema(), tableRemoteId);
      if (!meta || meta.isView) return;
      await this.withWriteTransaction(async (client) => {
        await client.query(dropTriggerSql(meta.schema, meta.name));
        const { rows } = await client.query<Row>(`SELECT to_regclass('${CHANGE_LOG}') IS NOT NULL AS present`);
        if (rows[0]?.['present'] === 't') {
          await client.query(`DELETE FROM ${CHANGE_LOG} WHERE table_schema = $1 AND table_name = $2`, [meta.schema, meta.name]);
        }
      });
    }, `Could not remove sync setup from table "${tableRemoteId}"`);
  }

  async close(): Promise<void> {
    for (const client of [...this.watchers]) await client.end().catch(() => undefined);
    this.watchers.clear();
    await this.pool.end();
  }
}
