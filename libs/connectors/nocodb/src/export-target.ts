/**
 * Live export destination (`LiveExportTarget`, libs/connectors/core/src/live-export.ts) in a NocoDB base: the
 * connection's base is the location. A table an export creates has `lockstep_source_id` and
 * `lockstep_row_hash` (single line texts) and the mapped fields, typed as `createTable` types them
 * (`native-types.ts`).
 *
 * NocoDB has neither transactions across requests nor an upsert, so:
 * - A batch looks its source ids up (100 a request), updates the records it finds and creates the others, 100
 *   a request, then deletes. A batch that fails halfway keeps what its answered requests wrote; the next run
 *   compares hashes again and finishes the work.
 * - `lockstep_source_id` is not declared unique: `idColumn` is `ok` when it is a text field; the export itself
 *   never writes two records with one id (it updates the one it finds).
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
  isExportAborted,
  type LiveExportTarget,
  type ProvisionResult,
} from '@lockstep/connectors-core';
import type { NocodbApi } from './db';
import { checkName, nativeField } from './native-types';
import { rowsWhereIn } from './records';
import { keyColumn, type SchemaCache } from './schema';
import * as requests from './sql';
import { MAX_BATCH, type NocodbRow, type NocodbTable } from './sql';
import { classOf, isListed, isServiceIdColumn, typeDetailsOf } from './types';
import { encodeValue } from './values';

const HIDDEN = new Set([EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN]);
const TEXT_TYPES = new Set(['SingleLineText', 'LongText']);
const HIDDEN_COLUMNS = [...HIDDEN].map((title) => ({ title, uidt: 'SingleLineText' }));

export class NocodbExportTarget implements LiveExportTarget {
  constructor(
    private readonly api: NocodbApi,
    private readonly schema: () => Promise<SchemaCache>,
  ) {}

  async provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult> {
    checkName(spec.name, 'Table');
    for (const column of spec.columns) {
      checkName(column.name, 'Field');
      if (HIDDEN.has(column.name))
        throw new ConnectorError('invalid_data', `"${column.name}" is a name Lockstep keeps for itself`);
    }
    const schema = await this.schema();
    const existing = await schema.find(spec.name);
    if (!existing) {
      const bodies = [...HIDDEN_COLUMNS, ...spec.columns.map((column) => nativeField(column))];
      await requests.createTable(this.api, schema.baseId, spec.name, bodies);
      schema.invalidate();
      return { table: (await this.inspectExportTable(spec.name))!, created: true, addedColumns: [] };
    }
    const have = new Set(existing.columns.map((column) => column.title));
    const missing = [
      ...HIDDEN_COLUMNS.filter((column) => !have.has(column.title)),
      ...spec.columns.filter((column) => !have.has(column.name)).map((column) => nativeField(column)),
    ];
    for (const column of missing) await requests.createColumn(this.api, existing.id, column);
    if (missing.length > 0) schema.invalidate(existing.id);
    const addedColumns = missing.map((column) => column.title).filter((title) => !HIDDEN.has(title));
    return { table: (await this.inspectExportTable(spec.name))!, created: false, addedColumns };
  }

  async inspectExportTable(name: string): Promise<ExportTableInfo | null> {
    const table = await (await this.schema()).find(name);
    if (!table || table.title !== name) return null;
    const kind = (title: string) => {
      const column = table.columns.find((candidate) => candidate.title === title);
      if (!column) return 'missing' as const;
      return TEXT_TYPES.has(column.uidt) ? ('ok' as const) : ('wrong_type' as const);
    };
    return {
      name,
      columns: table.columns
        .filter((column) => isListed(column) && !column.system && !column.pk)
        .filter((column) => !HIDDEN.has(column.title) && !isServiceIdColumn(column))
        .map((column) => ({
          name: column.title,
          type: column.uidt,
          typeClass: classOf(column),
          typeDetails: typeDetailsOf(column),
        })),
      idColumn: kind(EXPORT_ID_COLUMN),
      hashColumn: kind(EXPORT_HASH_COLUMN),
      writable: true,
    };
  }

  /** Pages in key order; `after` is the last key of the previous page. */
  async readExportHashes(
    name: string,
    options: { after?: string | null; limit: number },
  ): Promise<ExportHashPage> {
    const table = await this.table(name);
    const key = keyColumn(table).title;
    const limit = Math.max(1, Math.min(options.limit, requests.MAX_PAGE_SIZE));
    const page = await requests.listRows(this.api, table.id, {
      limit,
      sort: key,
      where: options.after ? `(${key},gt,${options.after})` : undefined,
      fields: [key, EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN],
    });
    const rows = page.list
      .filter((row) => typeof row[EXPORT_ID_COLUMN] === 'string' && row[EXPORT_ID_COLUMN] !== '')
      .map((row) => ({
        id: String(row[EXPORT_ID_COLUMN]),
        hash: typeof row[EXPORT_HASH_COLUMN] === 'string' ? String(row[EXPORT_HASH_COLUMN]) : null,
      }));
    const last = page.list[page.list.length - 1];
    return { rows, next: page.list.length >= limit && last ? String(last[key]) : null };
  }

  async scanExportHashes(
    name: string,
    onRow: (id: string, hash: string | null) => void,
    options: ExportWriteOptions = {},
  ): Promise<number> {
    let count = 0;
    let after: string | null = null;
    do {
      if (options.signal?.aborted) throw new ExportAbortedError();
      const page: ExportHashPage = await this.readExportHashes(name, {
        after,
        limit: requests.MAX_PAGE_SIZE,
      });
      for (const row of page.rows) onRow(row.id, row.hash);
      count += page.rows.length;
      after = page.next;
    } while (after);
    return count;
  }

  async writeExportBatch(
    name: string,
    batch: ExportBatch,
    options: ExportWriteOptions = {},
  ): Promise<{ upserted: number; deleted: number }> {
    const table = await this.table(name);
    const key = keyColumn(table).title;
    const columns = batch.columns.map((title) => {
      const column = table.columns.find((candidate) => candidate.title === title);
      if (!column) throw new ConnectorError('not_found', `Field "${title}" does not exist in "${name}"`);
      return column;
    });
    const rows = [...batch.upserts, ...(batch.inserts ?? [])];
    for (let start = 0; start < rows.length; start += MAX_BATCH) {
      if (options.signal?.aborted) throw new ExportAbortedError();
      const chunk = rows.slice(start, start + MAX_BATCH);
      const found = await this.keysBySourceId(
        table,
        chunk.map((row) => row.id),
      );
      const updates: NocodbRow[] = [];
      const inserts: NocodbRow[] = [];
      for (const row of chunk) {
        const existing = found.get(row.id);
        const mode = existing === undefined ? 'create' : 'update';
        const record: NocodbRow = { [EXPORT_ID_COLUMN]: row.id, [EXPORT_HASH_COLUMN]: row.hash };
        for (const column of columns)
          record[column.title] = encodeValue(column, row.values[column.title] ?? null, mode);
        if (existing === undefined) inserts.push(record);
        else updates.push({ ...record, [key]: existing });
      }
      if (updates.length > 0) await requests.updateRows(this.api, table.id, updates);
      if (inserts.length > 0) await requests.insertRows(this.api, table.id, inserts);
    }
    const deleted = await this.deleteBySourceIds(table, batch.deletes, options);
    return { upserted: rows.length, deleted };
  }

  private async keysBySourceId(table: NocodbTable, ids: string[]): Promise<Map<string, unknown>> {
    const key = keyColumn(table).title;
    const context = { api: this.api, schema: await this.schema(), table };
    const found = await rowsWhereIn(context, EXPORT_ID_COLUMN, ids);
    return new Map(found.map((row) => [String(row[EXPORT_ID_COLUMN]), row[key]]));
  }

  /** Only records whose `lockstep_source_id` is one of `ids`: records without one are never touched. */
  private async deleteBySourceIds(
    table: NocodbTable,
    ids: string[],
    options: ExportWriteOptions,
  ): Promise<number> {
    const key = keyColumn(table).title;
    let deleted = 0;
    for (let start = 0; start < ids.length; start += MAX_BATCH) {
      if (options.signal?.aborted) throw new ExportAbortedError();
      const found = await this.keysBySourceId(table, ids.slice(start, start + MAX_BATCH));
      const keys = [...found.values()].map((value) => ({ [key]: value }));
      if (keys.length > 0) await requests.deleteRows(this.api, table.id, keys);
      deleted += keys.length;
    }
    return deleted;
  }

  private async table(name: string): Promise<NocodbTable> {
    const table = await (await this.schema()).find(name);
    if (!table) throw new ConnectorError('not_found', `Table "${name}" does not exist in the base`);
    return table;
  }
}

