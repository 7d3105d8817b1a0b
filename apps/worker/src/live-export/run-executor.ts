/**
 * One live export run: makes each planned destination table a mirror of the mapped source columns.
 *
 * Per table: check the destination table can still be written (`live_export_invalid_structure` otherwise);
 * read the destination's `(lockstep_source_id, lockstep_row_hash)` pairs; stream the source in keyset pages,
 * convert each row to the destination columns' classes (the conversion table the engine and mapping
 * validation use), hash it, and queue it when it is new or its hash differs; write queued rows in batches of
 * `LIVE_EXPORT_BATCH_ROWS`, each one destination transaction, while the next source page is read; finally
 * delete the ids the source no longer has. Rows with a NULL `lockstep_source_id` are never read or written.
 *
 * Every 200 ms the run looks at its cancel flag; a cancel aborts the batch in flight (its transaction is rolled
 * back) and ends the run `canceled` within a second. Each row is therefore as before or as after the run.
 */
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '@lockstep/config';
import {
  type Connection,
  exportRowHasher,
  exportStructureProblems,
  isConnectorError,
  isExportAborted,
  type ExportColumnExpectation,
  type ExportRow,
  type ExportTableInfo,
  type LiveExportTarget,
} from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import { conversionFor, type CanonicalValue, type LiveExportPlan, type LiveExportPlanTable } from '@lockstep/domain';
import { type CredentialCipher, LiveExportEntity, liveExportOwner } from '@lockstep/persistence';
import { type RunCounters, type RunError, RunStore } from './run-store';

const PAGE_SIZE = 5000;
const HASH_PAGE = 50_000;
const CANCEL_POLL_MS = 200;
const HEARTBEAT_MS = 1000;

/** A failure that ends the run with this code and message. */
export class RunFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The run lost its ownership (recovered as an orphan by another worker, or deleted with its export). */
class RunLost extends Error {}

const CONNECTOR_CODES: Record<string, string> = {
  auth: 'connection_failed',
  transient: 'connection_failed',
  rate_limited: 'connection_failed',
  permission: 'permission_denied',
  not_found: 'not_found',
  invalid_data: 'invalid_data',
  unsupported: 'connector_not_supported',
};

interface ColumnPlan {
  sourceField: string;
  column: string;
  convert: (value: CanonicalValue) => CanonicalValue;
}

export class RunExecutor {
  private readonly logger = new Logger('LiveExportRun');
  private readonly runs: RunStore;

  constructor(
    private readonly db: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly config: AppConfig,
  ) {
    this.runs = new RunStore(db);
  }

  get store(): RunStore {
    return this.runs;
  }

  /** Carries out the run if it is still queued; returns its final state (null when there was nothing to do). */
  async execute(runId: string): Promise<string | null> {
    const claimed = await this.runs.claim(runId);
    if (!claimed) return null;
    const { token } = claimed;
    const counters: RunCounters = { rowsRead: 0, rowsWritten: 0, rowsRemoved: 0 };
    const controller = new AbortController();
    let canceled = false;
    let lost = false;
    let lastBeat = Date.now();
    let polling = false;
    const monitor = setInterval(() => {
      if (polling) return;
      polling = true;
      const beat = Date.now() - lastBeat >= HEARTBEAT_MS;
      const check = beat ? this.runs.heartbeat(runId, token, counters).then((found) => found && found.cancelRequested) : this.runs.cancelRequested(runId, token);
      if (beat) lastBeat = Date.now();
      check
        .then((cancel) => {
          if (cancel === null) lost = true;
          else if (cancel) canceled = true;
          if (lost || canceled) controller.abort();
        })
        .catch(() => undefined) // the store is briefly unreachable: try again next time
        .finally(() => (polling = false));
    }, CANCEL_POLL_MS);
    let outcome: { state: 'succeeded' | 'failed' | 'canceled'; error: RunError | null };
    try {
      await this.copy(claimed.liveExportId, counters, controller.signal);
      outcome = controller.signal.aborted ? { state: 'canceled', error: null } : { state: 'succeeded', error: null };
    } catch (error) {
      if (controller.signal.aborted && (isExportAborted(error) || error instanceof RunLost || canceled || lost)) {
        outcome = { state: 'canceled', error: null };
      } else {
        const described = this.describe(error);
        outcome = { state: 'failed', error: described };
        if (described.code === 'internal') this.logger.error({ runId, error: error instanceof Error ? error.stack : String(error) }, 'live export run failed');
      }
    } finally {
      clearInterval(monitor);
    }
    if (lost) {
      this.logger.warn({ runId }, 'live export run is no longer owned by this worker; leaving it');
      return null;
    }
    const finished = await this.runs.finish(runId, token, outcome.state, counters, outcome.error);
    this.logger.log({ runId, state: outcome.state, ...counters, error: outcome.error?.code }, 'live export run finished');
    return finished ? outcome.state : null;
  }

