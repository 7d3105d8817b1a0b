/**
 * Live export destination (`LiveExportTarget`, see libs/connectors/core/src/live-export.ts). The location is
 * the connection's schema. Tables an export creates hold `lockstep_source_id text UNIQUE`,
 * `lockstep_row_hash text` and the mapped columns, typed like `createTable` types them (`nativeTypeFor`).
 *
 * A batch is one transaction: rows believed new are copied straight into the table (`COPY FROM STDIN`,
 * the connector's fastest write) behind a savepoint; if one of them exists after all (a unique violation),
 * the savepoint is rolled back and they go the upsert way with the others: `COPY` into a temporary table,
 * then `INSERT ... SELECT ... ON CONFLICT (lockstep_source_id) DO UPDATE`. Deletes name
 * `lockstep_source_id` values, so rows with a NULL id (someone else's) are never touched. An abort cancels
 * the running statement (`pg_cancel_backend`) and rolls the transaction back.
 */
import {
  ConnectorError,
  EXPORT_HASH_COLUMN,
  EXPORT_ID_COLUMN,
  ExportAbortedError,
  type ExportBatch,
  type ExportColumnInfo,
  type ExportHashPage,
  type ExportRow,
  type ExportTableInfo,
  type ExportTableSpec,
  type ExportWriteOptions,
  type ProvisionResult,
} from '@lockstep/connectors-core';
import { copyBuffer } from '@lockstep/pg-copy';
import type { PoolClient } from 'pg';
import { loadTable, type Queryable, type TableMeta } from './catalog';
import { copyField, copyOutLines, pairLine } from './copy';
import { exportGuard, withWriteTransaction, type PostgresExportContext } from './db';
import { ident, identifierTooLong, qualified } from './sql';
import { encodeValue, nativeTypeFor, type ColumnKind } from './types';

const TEXT_TYPES = new Set(['text', 'varchar', 'bpchar']);
const STAGE = 'lockstep_export_stage';
/** SQLSTATEs that mean the cached description of a table no longer matches it: it is read again. */
const STALE_DESCRIPTION_CODES = ['42P01', '42703', '42804', '42P10'];

const UNIQUE_SQL = `
SELECT EXISTS (
  SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE i.indrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND i.indisunique AND i.indnkeyatts = 1
    AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = $3
) AS unique`;

const TABLE_COLUMNS_SQL = `
SELECT attname AS name
  FROM pg_attribute
 WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`;

const CREATE_EXPORT_TABLE_SQL = (target: string, definitions: string[]) => {
  const columns = [
    `${ident(EXPORT_ID_COLUMN)} text UNIQUE`,
    `${ident(EXPORT_HASH_COLUMN)} text`,
    ...definitions,
  ];
  return `
CREATE TABLE IF NOT EXISTS ${target} (
  ${columns.join(',\n  ')}
)`;
};

const EXPORT_HASHES_SQL = (target: string, where: string) => {
  const id = ident(EXPORT_ID_COLUMN);
  return `
SELECT ${id}, ${ident(EXPORT_HASH_COLUMN)}
  FROM ${target}
 WHERE ${where}
 ORDER BY ${id}
 LIMIT $1`;
};

const SCAN_EXPORT_HASHES_SQL = (target: string) => {
  const id = ident(EXPORT_ID_COLUMN);
  return `
COPY (SELECT ${id}, ${ident(EXPORT_HASH_COLUMN)} FROM ${target} WHERE ${id} IS NOT NULL) TO STDOUT`;
};

const STAGE_SQL = (target: string, names: string) => `
CREATE TEMPORARY TABLE ${STAGE} ON COMMIT DROP AS SELECT ${names} FROM ${target} WITH NO DATA`;

const UPSERT_FROM_STAGE_SQL = (target: string, names: string, columns: string[]) => {
  const assignments = [EXPORT_HASH_COLUMN, ...columns].map(
    (column) => `${ident(column)} = EXCLUDED.${ident(column)}`,
  );
  return `
INSERT INTO ${target} (${names})
SELECT ${names} FROM ${STAGE}
ON CONFLICT (${ident(EXPORT_ID_COLUMN)}) DO UPDATE SET ${assignments.join(', ')}`;
};

const DELETE_EXPORTED_SQL = (target: string) => `
DELETE FROM ${target} WHERE ${ident(EXPORT_ID_COLUMN)} = ANY ($1::text[])`;

function checkColumnName(name: string): void {
  if (name.trim() === '') throw new ConnectorError('invalid_data', 'A column name is empty');
  if (identifierTooLong(name))
    throw new ConnectorError(
      'invalid_data',
      `The column name "${name}" is longer than PostgreSQL's 63 bytes`,
    );
  if (name === EXPORT_ID_COLUMN || name === EXPORT_HASH_COLUMN) {
    throw new ConnectorError('invalid_data', `"${name}" is a name Lockstep keeps for itself`);
  }
}

