/**
 * Live export destination (`LiveExportTarget`, libs/connectors/core/src/live-export.ts) in an Airtable base:
 * the connection's base is the location. A table an export creates has `lockstep_source_id` (single line
 * text, the primary field), `lockstep_row_hash` (single line text) and the mapped fields, typed as
 * `createTable` types them (`native-types.ts`).
 *
 * Airtable has neither transactions nor unique fields, so two things differ from a database destination:
 * - A batch is written 10 records a request (upserts merged on `lockstep_source_id` with `performUpsert`, so a
 *   request sent twice writes each record once), then its deletes: a batch that fails halfway leaves the
 *   requests already answered written. The next run compares hashes again and finishes the work.
 * - `lockstep_source_id` cannot be declared unique: `idColumn` is `ok` when it is a text field; the export
 *   itself never writes two records with one id (upserts merge on it).
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
import type { AirtableApi } from './db';
import { checkName, nativeField } from './native-types';
import { readWhere } from './records';
import type { SchemaCache } from './schema';
import * as requests from './sql';
import { type AirtableTable, formulaString, MAX_BATCH } from './sql';
import { classOf, SERVICE_ID_FIELD_NAME, typeDetailsOf } from './types';
import { encodeValue } from './values';

const HIDDEN = new Set([EXPORT_ID_COLUMN, EXPORT_HASH_COLUMN]);
const TEXT_TYPES = new Set(['singleLineText', 'multilineText']);
const HIDDEN_FIELDS = [...HIDDEN].map((name) => ({ name, type: 'singleLineText' }));
/** Source ids per `filterByFormula` lookup (the formula travels in the URL). */
const IDS_PER_LOOKUP = 50;

export class AirtableExportTarget implements LiveExportTarget {
  constructor(
    private readonly api: AirtableApi,
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
    const tables = await schema.all();
    const existing = await schema.find(spec.name);
    if (!existing) {
      const bodies = [...HIDDEN_FIELDS, ...spec.columns.map((column) => nativeField(column, tables))];
      await requests.createTable(this.api, schema.baseId, spec.name, bodies);
      schema.invalidate();
      return { table: (await this.inspectExportTable(spec.name))!, created: true, addedColumns: [] };
    }
    const have = new Set(existing.fields.map((field) => field.name));
    const missing = [
      ...HIDDEN_FIELDS.filter((field) => !have.has(field.name)),
      ...spec.columns.filter((column) => !have.has(column.name)).map((column) => nativeField(column, tables)),
    ];
    for (const field of missing) await requests.createField(this.api, schema.baseId, existing.id, field);
    if (missing.length > 0) schema.invalidate();
    const addedColumns = missing.map((field) => field.name).filter((name) => !HIDDEN.has(name));
    return { table: (await this.inspectExportTable(spec.name))!, created: false, addedColumns };
  }

  async inspectExportTable(name: string): Promise<ExportTableInfo | null> {
    const table = await (await this.schema()).find(name);
    if (!table || table.name !== name) return null;
    const kind = (column: string) => {
      const field = table.fields.find((candidate) => candidate.name === column);
      if (!field) return 'missing' as const;
      return TEXT_TYPES.has(field.type) ? ('ok' as const) : ('wrong_type' as const);
    };
    return {
      name,
      columns: table.fields
        .filter((field) => !HIDDEN.has(field.name) && field.name !== SERVICE_ID_FIELD_NAME)
        .map((field) => ({
          name: field.name,
          type: field.type,
          typeClass: classOf(field),
          typeDetails: typeDetailsOf(field),
        })),
      idColumn: kind(EXPORT_ID_COLUMN),
      hashColumn: kind(EXPORT_HASH_COLUMN),
      writable: true,
    };
  }

  /** Pages of at most 100 in Airtable's order; `after` is Airtable's `offset` token. */
  async readExportHashes(
    name: string,
    options: { after?: string | null; limit: number },
  ): Promise<ExportHashPage> {
    const table = await this.table(name);
    const [id, hash] = [this.field(table, EXPORT_ID_COLUMN), this.field(table, EXPORT_HASH_COLUMN)];
    const page = await requests.listRecords(this.api, (await this.schema()).baseId, table.id, {
      offset: options.after ?? null,
      pageSize: Math.max(1, options.limit),
      fields: [id, hash],
    });
    const rows = page.records
      .map((record) => ({ id: record.fields[id], hash: record.fields[hash] }))
      .filter(
        (row): row is { id: string; hash: string | undefined } => typeof row.id === 'string' && row.id !== '',
      )
      .map((row) => ({ id: row.id, hash: typeof row.hash === 'string' ? row.hash : null }));
    return { rows, next: page.offset ?? null };
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
      const page: ExportHashPage = await this.readExportHashes(name, { after, limit: 100 });
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
    const baseId = (await this.schema()).baseId;
    const idField = this.field(table, EXPORT_ID_COLUMN);
    const hashField = this.field(table, EXPORT_HASH_COLUMN);
    const fields = batch.columns.map((column) => table.fields.find((field) => field.name === column));
    const rows = [...batch.upserts, ...(batch.inserts ?? [])];
    for (let start = 0; start < rows.length; start += MAX_BATCH) {
      if (options.signal?.aborted) throw new ExportAbortedError();
      const items = rows.slice(start, start + MAX_BATCH).map((row) => {
        const values: Record<string, unknown> = { [idField]: row.id, [hashField]: row.hash };
        batch.columns.forEach((column, index) => {
          const field = fields[index];
          if (!field) throw new ConnectorError('not_found', `Field "${column}" does not exist in "${name}"`);
          values[field.id] = encodeValue(field, row.values[column] ?? null);
        });
        return { fields: values };
      });
      await requests.patchRecords(this.api, baseId, table.id, items, [idField]);
    }
    const deleted = await this.deleteBySourceIds(baseId, table, batch.deletes, options);
    return { upserted: rows.length, deleted };
  }

  /** Only records whose `lockstep_source_id` is one of `ids`: records without one are never touched. */
  private async deleteBySourceIds(
    baseId: string,
    table: AirtableTable,
    ids: string[],
    options: ExportWriteOptions,
  ): Promise<number> {
    let deleted = 0;
    for (let start = 0; start < ids.length; start += IDS_PER_LOOKUP) {
      if (options.signal?.aborted) throw new ExportAbortedError();
      const terms = ids
        .slice(start, start + IDS_PER_LOOKUP)
        .map((id) => `{${EXPORT_ID_COLUMN}} = ${formulaString(id)}`);
      const found = await readWhere(this.api, baseId, table, `OR(${terms.join(', ')})`);
      for (let at = 0; at < found.length; at += MAX_BATCH) {
        const chunk = found.slice(at, at + MAX_BATCH).map((record) => record.id);
        await requests.deleteRecords(this.api, baseId, table.id, chunk);
        deleted += chunk.length;
      }
    }
    return deleted;
  }

  private async table(name: string): Promise<AirtableTable> {
    const table = await (await this.schema()).find(name);
    if (!table) throw new ConnectorError('not_found', `Table "${name}" does not exist in the base`);
    return table;
  }

  private field(table: AirtableTable, name: string): string {
    const field = table.fields.find((candidate) => candidate.name === name);
    if (!field) throw new ConnectorError('not_found', `Table "${table.name}" has no ${name} field`);
    return field.id;
  }
}