  private describe(error: unknown): RunError {
    if (error instanceof RunFailure) return { code: error.code, message: error.message };
    if (isConnectorError(error)) return { code: CONNECTOR_CODES[error.kind] ?? 'connection_failed', message: error.message };
    return { code: 'internal', message: 'The run failed unexpectedly; see the worker log' };
  }

  private async open(exportRow: LiveExportEntity, side: 'source' | 'destination', base: string | null, poolSize: number): Promise<Connection> {
    const connector = side === 'source' ? exportRow.sourceConnector : exportRow.destinationConnector;
    const sealed = side === 'source' ? exportRow.sourceCredentials : exportRow.destinationCredentials;
    const declaration = findConnector(connector);
    if (!declaration) throw new RunFailure('connector_not_supported', `The ${side} connector "${connector}" is not installed`);
    if (!sealed) throw new RunFailure('auth_required', `The ${side} of this live export is not connected`);
    const credentials = this.cipher.decrypt(sealed, liveExportOwner(exportRow.id, side));
    return declaration.connect(credentials, base, {
      egress: { allowPrivate: this.config.EGRESS_ALLOW_PRIVATE, allowLoopback: this.config.EGRESS_ALLOW_LOOPBACK },
      poolSize,
      writeOrigin: `live-export:${exportRow.id}`,
    });
  }

  private async copy(liveExportId: string, counters: RunCounters, signal: AbortSignal): Promise<void> {
    const exportRow = await this.db.getRepository(LiveExportEntity).findOneBy({ id: liveExportId });
    if (!exportRow) throw new RunLost();
    const plan: LiveExportPlan | null = exportRow.plan;
    if (!plan || plan.tables.length === 0) throw new RunFailure('not_provisioned', 'The live export has not been saved yet');
    const source = await this.open(exportRow, 'source', plan.source.base ?? exportRow.sourceBase, 1);
    try {
      // Two connections: one writes a batch while the other can cancel it.
      const destination = await this.open(exportRow, 'destination', plan.destination.location, 2);
      try {
        const target = destination.liveExport;
        if (!target) throw new RunFailure('connector_not_supported', `The ${destination.type} connector cannot be a live export destination`);
        for (const table of plan.tables) {
          if (signal.aborted) return;
          await this.copyTable(source, target, table, counters, signal);
        }
      } finally {
        await destination.close();
      }
    } finally {
      await source.close();
    }
  }

  private structureFailure(table: LiveExportPlanTable, info: ExportTableInfo | null): RunFailure | null {
    const expectations: ExportColumnExpectation[] = table.columns.map((column) => ({ column: column.column, sourceClass: column.typeClass }));
    const problems = exportStructureProblems(info, table.destinationTable, expectations);
    return problems.length > 0 ? new RunFailure('live_export_invalid_structure', problems.join('; ')) : null;
  }

  private columnPlans(table: LiveExportPlanTable, info: ExportTableInfo): ColumnPlan[] {
    const destination = new Map(info.columns.map((column) => [column.name, column]));
    return table.columns.map((column) => {
      const target = destination.get(column.column)!;
      const conversion = conversionFor({ typeClass: column.typeClass, typeDetails: column.typeDetails ?? null }, { typeClass: target.typeClass, typeDetails: target.typeDetails });
      if (conversion.kind === 'incompatible') throw new RunFailure('live_export_invalid_structure', `Column "${column.column}": ${conversion.reason}`);
      return {
        sourceField: column.sourceField,
        column: column.column,
        convert: (value) => {
          if (value === null || value === undefined) return null;
          const converted = conversion.convert(value);
          if (!converted.ok) throw new RunFailure('invalid_data', `Column "${column.column}" of "${table.destinationTable}": ${converted.reason}`);
          return converted.value;
        },
      };
    });
  }