/** The target's calls with NocoDB's errors translated, as every connection call is; an abort stays one. */
export function guardedTarget(
  target: NocodbExportTarget,
  translate: <T>(what: string, action: () => Promise<T>) => Promise<T>,
): LiveExportTarget {
  const guard = async <T>(what: string, action: () => Promise<T>): Promise<T> => {
    let aborted: ExportAbortedError | null = null;
    try {
      return await translate(what, () =>
        action().catch((error: unknown) => {
          if (isExportAborted(error)) aborted = error;
          throw error;
        }),
      );
    } catch (error) {
      throw aborted ?? error;
    }
  };
  return {
    provisionExportTable: (spec) =>
      guard(`Setting up export table "${spec.name}"`, () => target.provisionExportTable(spec)),
    inspectExportTable: (name) =>
      guard(`Reading export table "${name}"`, () => target.inspectExportTable(name)),
    readExportHashes: (name, options) =>
      guard(`Reading export table "${name}"`, () => target.readExportHashes(name, options)),
    scanExportHashes: (name, onRow, options) =>
      guard(`Reading export table "${name}"`, () => target.scanExportHashes(name, onRow, options)),
    writeExportBatch: (name, batch, options) =>
      guard(`Writing export table "${name}"`, () => target.writeExportBatch(name, batch, options)),
  };
}
