/**
 * Table descriptions and schema changes. A description (catalog.ts `TableMeta`) is cached per connection
 * (`MetadataCache`, README "Metadata cache"); the checks made against it (`requireKey`, `castOf`, ...) raise
 * metadata errors, which, like the SQLSTATEs of `SCHEMA_CHANGE_CODES`, suggest that a cached description is
 * stale: `withTable` then runs the call once more with a fresh one.
 *
 * Record key: the single-column primary key, else the `lockstep_id` service id column that `prepareTable`
 * adds (setup.ts); a record's remote id is the key's text.
 */
import {
  ConnectorError,
  MetadataCache,
  type CacheHit,
  type FieldInfo,
  type FieldSpec,
  type TableInfo,
} from '@lockstep/connectors-core';
import { listTables, loadTable, type TableMeta } from './catalog';
import { queryable, withWriteTransaction, type PgContext } from './db';
import { ident, identifierTooLong, isUuid, qualified } from './sql';
import { nativeTypeFor, SERVICE_ID_COLUMN } from './types';

/** How long a cached table description is used before it is read again (a change made elsewhere shows up). */
export const DEFAULT_METADATA_TTL_MS = 60_000;

/**
 * SQLSTATEs that suggest the table changed under a cached description (undefined table, column or type,
 * datatype mismatch, ON CONFLICT without the unique index): the call is retried once with a fresh one.
 */
const SCHEMA_CHANGE_CODES = new Set(['42P01', '42703', '42704', '42804', '42P10']);

/** Errors raised by this connection's own checks against a table description (which may be stale). */
export const metadataErrors = new WeakSet<object>();

export function metadataError(
  kind: ConnectorError['kind'],
  message: string,
  appCode?: string,
): ConnectorError {
  const error = new ConnectorError(kind, message, { appCode });
  metadataErrors.add(error);
  return error;
}

/** Whether `error` (raw or translated) suggests the table is not what its description says. */
export function suggestsSchemaChange(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (metadataErrors.has(error)) return true;
  const { code, appCode } = error as { code?: unknown; appCode?: unknown };
  const sqlState = typeof appCode === 'string' ? appCode : code;
  return typeof sqlState === 'string' && SCHEMA_CHANGE_CODES.has(sqlState);
}

/** The table descriptions of one connection (its base is fixed), by table remote id. */
export class TableDescriptions {
  private readonly cache: MetadataCache<TableMeta>;

  constructor(
    private readonly context: PgContext,
    ttlMs = DEFAULT_METADATA_TTL_MS,
  ) {
    this.cache = new MetadataCache<TableMeta>(ttlMs);
  }

  private async loadMeta(remoteId: string): Promise<TableMeta> {
    const schema = this.context.schema();
    const meta = await loadTable(queryable(this.context.pool), schema, remoteId);
    if (!meta)
      throw new ConnectorError('not_found', `Table "${remoteId}" does not exist in schema "${schema}"`, {
        appCode: '42P01',
      });
    return meta;
  }

  /** The table's description, from the cache when it holds one. */
  table(remoteId: string): Promise<CacheHit<TableMeta>> {
    return this.cache.get(remoteId, () => this.loadMeta(remoteId));
  }

  /** The table's description read now from the catalog (and cached). */
  freshTable(remoteId: string): Promise<TableMeta> {
    return this.cache.refresh(remoteId, () => this.loadMeta(remoteId));
  }

  /**
   * Runs `action` with the table's description. With a cached description, `action` runs again once with a
   * fresh one when it failed in a way that suggests the table changed since (`suggestsSchemaChange`: a
   * column or table the database does not know, or a field, key or service id the description lacks).
   * `action` gets `cached` to stop at the first such failure rather than report it per row.
   */
  async withTable<T>(remoteId: string, action: (meta: TableMeta, cached: boolean) => Promise<T>): Promise<T> {
    const hit = await this.table(remoteId);
    if (!hit.cached) return action(hit.value, false);
    try {
      return await action(hit.value, true);
    } catch (error) {
      if (!suggestsSchemaChange(error)) throw error;
      return action(await this.freshTable(remoteId), false);
    }
  }

  invalidate(remoteId: string): void {
    this.cache.invalidate(remoteId);
  }