  private async copyTable(source: Connection, target: LiveExportTarget, table: LiveExportPlanTable, counters: RunCounters, signal: AbortSignal): Promise<void> {
    const info = await target.inspectExportTable(table.destinationTable);
    const invalid = this.structureFailure(table, info);
    if (invalid) throw invalid;
    const columns = this.columnPlans(table, info!);
    const columnNames = columns.map((column) => column.column);
    const hasher = exportRowHasher(table.columns.map((column) => ({ column: column.column, sourceClass: column.typeClass })));

    // What the destination holds now: id -> hash. Ids still here after the source scan left the source.
    const existing = new Map<string, string | null>();
    let after: string | null = null;
    do {
      const page = await target.readExportHashes(table.destinationTable, { after, limit: HASH_PAGE });
      for (const row of page.rows) existing.set(row.id, row.hash);
      after = page.next;
    } while (after !== null && !signal.aborted);

    let pendingWrite: Promise<void> | null = null;
    const write = async (batch: { inserts: ExportRow[]; upserts: ExportRow[]; deletes: string[] }): Promise<void> => {
      try {
        const result = await target.writeExportBatch(table.destinationTable, { columns: columnNames, ...batch }, { signal });
        counters.rowsWritten += result.upserted;
        counters.rowsRemoved += result.deleted;
      } catch (error) {
        if (isExportAborted(error)) throw error;
        // The table may have been changed under the run: say so precisely when it was.
        const now = await target.inspectExportTable(table.destinationTable).catch(() => undefined);
        const structure = now === undefined ? null : this.structureFailure(table, now);
        throw structure ?? error;
      }
    };
    /** Waits for the batch in flight, then starts this one (one batch writes while the next page is read). */
    const flush = async (batch: { inserts: ExportRow[]; upserts: ExportRow[]; deletes: string[] }): Promise<void> => {
      if (pendingWrite) await pendingWrite;
      pendingWrite = null;
      if (signal.aborted) return;
      const started = write(batch);
      started.catch(() => undefined); // awaited at the next flush or at the end
      pendingWrite = started;
    };

    const batchRows = this.config.LIVE_EXPORT_BATCH_ROWS;
    let inserts: ExportRow[] = [];
    let upserts: ExportRow[] = [];
    const fields = [...new Set(columns.map((column) => column.sourceField))];
    let cursor: string | null = null;
    do {
      if (signal.aborted) break;
      const page = await source.readPage(table.sourceTable, { after: cursor, pageSize: PAGE_SIZE, fields });
      counters.rowsRead += page.records.length;
      for (const record of page.records) {
        const values: CanonicalValue[] = new Array(columns.length);
        const byColumn: Record<string, CanonicalValue> = {};
        for (let index = 0; index < columns.length; index += 1) {
          const column = columns[index]!;
          const value = column.convert(record.values[column.sourceField] ?? null);
          values[index] = value;
          byColumn[column.column] = value;
        }
        const hash = hasher(values);
        const known = existing.get(record.remoteId);
        if (known === undefined) {
          inserts.push({ id: record.remoteId, hash, values: byColumn });
        } else {
          existing.delete(record.remoteId);
          if (known !== hash) upserts.push({ id: record.remoteId, hash, values: byColumn });
        }
        if (inserts.length + upserts.length >= batchRows) {
          await flush({ inserts, upserts, deletes: [] });
          inserts = [];
          upserts = [];
        }
      }
      cursor = page.next;
    } while (cursor !== null);
    if (!signal.aborted && inserts.length + upserts.length > 0) await flush({ inserts, upserts, deletes: [] });
    // Rows inserted in this run are never in `existing`; what is left there left the source.
    const removed = [...existing.keys()];
    for (let start = 0; start < removed.length && !signal.aborted; start += batchRows) {
      await flush({ inserts: [], upserts: [], deletes: removed.slice(start, start + batchRows) });
    }
    if (pendingWrite) await pendingWrite;
  }
}