/** The rows as COPY text lines: `lockstep_source_id`, `lockstep_row_hash`, then `columns`. */
function copyData(kinds: ColumnKind[], columns: string[], rows: ExportRow[]): Buffer {
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

/** One batch's statements on its client; each refuses to start once the batch is aborted. */
interface BatchSteps {
  step(text: string, values?: unknown[]): Promise<void>;
  copy(text: string, data: Buffer): Promise<void>;
  /** The batch was aborted (the running statement is being canceled). */
  aborted(): boolean;
}

export class PostgresExportTarget {
  /** Descriptions of the tables this target writes, read at `inspectExportTable` (each run does it first). */
  private readonly metas = new Map<string, TableMeta>();

  constructor(private readonly context: PostgresExportContext) {}

  private get db(): Queryable {
    return this.context.pool as unknown as Queryable;
  }

  async provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult> {
    if (spec.name.trim() === '') throw new ConnectorError('invalid_data', 'The table name is empty');
    if (identifierTooLong(spec.name))
      throw new ConnectorError(
        'invalid_data',
        `The table name "${spec.name}" is longer than PostgreSQL's 63 bytes`,
      );
    const names = spec.columns.map((column) => column.name);
    if (new Set(names).size !== names.length)
      throw new ConnectorError('invalid_data', 'Two columns have the same name');
    const definitions = spec.columns.map((column) => {
      checkColumnName(column.name);
      return { name: column.name, sql: `${ident(column.name)} ${nativeTypeFor(column)}` };
    });
    return exportGuard(
      this.context,
      async () => {
        const schema = this.context.schema();
        const target = qualified(schema, spec.name);
        const before = await loadTable(this.db, schema, spec.name);
        const added: string[] = [];
        await withWriteTransaction(this.context.pool, async (client) => {
          // Serialises concurrent provisioning of the same table (two saves, or a save and a retry).
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
            `lockstep_export:${schema}.${spec.name}`,
          ]);
          await client.query(
            CREATE_EXPORT_TABLE_SQL(
              target,
              definitions.map(({ sql }) => sql),
            ),
          );
          const { rows } = await client.query<{ name: string }>(TABLE_COLUMNS_SQL, [target]);
          const existing = new Set(rows.map((row) => row.name));
          for (const definition of definitions) {
            if (existing.has(definition.name)) continue;
            await client.query(`ALTER TABLE ${target} ADD COLUMN ${definition.sql}`);
            added.push(definition.name);
          }
        });
        this.context.invalidate(spec.name);
        const table = await this.inspectExportTable(spec.name);
        if (!table)
          throw new ConnectorError('transient', `Table "${spec.name}" was created but cannot be found`);
        return { table, created: before === null, addedColumns: before === null ? [] : added };
      },
      `Could not provision table "${spec.name}"`,
    );
  }

  async inspectExportTable(name: string): Promise<ExportTableInfo | null> {
    return exportGuard(
      this.context,
      async () => {
        const schema = this.context.schema();
        const meta = await loadTable(this.db, schema, name);
        if (!meta) {
          this.metas.delete(name);
          return null;
        }
        this.metas.set(name, meta);
        const unique = (await this.db.query(UNIQUE_SQL, [schema, name, EXPORT_ID_COLUMN])).rows[0]?.[
          'unique'
        ];
        const id = meta.columnByName.get(EXPORT_ID_COLUMN);
        const hash = meta.columnByName.get(EXPORT_HASH_COLUMN);
        const columns: ExportColumnInfo[] = meta.fields
          .filter((field) => field.remoteId !== EXPORT_ID_COLUMN && field.remoteId !== EXPORT_HASH_COLUMN)
          .map((field) => ({
            name: field.remoteId,
            type: field.type,
            typeClass: field.typeClass,
            typeDetails: field.typeDetails,
          }));
        const idColumn = !id
          ? 'missing'
          : !TEXT_TYPES.has(id.baseName)
            ? 'wrong_type'
            : unique === true || unique === 't'
              ? 'ok'
              : 'not_unique';
        return {
          name,
          columns,
          idColumn,
          hashColumn: !hash ? 'missing' : TEXT_TYPES.has(hash.baseName) ? 'ok' : 'wrong_type',
          writable: !meta.readOnly && (meta.relkind === 'r' || meta.relkind === 'p'),
        };
      },
      `Could not inspect table "${name}"`,
    );
  }

  async readExportHashes(
    name: string,
    options: { after?: string | null; limit: number },
  ): Promise<ExportHashPage> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), 100_000);
    return exportGuard(
      this.context,
      async () => {
        const target = qualified(this.context.schema(), name);
        const id = ident(EXPORT_ID_COLUMN);
        const params: unknown[] = [limit + 1];
        let where = `${id} IS NOT NULL`;
        if (options.after !== undefined && options.after !== null) {
          params.push(options.after);
          where += ` AND ${id} > $2`;
        }
        const { rows } = await this.context.pool.query<[string, string | null]>({
          text: EXPORT_HASHES_SQL(target, where),
          values: params,
          rowMode: 'array',
        });
        const page = rows.slice(0, limit).map(([rowId, hash]) => ({ id: rowId, hash }));
        return { rows: page, next: rows.length > limit ? page[page.length - 1]!.id : null };
      },
      `Could not read table "${name}"`,
    );
  }

  async scanExportHashes(
    name: string,
    onRow: (id: string, hash: string | null) => void,
    options: ExportWriteOptions = {},
  ): Promise<number> {
    return exportGuard(
      this.context,
      async () => {
        const target = qualified(this.context.schema(), name);
        return copyOutLines(
          this.context.pool,
          SCAN_EXPORT_HASHES_SQL(target),
          (line) => pairLine(line, onRow),
          options.signal,
        );
      },
      `Could not read table "${name}"`,
    );
  }

  private async meta(name: string): Promise<TableMeta> {
    const known = this.metas.get(name);
    if (known) return known;
    const meta = await loadTable(this.db, this.context.schema(), name);
    if (!meta) throw new ConnectorError('not_found', `Table "${name}" does not exist`, { appCode: '42P01' });
    this.metas.set(name, meta);
    return meta;
  }

  /** The kinds of a batch's columns; a column the description lacks drops the description. */
  private async batchKinds(
    name: string,
    batch: ExportBatch,
  ): Promise<{ meta: TableMeta; kinds: ColumnKind[] }> {
    const meta = await this.meta(name);
    const kinds = batch.columns.map((column) => {
      const kind = meta.kinds.get(column);
      if (!kind) {
        this.metas.delete(name);
        throw new ConnectorError('not_found', `Column "${column}" does not exist in table "${name}"`, {
          appCode: '42703',
        });
      }
      return kind;
    });
    return { meta, kinds };
  }

  async writeExportBatch(
    name: string,
    batch: ExportBatch,
    options: ExportWriteOptions = {},
  ): Promise<{ upserted: number; deleted: number }> {
    const { signal } = options;
    if (signal?.aborted) throw new ExportAbortedError();
    const inserts = batch.inserts ?? [];
    if (batch.upserts.length === 0 && batch.deletes.length === 0 && inserts.length === 0)
      return { upserted: 0, deleted: 0 };
    return exportGuard(
      this.context,
      async () => {
        const { meta, kinds } = await this.batchKinds(name, batch);
        const client = await this.context.pool.connect();
        let broken: Error | undefined;
        let aborted = false;
        const onAbort = (): void => {
          aborted = true;
          // Cancels the statement running now (if any); the transaction is then rolled back below.
          const processId = (client as unknown as { processID: number }).processID;
          this.context.pool.query('SELECT pg_cancel_backend($1)', [processId]).catch(() => undefined);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const steps: BatchSteps = {
          step: async (text, values) => {
            if (aborted || signal?.aborted) throw new ExportAbortedError();
            await client.query(text, values);
          },
          copy: async (text, data) => {
            if (aborted || signal?.aborted) throw new ExportAbortedError();
            await copyBuffer(client, text, data);
          },
          aborted: () => aborted || signal?.aborted === true,
        };
        try {
          return await writeBatch(client, steps, meta, kinds, batch);
        } catch (error) {
          await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
          if (aborted || signal?.aborted) throw new ExportAbortedError();
          // A column or type the cached description no longer matches: read it again next time.
          const code = (error as { code?: unknown }).code;
          if (typeof code === 'string' && STALE_DESCRIPTION_CODES.includes(code)) this.metas.delete(name);
          throw error;
        } finally {
          signal?.removeEventListener('abort', onAbort);
          client.release(broken);
        }
      },
      `Could not write to table "${name}"`,
    );
  }
}

