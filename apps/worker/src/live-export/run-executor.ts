/**
 * One live export run: makes each planned destination table a mirror of the mapped source columns.
 *
 * Per table: check the destination table can still be written (`live_export_invalid_structure` otherwise).
 * Row hashes are computed by the SOURCE database over the mapped fields (`LiveExportSource`), salted with the
 * plan's fingerprint, and stored in `lockstep_row_hash`. When the destination table holds none of the
 * export's rows yet (a first run), the source is streamed in keyset pages (rows with their hashes), converted
 * to the destination columns' classes (the conversion table the engine and mapping validation use) and
 * inserted. Otherwise the run reads `(id, hash)` from both sides at once, diffs them, fetches full rows only
 * for new and changed ids, upserts them, and deletes the ids the source no longer has (it streams instead
 * when most rows changed). Writes go in batches of `LIVE_EXPORT_BATCH_ROWS`, each one destination
 * transaction, while the next rows are read. Rows with a NULL `lockstep_source_id` are never read or written.
 *
 * Every 200 ms the run looks at its cancel flag; a cancel aborts the batch in flight (its transaction is
 * rolled back) and ends the run `canceled` within a second. Each row is therefore as before or as after the
 * run.
 */
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '@lockstep/config';
import {
  type Connection,
  exportCaptureOf,
  exportPlanFingerprint,
  exportRowHasher,
  exportSourceOf,
  exportStructureProblems,
  type LiveExportSource,
  type LiveExportSourceCapture,
  isConnectorError,
  isExportAborted,
  type ExportColumnExpectation,
  type ExportTableInfo,
  type LiveExportTarget,
  type ConnectorCoordination,
} from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import { conversionFor, type LiveExportPlan, type LiveExportPlanTable } from '@lockstep/domain';
import {
  type CaptureState,
  CaptureStore,
  type CredentialCipher,
  type LiveExportEntity,
  LiveExportStore,
  liveExportOwner,
  type RunCounters,
  type RunError,
  RunStore,
} from '@lockstep/persistence';
import {
  BatchWriter,
  type ColumnPlan,
  destinationHashes,
  PAGE_SIZE,
  readDestinationHashes,
  type SourcePages,
  streamPages,
  streamRows,
  type TableCopy,
} from './table-copy';

/**
 * A run whose destination holds rows streams the whole source when more than this share of rows must be
 * written.
 */
const STREAM_ABOVE = 0.25;
/** Changed rows fetched from the source per statement in an incremental run. */
const FETCH_ROWS = 1000;
/** Rows compared before an incremental run may decide to stream instead. */
const STREAM_MIN_ROWS = 10_000;
const CANCEL_POLL_MS = 200;
/** Log entries read per change-capture call. */
const CHANGES_PAGE = 10_000;
/** More changed ids than this in one run: compare everything instead of fetching each by id. */
const CHANGES_FULL_ABOVE = 50_000;
/**
 * A capture checkpoint older than this is not trusted: the source's log keeps entries for 7 days, so a reader
 * further behind could miss purged ones.
 */
const CHECKPOINT_MAX_AGE_MS = 6 * 24 * 3600_000;
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

export class RunExecutor {
  private readonly logger = new Logger('LiveExportRun');
  private readonly runs: RunStore;
  private readonly captures: CaptureStore;
  private readonly exports: LiveExportStore;

  constructor(
    db: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly config: AppConfig,
    /** The rate budgets and locks shared through Redis (`ConnectContext.shared`). */
    private readonly shared?: ConnectorCoordination,
  ) {
    this.runs = new RunStore(db.manager);
    this.captures = new CaptureStore(db.manager);
    this.exports = new LiveExportStore(db.manager);
  }

  get captureStore(): CaptureStore {
    return this.captures;
  }

  get store(): RunStore {
    return this.runs;
  }