  clear(): void {
    this.cache.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// checks against a description

const INT_RANGES: Record<string, bigint> = { int2: 32767n, int4: 2147483647n, int8: 9223372036854775807n };

export function requireKey(meta: TableMeta): string {
  if (meta.keyColumn === null) {
    throw metadataError(
      'unsupported',
      `Table "${meta.name}" has no single-column primary key; ` +
        `prepare it for sync first (it gets a ${SERVICE_ID_COLUMN} column)`,
    );
  }
  return meta.keyColumn;
}

export function castOf(meta: TableMeta, column: string): string {
  const found = meta.columnByName.get(column);
  if (!found)
    throw metadataError('not_found', `Field "${column}" does not exist in table "${meta.name}"`, '42703');
  return found.castType;
}

export function target(meta: TableMeta): string {
  return qualified(meta.schema, meta.name);
}

export function keyColumnOf(meta: TableMeta) {
  return meta.keyColumn === null ? undefined : meta.columnByName.get(meta.keyColumn);
}

/** Whether a remote id can be a value of the key column at all (so a malformed id is simply absent). */
export function validKey(meta: TableMeta, remoteId: string): boolean {
  const column = keyColumnOf(meta);
  if (!column) return false;
  const limit = INT_RANGES[column.baseName];
  if (limit !== undefined)
    return /^-?\d{1,20}$/.test(remoteId) && BigInt(remoteId) <= limit && BigInt(remoteId) >= -limit - 1n;
  if (column.baseName === 'uuid') return isUuid(remoteId);
  return true;
}

/** A remote id as the key column reads it back (an integer key written as "007" reads "7"). */
export function sameKey(meta: TableMeta, remoteId: string): string {
  const column = keyColumnOf(meta);
  return column && INT_RANGES[column.baseName] !== undefined && /^-?\d+$/.test(remoteId)
    ? BigInt(remoteId).toString()
    : remoteId;
}

/** Why a value cannot be written to the field `fieldId` (it does not exist, or is read-only), or null. */
export function unwritableField(meta: TableMeta, fieldId: string): ConnectorError | null {
  const field = meta.fieldById.get(fieldId);
  if (!field)
    return metadataError(
      'invalid_data',
      `Field "${fieldId}" does not exist in table "${meta.name}"`,
      '42703',
    );
  if (!field.write)
    return new ConnectorError('invalid_data', `Field "${fieldId}" of table "${meta.name}" cannot be written`);
  return null;
}

// ---------------------------------------------------------------------------------------------------
// schema changes

export function checkName(name: string, what: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', `The ${what} name is empty`);
  if (name.includes('\u0000'))
    throw new ConnectorError(
      'invalid_data',
      `The ${what} name contains a NUL character, which PostgreSQL cannot hold`,
    );
  if (identifierTooLong(name))
    throw new ConnectorError(
      'invalid_data',
      `The ${what} name "${name.slice(0, 40)}…" is longer than PostgreSQL's 63 bytes`,
    );
}

export function columnDefinition(field: FieldSpec): string {
  checkName(field.name, 'field');
  if (field.name === SERVICE_ID_COLUMN)
    throw new ConnectorError('invalid_data', `"${SERVICE_ID_COLUMN}" is the service id column's name`);
  return `${ident(field.name)} ${nativeTypeFor(field)}`;
}

/** Checks the names and types before anything is sent (the caller guards the rest). */
export function tableDefinitions(name: string, fields: FieldSpec[]): string[] {
  checkName(name, 'table');
  const definitions = fields.map((field) => columnDefinition(field));
  const names = fields.map((field) => field.name);
  if (new Set(names).size !== names.length)
    throw new ConnectorError('invalid_data', 'Two fields have the same name');
  return definitions;
}

const CREATE_TABLE_SQL = (table: string, definitions: string[]) => `
CREATE TABLE IF NOT EXISTS ${table} (
  ${[`${ident(SERVICE_ID_COLUMN)} uuid PRIMARY KEY DEFAULT gen_random_uuid()`, ...definitions].join(',\n  ')}
)`;

/** Creates the table keyed by a service id column; a retry adopts the table a previous attempt made. */
export async function createTable(
  context: PgContext,
  tables: TableDescriptions,
  name: string,
  definitions: string[],
): Promise<TableInfo> {
  const schema = context.schema();
  const table = qualified(schema, name);
  tables.invalidate(name);
  await withWriteTransaction(context.pool, async (client) => {
    await client.query(CREATE_TABLE_SQL(table, definitions));
    // A retried create adopts the table a previous attempt made, adding what it lacks.
    for (const definition of definitions)
      await client.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${definition}`);
  });
  tables.invalidate(name);
  const listed = await listTables(queryable(context.pool), schema);
  const created = listed.find((candidate) => candidate.remoteId === name);
  if (!created) throw new ConnectorError('transient', `Table "${name}" was created but is not listed`);
  return created;
}

/** Adds the column (`definition`, from `columnDefinition`); a column that exists already is adopted. */
export async function createField(
  context: PgContext,
  tables: TableDescriptions,
  tableRemoteId: string,
  field: FieldSpec,
  definition: string,
): Promise<FieldInfo> {
  const meta = (await tables.table(tableRemoteId)).value;
  try {
    await context.pool.query(`ALTER TABLE ${target(meta)} ADD COLUMN IF NOT EXISTS ${definition}`);
  } finally {
    tables.invalidate(tableRemoteId);
  }
  const created = (await tables.freshTable(tableRemoteId)).fieldById.get(field.name);
  if (!created) throw new ConnectorError('transient', `Field "${field.name}" was created but is not listed`);
  return created;
}