/** The batch's transaction on `client`: inserts by COPY (the upsert way if one exists), upserts, deletes. */
async function writeBatch(
  client: PoolClient,
  { step, copy, aborted }: BatchSteps,
  meta: TableMeta,
  kinds: ColumnKind[],
  batch: ExportBatch,
): Promise<{ upserted: number; deleted: number }> {
  const inserts = batch.inserts ?? [];
  const target = qualified(meta.schema, meta.name);
  const names = [EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN, ...batch.columns].map(ident).join(', ');
  await step('BEGIN');
  let upserts = batch.upserts;
  if (inserts.length > 0) {
    await step('SAVEPOINT lockstep_insert');
    try {
      await copy(`COPY ${target} (${names}) FROM STDIN`, copyData(kinds, batch.columns, inserts));
      await step('RELEASE SAVEPOINT lockstep_insert');
    } catch (error) {
      if ((error as { code?: string }).code !== '23505' || aborted()) throw error;
      // A row believed new exists after all: write these the upsert way.
      await step('ROLLBACK TO SAVEPOINT lockstep_insert');
      upserts = [...inserts, ...upserts];
    }
  }
  if (upserts.length > 0) {
    await step(STAGE_SQL(target, names));
    await copy(`COPY ${STAGE} (${names}) FROM STDIN`, copyData(kinds, batch.columns, upserts));
    await step(UPSERT_FROM_STAGE_SQL(target, names, batch.columns));
  }
  let deleted = 0;
  if (batch.deletes.length > 0) {
    if (aborted()) throw new ExportAbortedError();
    const result = await client.query(DELETE_EXPORTED_SQL(target), [batch.deletes]);
    deleted = result.rowCount ?? 0;
  }
  await step('COMMIT');
  return { upserted: batch.upserts.length + inserts.length, deleted };
}
