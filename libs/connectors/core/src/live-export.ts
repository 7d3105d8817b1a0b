/**
 * Live export: what a destination connector offers so a live export run can keep a table of its own as a
 * mirror of a source table (spec 2.15, 4.8). A connector that serves as a live export destination exposes a
 * `LiveExportTarget` as `Connection.liveExport`; the connection's base is the destination `location`.
 *
 * A table an export writes carries two hidden columns besides the mapped ones:
 * - `lockstep_source_id` (text, unique): the source record's remote id. Rows with NULL here (or rows the
 *   export never wrote) are someone else's: no write or delete of the target ever touches them.
 * - `lockstep_row_hash` (text): the hash of the row's mapped SOURCE values, salted with the plan's
 *   fingerprint (`exportPlanFingerprint`), so a run writes only rows whose source values (or the plan)
 *   changed.
 *
 * A connector that serves as a live export source computes those hashes inside its own database
 * (`LiveExportSource`, the optional `readSource*` members of the same object): a run then reads only
 * `(id, hash)` pairs from both sides and fetches full rows for new and changed ids alone.
 */
import { conversionSeverity, type CanonicalValue, type TypeClass } from '@lockstep/domain';
import { createHash } from 'node:crypto';
import type { Connection, FieldSpec } from './connector';

export const EXPORT_ID_COLUMN = 'lockstep_source_id';
export const EXPORT_HASH_COLUMN = 'lockstep_row_hash';

/** A table to provision: its name in the location and its mapped columns, typed from the source fields. */
export interface ExportTableSpec {
  name: string;
  columns: FieldSpec[];
}

export interface ExportColumnInfo {
  name: string;
  /** The connector's own type (`bigint`, `varchar(40)`...). */
  type: string;
  typeClass: TypeClass;
  /** As `FieldInfo.typeDetails` (max_length, precision, scale, options...). */
  typeDetails: Record<string, unknown> | null;
}

/** A destination table as the connector sees it now. */
export interface ExportTableInfo {
  name: string;
  /** Mapped-column candidates: every column except the two hidden ones. */
  columns: ExportColumnInfo[];
  /** `lockstep_source_id` exists and has a unique index on it alone. */
  idColumn: 'ok' | 'missing' | 'not_unique' | 'wrong_type';
  hashColumn: 'ok' | 'missing' | 'wrong_type';
  /** The object is a view or otherwise cannot be written. */
  writable: boolean;
}

export interface ProvisionResult {
  table: ExportTableInfo;
  created: boolean;
  /** Columns added to an existing table (never dropped, never retyped). */
  addedColumns: string[];
}

/** One row to write: values keyed by destination column name, in canonical form. */
export interface ExportRow {
  id: string;
  hash: string;
  values: Record<string, CanonicalValue>;
}