  /**
   * Carries out the run if it is still queued; returns its final state (null when there was nothing to do).
   */
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
      const check = beat
        ? this.runs.heartbeat(runId, token, counters).then((found) => found && found.cancelRequested)
        : this.runs.cancelRequested(runId, token);
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
      outcome = controller.signal.aborted
        ? { state: 'canceled', error: null }
        : { state: 'succeeded', error: null };
    } catch (error) {
      if (
        controller.signal.aborted &&
        (isExportAborted(error) || error instanceof RunLost || canceled || lost)
      ) {
        outcome = { state: 'canceled', error: null };
      } else {
        const described = this.describe(error);
        outcome = { state: 'failed', error: described };
        if (described.code === 'internal')
          this.logger.error(
            { runId, error: error instanceof Error ? error.stack : String(error) },
            'live export run failed',
          );
      }
    } finally {
      clearInterval(monitor);
    }
    if (lost) {
      this.logger.warn({ runId }, 'live export run is no longer owned by this worker; leaving it');
      return null;
    }
    const finished = await this.runs.finish(runId, token, outcome.state, counters, outcome.error);
    this.logger.log(
      { runId, state: outcome.state, ...counters, error: outcome.error?.code },
      'live export run finished',
    );
    return finished ? outcome.state : null;
  }

  /**
   * Removes the change capture of a deleted export from its source database and deletes the released rows. A
   * source that cannot be reached throws (the job retries with backoff); on the last attempt the rows go
   * anyway and the triggers stay behind (logged, with their names, for a person to drop).
   */
  async releaseCaptures(liveExportId: string, lastAttempt: boolean): Promise<number> {
    const released = await this.captures.released(liveExportId);
    if (released.length === 0) return 0;
    const first = released[0]!;
    let removed = 0;
    try {
      const connection = await this.connect(
        liveExportId,
        'source',
        first.connector,
        first.credentials,
        first.base,
        1,
      );
      try {
        const capture = exportCaptureOf(connection);
        for (const row of released) {
          if (capture) await capture.stopSourceCapture(row.sourceTable);
          await this.captures.forget(liveExportId, row.sourceTable);
          removed += 1;
        }
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (!lastAttempt) throw error;
      const tables = released.map((row) => row.sourceTable);
      this.logger.warn(
        { liveExportId, tables, error: error instanceof Error ? error.message : String(error) },
        'could not remove the change capture of a deleted live export from its source; its triggers ' +
          'on these tables (PostgreSQL lockstep_export_*, MySQL lockstep_xa*) can be dropped by hand',
      );
      for (const table of tables) await this.captures.forget(liveExportId, table);
    }
    return removed;
  }

  private describe(error: unknown): RunError {
    if (error instanceof RunFailure) return { code: error.code, message: error.message };
    if (isConnectorError(error))
      return { code: CONNECTOR_CODES[error.kind] ?? 'connection_failed', message: error.message };
    return { code: 'internal', message: 'The run failed unexpectedly; see the worker log' };
  }

  private async open(
    exportRow: LiveExportEntity,
    side: 'source' | 'destination',
    base: string | null,
    poolSize: number,
  ): Promise<Connection> {
    const [connector, sealed] =
      side === 'source'
        ? [exportRow.sourceConnector, exportRow.sourceCredentials]
        : [exportRow.destinationConnector, exportRow.destinationCredentials];
    return this.connect(exportRow.id, side, connector, sealed, base, poolSize);
  }

  /** Opens one side of an export from its connector and sealed credentials (bound to the export and side). */
  private async connect(
    liveExportId: string,
    side: 'source' | 'destination',
    connector: string | null,
    sealed: Buffer | null,
    base: string | null,
    poolSize: number,
  ): Promise<Connection> {
    const declaration = connector ? findConnector(connector) : undefined;
    if (!declaration)
      throw new RunFailure(
        'connector_not_supported',
        `The ${side} connector "${connector}" is not installed`,
      );
    if (!sealed) throw new RunFailure('auth_required', `The ${side} of this live export is not connected`);
    const credentials = this.cipher.decrypt(sealed, liveExportOwner(liveExportId, side));
    return declaration.connect(credentials, base, {
      egress: {
        allowPrivate: this.config.EGRESS_ALLOW_PRIVATE,
        allowLoopback: this.config.EGRESS_ALLOW_LOOPBACK,
      },
      poolSize,
      writeOrigin: `live-export:${liveExportId}`,
      ...(this.shared ? { shared: this.shared } : {}),
      settings: this.config.connectorSettings,
    });
  }

  private async copy(liveExportId: string, counters: RunCounters, signal: AbortSignal): Promise<void> {
    const exportRow = await this.exports.find(liveExportId);
    if (!exportRow) throw new RunLost();
    const plan: LiveExportPlan | null = exportRow.plan;
    if (!plan || plan.tables.length === 0)
      throw new RunFailure('not_provisioned', 'The live export has not been saved yet');
    // Two connections: an incremental run fetches changed rows while its hash scan is still running.
    const source = await this.open(exportRow, 'source', plan.source.base ?? exportRow.sourceBase, 2);
    try {
      // Two connections: one writes a batch while the other can cancel it.
      const destination = await this.open(exportRow, 'destination', plan.destination.location, 2);
      try {
        const target = destination.liveExport;
        if (!target)
          throw new RunFailure(
            'connector_not_supported',
            `The ${destination.type} connector cannot be a live export destination`,
          );
        const states = await this.captures.load(exportRow.id);
        const capture = exportCaptureOf(source);
        for (const table of plan.tables) {
          if (signal.aborted) return;
          await this.copyTable(
            exportRow.id,
            source,
            capture,
            target,
            table,
            states.get(table.sourceTable) ?? null,
            counters,
            signal,
          );
        }
        // Tables that left the plan: their capture is removed from the source (nothing reads it any more).
        const mapped = new Set(plan.tables.map((table) => table.sourceTable));
        for (const sourceTable of states.keys()) {
          if (mapped.has(sourceTable) || signal.aborted) continue;
          if (capture) await capture.stopSourceCapture(sourceTable);
          await this.captures.forget(exportRow.id, sourceTable);
        }
      } finally {
        await destination.close();
      }
    } finally {
      await source.close();
    }
  }

  private structureFailure(table: LiveExportPlanTable, info: ExportTableInfo | null): RunFailure | null {
    const expectations: ExportColumnExpectation[] = table.columns.map((column) => ({
      column: column.column,
      sourceClass: column.typeClass,
    }));
    const problems = exportStructureProblems(info, table.destinationTable, expectations);
    return problems.length > 0 ? new RunFailure('live_export_invalid_structure', problems.join('; ')) : null;
  }

  private columnPlans(table: LiveExportPlanTable, info: ExportTableInfo): ColumnPlan[] {
    const destination = new Map(info.columns.map((column) => [column.name, column]));
    return table.columns.map((column) => {
      const target = destination.get(column.column)!;
      const conversion = conversionFor(
        { typeClass: column.typeClass, typeDetails: column.typeDetails ?? null },
        { typeClass: target.typeClass, typeDetails: target.typeDetails },
      );
      if (conversion.kind === 'incompatible')
        throw new RunFailure(
          'live_export_invalid_structure',
          `Column "${column.column}": ${conversion.reason}`,
        );
      return {
        sourceField: column.sourceField,
        column: column.column,
        convert: (value) => {
          if (value === null || value === undefined) return null;
          const converted = conversion.convert(value);
          if (!converted.ok)
            throw new RunFailure(
              'invalid_data',
              `Column "${column.column}" of "${table.destinationTable}": ${converted.reason}`,
            );
          return converted.value;
        },
      };
    });
  }

  private async copyTable(
    liveExportId: string,
    source: Connection,
    capture: LiveExportSourceCapture | null,
    target: LiveExportTarget,
    table: LiveExportPlanTable,
    state: CaptureState | null,
    counters: RunCounters,
    signal: AbortSignal,
  ): Promise<void> {
    const info = await target.inspectExportTable(table.destinationTable);
    const invalid = this.structureFailure(table, info);
    if (invalid) throw invalid;
    const columns = this.columnPlans(table, info!);
    const fields = [...new Set(columns.map((column) => column.sourceField))];
    // Row hashes are salted with the plan and the destination columns' types: a re-saved plan or a retyped
    // column rewrites every row once.
    const destinationTypes = new Map(info!.columns.map((column) => [column.name, column.type]));
    const salt = exportPlanFingerprint(
      table.columns.map((column) => [
        column.sourceField,
        column.column,
        column.typeClass,
        column.typeDetails ?? null,
        destinationTypes.get(column.column) ?? null,
      ]),
    );
    const writer = new BatchWriter(
      target,
      table,
      columns,
      counters,
      signal,
      (now) => this.structureFailure(table, now),
      this.config.LIVE_EXPORT_BATCH_ROWS,
    );
    const layer = exportSourceOf(source);
    const copy: TableCopy = { liveExportId, table, fields, salt, writer, counters, signal };
    if (layer) {
      await this.copyHashedAtSource(copy, layer, capture, target, state);
      return;
    }
    await this.copyHashedHere(copy, source, target);
    await writer.done();
  }

  /**
   * A source that hashes its rows: only the logged changes when the capture allows it, else a full compare
   * (or, into an empty table, a stream of every row); the capture is (re)started and its state kept.
   */
  private async copyHashedAtSource(
    copy: TableCopy,
    layer: LiveExportSource,
    capture: LiveExportSourceCapture | null,
    target: LiveExportTarget,
    state: CaptureState | null,
  ): Promise<void> {
    const { liveExportId, table, salt, writer, signal } = copy;
    const probe = await target.readExportHashes(table.destinationTable, { limit: 1 });
    if (
      capture &&
      state &&
      probe.rows.length > 0 &&
      (await this.captureUsable(capture, table, state, salt))
    ) {
      const next = await this.changesOnly(copy, capture, layer, state.checkpoint);
      if (next !== null) {
        await writer.done();
        if (!signal.aborted)
          await this.captures.save(liveExportId, { ...state, checkpoint: next, checkpointAt: new Date() });
        return;
      }
      // Too many changes to fetch one by one: compare everything instead (below).
    }
    // The capture is installed (or found) before anything is read, and its checkpoint taken: every change
    // committed after it reaches the next run through the log, everything before it is in this run's reads.
    const started = capture ? await this.startCapture(capture, table) : null;
    if (probe.rows.length === 0) {
      // First run (or an emptied table): stream every source row straight into inserts.
      await streamRows(copy, layer, () => 'insert');
    } else {
      await this.incremental(copy, layer, target);
    }
    await writer.done();
    if (started && !signal.aborted) {
      const now = new Date();
      await this.captures.save(liveExportId, {
        sourceTable: table.sourceTable,
        destinationTable: table.destinationTable,
        token: started.token,
        checkpoint: started.checkpoint,
        salt,
        checkpointAt: now,
        fullCompareAt: now,
      });
    } else if (state && !signal.aborted) {
      await this.captures.forget(liveExportId, table.sourceTable);
    }
  }

  /** A source whose database cannot hash rows: stream it, hashing the mapped source values here. */
  private async copyHashedHere(copy: TableCopy, source: Connection, target: LiveExportTarget): Promise<void> {
    const { table, fields, salt, writer, counters, signal } = copy;
    const existing = await destinationHashes(target, table, signal);
    const hasher = exportRowHasher(salt, fields);
    const pages: SourcePages = async (after) => {
      const page = await source.readPage(table.sourceTable, { after, pageSize: PAGE_SIZE, fields });
      return {
        rows: page.records.map((record) => ({
          id: record.remoteId,
          hash: hasher(record.values),
          values: record.values,
        })),
        next: page.next,
      };
    };
    await streamPages(pages, writer, counters, signal, (id, hash) => {
      const known = existing.get(id);
      if (known === undefined) return 'insert';
      existing.delete(id);
      return known === hash ? null : 'upsert';
    });
    if (!signal.aborted) await writer.deletes([...existing.keys()]);
  }

  /**
   * Whether this run may write only what the capture logged: the same plan (salt) and destination table, a
   * full compare recent enough, a checkpoint younger than the log's retention, and the very installation the
   * checkpoint belongs to (a capture removed and installed again may have missed changes in between).
   */
  private async captureUsable(
    capture: LiveExportSourceCapture,
    table: LiveExportPlanTable,
    state: CaptureState,
    salt: string,
  ): Promise<boolean> {
    const now = Date.now();
    if (state.salt !== salt || state.destinationTable !== table.destinationTable) return false;
    if (now - state.fullCompareAt.getTime() >= this.config.LIVE_EXPORT_FULL_COMPARE_HOURS * 3600_000)
      return false;
    if (now - state.checkpointAt.getTime() >= CHECKPOINT_MAX_AGE_MS) return false;
    return (await capture.sourceCaptureToken(table.sourceTable)) === state.token;
  }

  /**
   * Installs the capture; a source that will not take it (no trigger privilege, no usable key) is compared in
   * full each run.
   */
  private async startCapture(
    capture: LiveExportSourceCapture,
    table: LiveExportPlanTable,
  ): Promise<{ token: string; checkpoint: string } | null> {
    try {
      return await capture.startSourceCapture(table.sourceTable);
    } catch (error) {
      // No trigger privilege, or a table lock the install could not get in time: this run compares everything
      // without it (and the next one tries again).
      if (
        isConnectorError(error) &&
        (error.kind === 'permission' || error.kind === 'unsupported' || error.kind === 'transient')
      ) {
        this.logger.warn(
          { table: table.sourceTable, error: error.message },
          'change capture could not be installed on the live export source; this run compares all rows',
        );
        return null;
      }
      throw error;
    }
  }

  /**
   * Writes the rows the capture logged since `since`: fetched by id with their hashes and upserted; an id the
   * source no longer has was deleted there and is removed. Returns the checkpoint to keep, or null (nothing
   * written) when more ids changed than fetching one by one is worth.
   */
  private async changesOnly(
    copy: TableCopy,
    capture: LiveExportSourceCapture,
    layer: LiveExportSource,
    since: string,
  ): Promise<string | null> {
    const { table, fields, salt, writer, counters, signal } = copy;
    const ids = new Set<string>();
    let checkpoint = since;
    for (;;) {
      if (signal.aborted) return checkpoint;
      const page = await capture.readSourceChanges(table.sourceTable, checkpoint, { limit: CHANGES_PAGE });
      for (const id of page.ids) ids.add(id);
      if (ids.size > CHANGES_FULL_ABOVE) return null;
      checkpoint = page.checkpoint;
      if (!page.hasMore) break;
    }
    const changed = [...ids];
    for (let start = 0; start < changed.length && !signal.aborted; start += FETCH_ROWS) {
      const chunk = changed.slice(start, start + FETCH_ROWS);
      const rows = await layer.readSourceRowsById(table.sourceTable, chunk, { fields, salt });
      counters.rowsRead += rows.length;
      const found = new Set<string>();
      for (const row of rows) {
        found.add(row.id);
        await writer.add('upsert', row);
      }
      const gone = chunk.filter((id) => !found.has(id));
      if (gone.length > 0) await writer.deletes(gone);
    }
    return checkpoint;
  }

  /**
   * A destination that already holds rows: scan `(id, hash)` of both sides (hashed inside the source
   * database) at the same time, each in one statement; as soon as the destination's pairs are in, every
   * source pair is compared on arrival and new or changed ids are fetched (full rows with their hashes) and
   * written in chunks while the source scan goes on. Ids the source no longer has are deleted at the end.
   * When most rows changed (a re-saved plan), the rest is streamed instead of fetched by id.
   */
  private async incremental(
    copy: TableCopy,
    layer: LiveExportSource,
    target: LiveExportTarget,
  ): Promise<void> {
    const { table, fields, salt, writer, counters, signal } = copy;
    const existing = new Map<string, string | null>();
    const wanted = new Map<string, 'insert' | 'upsert'>();
    let early: [string, string][] | null = [];
    let seen = 0;
    let streaming = false;
    let queue: string[] = [];
    /** The chain of fetch-and-write steps (one at a time, in order); the first failure stops it. */
    let chain: Promise<void> = Promise.resolve();
    let failed = false;
    const dispatched = new Set<string>();
    const fetchWrite = (ids: string[]): void => {
      for (const id of ids) dispatched.add(id);
      chain = chain.then(async () => {
        if (failed || signal.aborted) return;
        const rows = await layer.readSourceRowsById(table.sourceTable, ids, { fields, salt });
        // An id gone from the source since the scan is simply absent (the next run removes it).
        for (const row of rows) await writer.add(wanted.get(row.id) ?? 'upsert', row);
        await writer.flush();
      });
      chain.catch(() => (failed = true));
    };
    const compare = (id: string, hash: string): void => {
      seen += 1;
      const known = existing.get(id);
      if (known === undefined) {
        wanted.set(id, 'insert');
      } else {
        existing.delete(id);
        if (known === hash) return;
        wanted.set(id, 'upsert');
      }
      if (streaming) return;
      if (seen >= STREAM_MIN_ROWS && wanted.size > seen * STREAM_ABOVE) {
        streaming = true;
        return;
      }
      queue.push(id);
      if (queue.length >= FETCH_ROWS) {
        fetchWrite(queue);
        queue = [];
      }
    };
    const destinationRead = readDestinationHashes(target, table, signal, existing).then(() => {
      for (const [id, hash] of early!) compare(id, hash);
      early = null;
    });
    let sourceRows: number;
    try {
      [, sourceRows] = await Promise.all([
        destinationRead,
        layer.scanSourceHashes(table.sourceTable, { fields, salt, signal }, (id, hash) =>
          early === null ? compare(id, hash) : early.push([id, hash]),
        ),
      ]);
    } catch (error) {
      failed = true;
      await chain.catch(() => undefined); // no write is left running behind the failure
      throw error;
    }
    if (queue.length > 0 && !streaming) fetchWrite(queue);
    await chain;
    if (signal.aborted) return;
    if (streaming) {
      // Streaming re-reads every row with its hash: a row changed since the scan is written as it is now.
      await streamRows(copy, layer, (id) => (dispatched.has(id) ? null : (wanted.get(id) ?? null)));
    } else {
      counters.rowsRead += sourceRows;
    }
    // Ids still in `existing` left the source.
    if (!signal.aborted) await writer.deletes([...existing.keys()]);
  }
}
