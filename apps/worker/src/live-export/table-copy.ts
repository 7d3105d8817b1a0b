/**
 * One table's copy in a live export run: what it works with, the destination's hashes, the source read in
 * pages, and the writes (source rows converted to the destination columns, in batches).
 */
import {
  type ExportRow,
  type ExportSourcePage,
  type LiveExportSource,
  type ExportSourceRow,
  type ExportTableInfo,
  isExportAborted,
  type LiveExportTarget,
} from '@lockstep/connectors-core';
import type { CanonicalValue, LiveExportPlanTable } from '@lockstep/domain';
import type { RunCounters } from '@lockstep/persistence';
import type { RunFailure } from './run-executor';

/** Source rows read per statement when the source is streamed. */
export const PAGE_SIZE = 5000;
/** Destination hashes read per statement when the connector has no single scan. */
const HASH_PAGE = 50_000;

/** How one destination column is filled: from which source field, through which conversion. */
export interface ColumnPlan {
  sourceField: string;
  column: string;
  convert: (value: CanonicalValue) => CanonicalValue;
}

/** What every step of one table's copy works with. */
export interface TableCopy {
  liveExportId: string;
  table: LiveExportPlanTable;
  /** Source fields the plan reads. */
  fields: string[];
  /** Row hash salt: the plan and the destination columns' types. */
  salt: string;
  writer: BatchWriter;
  counters: RunCounters;
  signal: AbortSignal;
}

export type SourcePages = (after: string | null) => Promise<ExportSourcePage<ExportSourceRow>>;

/**
 * Reads the destination's hashes into `into`: in one scan when the connector has one, else page by page.
 */
export async function readDestinationHashes(
  target: LiveExportTarget,
  table: LiveExportPlanTable,
  signal: AbortSignal,
  into: Map<string, string | null>,
): Promise<void> {
  if (target.scanExportHashes) {
    await target.scanExportHashes(table.destinationTable, (id, hash) => into.set(id, hash), { signal });
    return;
  }
  for (const [id, hash] of await destinationHashes(target, table, signal)) into.set(id, hash);
}

/** Every `(lockstep_source_id, lockstep_row_hash)` of the destination table. */
export async function destinationHashes(
  target: LiveExportTarget,
  table: LiveExportPlanTable,
  signal: AbortSignal,
): Promise<Map<string, string | null>> {
  const existing = new Map<string, string | null>();
  let after: string | null = null;
  do {
    const page = await target.readExportHashes(table.destinationTable, { after, limit: HASH_PAGE });
    for (const row of page.rows) existing.set(row.id, row.hash);
    after = page.next;
  } while (after !== null && !signal.aborted);
  return existing;
}

/** Streams the table's source rows with their hashes into the writer, as `decide` says per row. */
export async function streamRows(
  copy: TableCopy,
  layer: LiveExportSource,
  decide: (id: string, hash: string) => 'insert' | 'upsert' | null,
): Promise<void> {
  const { table, fields, salt, writer, counters, signal } = copy;
  const pages: SourcePages = (after) =>
    layer.readSourceRows(table.sourceTable, { fields, salt, after, limit: PAGE_SIZE });
  await streamPages(pages, writer, counters, signal, decide);
}

/** Reads the source in pages (the next page is read while the previous one is written). */
export async function streamPages(
  pages: SourcePages,
  writer: BatchWriter,
  counters: RunCounters,
  signal: AbortSignal,
  decide: (id: string, hash: string) => 'insert' | 'upsert' | null,
): Promise<void> {
  let cursor: string | null = null;
  do {
    if (signal.aborted) return;
    const page: ExportSourcePage<ExportSourceRow> = await pages(cursor);
    counters.rowsRead += page.rows.length;
    for (const row of page.rows) {
      const how = decide(row.id, row.hash);
      if (how !== null) await writer.add(how, row);
    }
    cursor = page.next;
  } while (cursor !== null);
}

/**
 * Converts source rows to the destination columns and writes them in batches of `LIVE_EXPORT_BATCH_ROWS`,
 * each one destination transaction, one batch in flight while the caller reads on.
 */
export class BatchWriter {
  private inserts: ExportRow[] = [];
  private upserts: ExportRow[] = [];
  private pending: Promise<void> | null = null;
  private readonly names: string[];
  private readonly batchRows: number;

  constructor(
    private readonly target: LiveExportTarget,
    private readonly table: LiveExportPlanTable,
    private readonly columns: ColumnPlan[],
    private readonly counters: RunCounters,
    private readonly signal: AbortSignal,
    private readonly structure: (info: ExportTableInfo | null) => RunFailure | null,
    batchRows: number,
  ) {
    this.names = columns.map((column) => column.column);
    this.batchRows = batchRows;
  }

  async add(how: 'insert' | 'upsert', row: ExportSourceRow): Promise<void> {
    const values: Record<string, CanonicalValue> = {};
    for (const column of this.columns)
      values[column.column] = column.convert(row.values[column.sourceField] ?? null);
    (how === 'insert' ? this.inserts : this.upserts).push({ id: row.id, hash: row.hash, values });
    if (this.inserts.length + this.upserts.length >= this.batchRows) await this.flush();
  }

  async deletes(ids: string[]): Promise<void> {
    await this.flush();
    const size = this.batchRows;
    for (let start = 0; start < ids.length && !this.signal.aborted; start += size) {
      await this.start({ inserts: [], upserts: [], deletes: ids.slice(start, start + size) });
    }
  }

  /** Writes what is queued and waits for every batch. */
  async done(): Promise<void> {
    await this.flush();
    if (this.pending) await this.pending;
    this.pending = null;
  }

  /** Starts writing what is queued (after the batch in flight). */
  async flush(): Promise<void> {
    if (this.inserts.length + this.upserts.length === 0) return;
    const batch = { inserts: this.inserts, upserts: this.upserts, deletes: [] };
    this.inserts = [];
    this.upserts = [];
    await this.start(batch);
  }

  /** Waits for the batch in flight, then starts this one. */
  private async start(batch: {
    inserts: ExportRow[];
    upserts: ExportRow[];
    deletes: string[];
  }): Promise<void> {
    if (this.pending) await this.pending;
    this.pending = null;
    if (this.signal.aborted) return;
    const started = this.write(batch);
    started.catch(() => undefined); // awaited at the next batch or at the end
    this.pending = started;
  }

  private async write(batch: {
    inserts: ExportRow[];
    upserts: ExportRow[];
    deletes: string[];
  }): Promise<void> {
    const name = this.table.destinationTable;
    try {
      const result = await this.target.writeExportBatch(
        name,
        { columns: this.names, ...batch },
        { signal: this.signal },
      );
      this.counters.rowsWritten += result.upserted;
      this.counters.rowsRemoved += result.deleted;
    } catch (error) {
      if (isExportAborted(error)) throw error;
      // The table may have been changed under the run: say so precisely when it was.
      const now = await this.target.inspectExportTable(name).catch(() => undefined);
      const structure = now === undefined ? null : this.structure(now);
      throw structure ?? error;
    }
  }
}