export interface ExportHashPage {
  rows: { id: string; hash: string | null }[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

export interface ExportWriteOptions {
  /**
   * Aborting rolls back the batch's transaction at once (the connection running it is dropped) and makes the
   * call reject with an `ExportAbortedError`. Nothing of the batch is then visible.
   */
  signal?: AbortSignal;
}

export interface ExportBatch {
  /** Destination column names the rows carry (every row has a value for each, null included). */
  columns: string[];
  /** Insert or replace by `lockstep_source_id`. */
  upserts: ExportRow[];
  /**
   * Rows the caller believes are not in the table yet (their id was not among `readExportHashes`): written
   * the connector's fastest way; one that exists after all is replaced like an upsert.
   */
  inserts?: ExportRow[];
  /** `lockstep_source_id` values to delete (only rows with that non-null id are deleted). */
  deletes: string[];
}

/** The mapped source fields a source-side read covers, and the salt every hash it returns includes. */
export interface ExportSourceOptions {
  /** Source field remote ids, in plan order (each once). */
  fields: string[];
  /** Hex text (at least 16 characters): `exportPlanFingerprint` of the table's plan. */
  salt: string;
}

export interface ExportSourceHash {
  /** The record's remote id, exactly as `readPage` gives it. */
  id: string;
  /** The row's hash over `fields` (and the salt), computed by the source database. */
  hash: string;
}

/** A source row with its hash; both come from one statement, so the hash always describes these values. */
export interface ExportSourceRow extends ExportSourceHash {
  /** Canonical values keyed by source field remote id (as `readPage` decodes them). */
  values: Record<string, CanonicalValue>;
}

export interface ExportSourcePage<T> {
  rows: T[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

/**
 * Source side of a live export: keyset pages (in the table's key order) of row hashes computed inside the
 * source database over a canonical text of the mapped fields, so a run with few changes never moves whole
 * rows. The same row always gets the same hash for the same salt; a change of any field in `fields` changes
 * it.
 */
export interface LiveExportSource {
  /**
   * Every `(id, hash)` of the table in ONE statement (one snapshot), streamed to `onRow` in no particular
   * order (a plain table scan: no sort, no index walk). Aborting `signal` drops the statement's connection
   * and makes the call reject with an `ExportAbortedError`. Resolves with the number of rows.
   */
  scanSourceHashes(
    table: string,
    options: ExportSourceOptions & { signal?: AbortSignal },
    onRow: (id: string, hash: string) => void,
  ): Promise<number>;
  readSourceHashes(
    table: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceHash>>;
  /** Full rows with their hashes (the first run's streaming read). */
  readSourceRows(
    table: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceRow>>;
  /** Rows by remote id with their hashes; ids that do not exist (any more) are absent. */
  readSourceRowsById(table: string, ids: string[], options: ExportSourceOptions): Promise<ExportSourceRow[]>;
}

/** A capture just installed (or found installed): what names it, and a checkpoint meaning "now". */
export interface ExportCaptureStart {
  /**
   * Names this installation of the capture (the triggers and the log they write to). It changes whenever
   * the capture was removed and installed again, so a reader holding an older token knows changes may be
   * missing from the log and compares everything instead.
   */
  token: string;
  /** Changes committed after this checkpoint are returned by `readSourceChanges`. Taken after the install. */
  checkpoint: string;
}

export interface ExportChangePage {
  /** Remote ids (as `readPage` gives them) of rows inserted, updated or deleted in this window, each once. */
  ids: string[];
  /** Pass as `since` next time; advance it only once the ids were written. */
  checkpoint: string;
  /** More log entries wait beyond `limit`. */
  hasMore: boolean;
}

/**
 * Change capture for live export sources (optional): the export's OWN triggers and log in the source
 * database, separate from the change capture a sync installs (`prepareTable`), so removing one never affects
 * the other. The log holds which keys changed, not values: a run reads the ids changed since its checkpoint
 * and fetches those rows (`readSourceRowsById`); an id that no longer exists was deleted. Reads purge log
 * entries older than the retention (7 days) now and then; a reader further behind must compare everything.
 */
export interface LiveExportSourceCapture {
  /**
   * Installs the capture on the table if missing (idempotent, concurrent callers are serialised; never adds a
   * column or touches data) and returns its token and a checkpoint taken after the install. Null when the
   * table cannot be captured (a view, or no single-column key matching the remote id). Throws a
   * ConnectorError `permission` when the role may not create triggers.
   */
  startSourceCapture(table: string): Promise<ExportCaptureStart | null>;
  /** The token of the capture installed on the table now; null when it is missing or incomplete. */
  sourceCaptureToken(table: string): Promise<string | null>;
  /**
   * Ids changed after `since`, reading at most `limit` log entries. Every change after `since` is returned
   * exactly once over consecutive calls.
   */
  readSourceChanges(table: string, since: string, options: { limit: number }): Promise<ExportChangePage>;
  /** Drops the table's capture triggers and its log entries. Idempotent; a table that is gone is fine. */
  stopSourceCapture(table: string): Promise<void>;
}

/** The object a connection's `liveExport` returns: a destination, and (optionally) a source. */
export interface LiveExportTarget extends Partial<LiveExportSource>, Partial<LiveExportSourceCapture> {
  /**
   * Creates the table with the two hidden columns and the mapped columns (typed from the source through the
   * connector's `createTable`/`createField` type mapping), or adds the mapped columns an existing table
   * lacks. Never drops or retypes a column. Idempotent.
   */
  provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult>;
  /** The table as it is now, or null when it does not exist. */
  inspectExportTable(name: string): Promise<ExportTableInfo | null>;
  /** Keyset pages of `(lockstep_source_id, lockstep_row_hash)` over the rows with a non-null id. */
  readExportHashes(name: string, options: { after?: string | null; limit: number }): Promise<ExportHashPage>;
  /**
   * Every `(lockstep_source_id, lockstep_row_hash)` with a non-null id in ONE statement, streamed to `onRow`
   * in no particular order (a plain table scan). Aborting `signal` drops the connection; the call then
   * rejects with an `ExportAbortedError`. Resolves with the number of rows.
   */
  scanExportHashes?(
    name: string,
    onRow: (id: string, hash: string | null) => void,
    options?: ExportWriteOptions,
  ): Promise<number>;
  /** Upserts and deletes in ONE transaction: all of the batch is written, or none of it. */
  writeExportBatch(
    name: string,
    batch: ExportBatch,
    options?: ExportWriteOptions,
  ): Promise<{ upserted: number; deleted: number }>;
}

/** A live export target whose optional full scan is present. */
export type ExportTargetTables = LiveExportTarget & Required<Pick<LiveExportTarget, 'scanExportHashes'>>;

/**
 * A connector's live export object made of its two halves: the destination tables (`target`) and the source
 * reads (`source`), each method delegating. A connector extends it and adds its source change capture.
 */
export abstract class DelegatingLiveExport implements LiveExportTarget, LiveExportSource {
  protected constructor(
    private readonly target: ExportTargetTables,
    private readonly source: LiveExportSource,
  ) {}

  provisionExportTable(spec: ExportTableSpec): Promise<ProvisionResult> {
    return this.target.provisionExportTable(spec);
  }

  inspectExportTable(name: string): Promise<ExportTableInfo | null> {
    return this.target.inspectExportTable(name);
  }

  readExportHashes(name: string, options: { after?: string | null; limit: number }): Promise<ExportHashPage> {
    return this.target.readExportHashes(name, options);
  }

  writeExportBatch(
    name: string,
    batch: ExportBatch,
    options: ExportWriteOptions = {},
  ): Promise<{ upserted: number; deleted: number }> {
    return this.target.writeExportBatch(name, batch, options);
  }

  scanExportHashes(
    name: string,
    onRow: (id: string, hash: string | null) => void,
    options: ExportWriteOptions = {},
  ): Promise<number> {
    return this.target.scanExportHashes(name, onRow, options);
  }

  readSourceHashes(
    name: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceHash>> {
    return this.source.readSourceHashes(name, options);
  }

  scanSourceHashes(
    name: string,
    options: ExportSourceOptions & { signal?: AbortSignal },
    onRow: (id: string, hash: string) => void,
  ): Promise<number> {
    return this.source.scanSourceHashes(name, options, onRow);
  }

  readSourceRows(
    name: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceRow>> {
    return this.source.readSourceRows(name, options);
  }

  readSourceRowsById(name: string, ids: string[], options: ExportSourceOptions): Promise<ExportSourceRow[]> {
    return this.source.readSourceRowsById(name, ids, options);
  }
}

/** Thrown by `writeExportBatch` when its signal aborted it; the batch was rolled back. */
export class ExportAbortedError extends Error {
  constructor() {
    super('The export batch was aborted');
    this.name = 'ExportAbortedError';
  }
}

/** A column the export writes, with the class of the source values it receives. */
export interface ExportColumnExpectation {
  column: string;
  sourceClass: TypeClass;
}

/**
 * Why the table cannot be written by the export any more (empty when it can): the table, a hidden column or a
 * mapped column is gone, the id lost its unique index, or a mapped column was retyped to a class the source
 * values cannot convert to. The run reports these as `live_export_invalid_structure`.
 */
export function exportStructureProblems(
  info: ExportTableInfo | null,
  name: string,
  columns: ExportColumnExpectation[],
): string[] {
  if (!info) return [`Table "${name}" no longer exists in the destination`];
  const problems: string[] = [];
  if (!info.writable) problems.push(`"${name}" cannot be written (it is a view or read-only)`);
  if (info.idColumn === 'missing') problems.push(`Table "${name}" has no ${EXPORT_ID_COLUMN} column`);
  if (info.idColumn === 'not_unique')
    problems.push(`Column ${EXPORT_ID_COLUMN} of "${name}" is no longer unique`);
  if (info.idColumn === 'wrong_type')
    problems.push(`Column ${EXPORT_ID_COLUMN} of "${name}" is no longer text`);
  if (info.hashColumn === 'missing') problems.push(`Table "${name}" has no ${EXPORT_HASH_COLUMN} column`);
  if (info.hashColumn === 'wrong_type')
    problems.push(`Column ${EXPORT_HASH_COLUMN} of "${name}" is no longer text`);
  const present = new Map(info.columns.map((column) => [column.name, column]));
  for (const expected of columns) {
    const column = present.get(expected.column);
    if (!column) {
      problems.push(`Column "${expected.column}" of "${name}" no longer exists`);
    } else if (conversionSeverity(expected.sourceClass, column.typeClass) === 'incompatible') {
      problems.push(
        `Column "${expected.column}" of "${name}" is now ${column.type}, which cannot hold ` +
          `${expected.sourceClass} values`,
      );
    }
  }
  return problems;
}

/**
 * The source-side export reads of a connection, or null when its connector does not compute hashes itself.
 */
export function exportSourceOf(connection: Connection): LiveExportSource | null {
  const layer = connection.liveExport;
  if (
    !layer ||
    typeof layer.scanSourceHashes !== 'function' ||
    typeof layer.readSourceHashes !== 'function' ||
    typeof layer.readSourceRows !== 'function' ||
    typeof layer.readSourceRowsById !== 'function'
  ) {
    return null;
  }
  return layer as LiveExportSource;
}

/** The source-side change capture of a connection, or null when its connector has none. */
export function exportCaptureOf(connection: Connection): LiveExportSourceCapture | null {
  const layer = connection.liveExport;
  if (
    !layer ||
    typeof layer.startSourceCapture !== 'function' ||
    typeof layer.sourceCaptureToken !== 'function' ||
    typeof layer.readSourceChanges !== 'function' ||
    typeof layer.stopSourceCapture !== 'function'
  ) {
    return null;
  }
  return layer as LiveExportSourceCapture;
}

/**
 * The fingerprint of a planned table (32 hex characters): the mapped source fields, destination columns,
 * their classes and details, and the destination columns' current types. Row hashes are salted with it, so
 * saving a different plan (or retyping a destination column) rewrites every row once.
 */
export function exportPlanFingerprint(parts: unknown): string {
  return createHash('sha1').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

/**
 * The hash a source without `LiveExportSource` gets (computed by the run from `readPage` values): the salted
 * hash of the mapped source values in `fields` order.
 */
export function exportRowHasher(
  salt: string,
  fields: readonly string[],
): (values: Record<string, CanonicalValue>) => string {
  return (values) =>
    createHash('sha1')
      .update(salt)
      .update(JSON.stringify(fields.map((field) => values[field] ?? null)))
      .digest('base64url');
}

export function isExportAborted(error: unknown): error is ExportAbortedError {
  return error instanceof ExportAbortedError;
}
