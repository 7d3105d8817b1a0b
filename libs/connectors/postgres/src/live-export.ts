/**
 * Live export for PostgreSQL (see libs/connectors/core/src/live-export.ts): one object that is the
 * connection's target (export-target.ts), source (export-source.ts) and source change capture, the first two
 * delegated.
 *
 * Its change capture (`LiveExportSourceCapture`) is the export's own statement-level triggers and log
 * (export-capture.ts), installed and removed here in a transaction under the setup advisory lock.
 */
import {
  ConnectorError,
  DelegatingLiveExport,
  type ExportCaptureStart,
  type ExportChangePage,
  type LiveExportSourceCapture,
} from '@lockstep/connectors-core';
import { loadTable, type Queryable } from './catalog';
import { INFRASTRUCTURE_SQL } from './change-capture';
import { decodeCheckpoint, encodeCheckpoint, pageOfLog } from './change-feed';
import { exportGuard, withWriteTransaction, type PostgresExportContext } from './db';
import {
  CAPTURE_LOCK_TIMEOUT,
  CAPTURE_STATE_SQL,
  CAPTURE_TRIGGERS,
  captureKey,
  captureToken,
  evaluateCapture,
  EXPORT_LOG,
  EXPORT_PURGE_BATCH,
  EXPORT_PURGE_EVERY_MS,
  EXPORT_RESETS,
  EXPORT_RETENTION_DAYS,
  INFRASTRUCTURE_STATE_SQL,
  infrastructureSql,
  LAST_RESET_SQL,
  PRESENT_TRIGGERS_SQL,
  repairTriggerSql,
  type CaptureStateDoc,
} from './export-capture';
import { distinctKeys, PURGE_EXPORT_LOG_SQL, READ_EXPORT_CHANGES_SQL } from './export-feed';
import { PostgresExportSource } from './export-source';
import { PostgresExportTarget } from './export-target';
import { ident, qualified } from './sql';

export type { PostgresExportContext } from './db';

const MAX_CHANGE_PAGE = 100_000;

const LOG_PRESENT_SQL = `SELECT to_regclass('${EXPORT_LOG}') IS NOT NULL AS present`;

const FORGET_TABLE_SQL = (log: string) => `
DELETE FROM ${log} WHERE table_schema = $1 AND table_name = $2`;

/** The capture's state on the table (key column `key`), or null when the table is gone. */
async function captureState(
  db: Queryable,
  schema: string,
  table: string,
  key: string,
): Promise<CaptureStateDoc | null> {
  const { rows } = await db.query(CAPTURE_STATE_SQL, [schema, table, key]);
  if (rows.length === 0) return null;
  return JSON.parse(String(rows[0]!['doc'])) as CaptureStateDoc;
}

/** The token of the capture described by `doc`, or null when it is incomplete. */
async function tokenOf(
  db: Queryable,
  schema: string,
  table: string,
  doc: CaptureStateDoc,
): Promise<string | null> {
  if (!evaluateCapture(doc).complete) return null;
  const { rows } = await db.query(LAST_RESET_SQL, [schema, table]);
  return captureToken(doc, String(rows[0]?.['id'] ?? '0'));
}

export class PostgresLiveExport extends DelegatingLiveExport implements LiveExportSourceCapture {
  /** When this object last purged the export log (see purgeOccasionally). */
  private lastPurge = 0;

  constructor(private readonly context: PostgresExportContext) {
    super(new PostgresExportTarget(context), new PostgresExportSource(context));
  }

  private get db(): Queryable {
    return this.context.pool as unknown as Queryable;
  }

  // source change capture (export-capture.ts)

  private async snapshot(): Promise<string> {
    const { rows } = await this.db.query('SELECT pg_current_snapshot()::text AS snapshot');
    return String(rows[0]!['snapshot']);
  }

  /** Runs `action` in a transaction holding the setup advisory lock, with a bounded wait for table locks. */
  private async setupTransaction<T>(action: (client: Queryable) => Promise<T>): Promise<T> {
    return withWriteTransaction(this.context.pool, async (client) => {
      await client.query(INFRASTRUCTURE_SQL[0]!); // serialises setups, the sync's included
      await client.query(`SET LOCAL lock_timeout = '${CAPTURE_LOCK_TIMEOUT}'`);
      return action(client as unknown as Queryable);
    });
  }

  async startSourceCapture(table: string): Promise<ExportCaptureStart | null> {
    return exportGuard(
      this.context,
      async () => {
        const schema = this.context.schema();
        const token = await this.setupTransaction(async (db) => {
          const meta = await loadTable(db, schema, table);
          if (!meta)
            throw new ConnectorError('not_found', `Table "${table}" does not exist in schema "${schema}"`, {
              appCode: '42P01',
            });
          const key = captureKey(meta);
          if (key === null) return null;
          let doc = await captureState(db, schema, table, key);
          if (!doc || !evaluateCapture(doc).capturable) return null;
          const present = (await db.query(INFRASTRUCTURE_STATE_SQL)).rows[0]!;
          const infrastructure = infrastructureSql({
            schema: present['schema'] === 't',
            log: present['log'] === 't',
            resets: present['resets'] === 't',
            source:
              present['source'] === null || present['source'] === undefined
                ? null
                : String(present['source']),
          });
          for (const statement of infrastructure) await db.query(statement);
          doc = (await captureState(db, schema, table, key))!;
          // Triggers already installed as they should be are left alone, so the token stays the same.
          const repairs = repairTriggerSql(schema, table, evaluateCapture(doc), doc.keyAttnum!);
          for (const statement of repairs) await db.query(statement);
          if (repairs.length > 0) doc = (await captureState(db, schema, table, key))!;
          const installed = await tokenOf(db, schema, table, doc);
          if (installed === null)
            throw new ConnectorError(
              'transient',
              `The change capture of table "${table}" was installed but is incomplete`,
            );
          return installed;
        });
        if (token === null) return null;
        // Taken once the install committed: every transaction that can still write without the triggers has
        // ended (CREATE TRIGGER waited for them), so everything committed after this snapshot is logged.
        return { token, checkpoint: encodeCheckpoint({ v: 1, s: await this.snapshot() }) };
      },
      `Could not start change capture on table "${table}"`,
    );
  }

  async sourceCaptureToken(table: string): Promise<string | null> {
    return exportGuard(
      this.context,
      async () => {
        const schema = this.context.schema();
        const meta = await loadTable(this.db, schema, table);
        const key = meta ? captureKey(meta) : null;
        if (key === null) return null;
        const doc = await captureState(this.db, schema, table, key);
        return doc ? tokenOf(this.db, schema, table, doc) : null;
      },
      `Could not read the change capture of table "${table}"`,
    );
  }

  async readSourceChanges(
    table: string,
    since: string,
    options: { limit: number },
  ): Promise<ExportChangePage> {
    const checkpoint = decodeCheckpoint(since);
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_CHANGE_PAGE);
    return exportGuard(
      this.context,
      async () => {
        const current = checkpoint.c ?? (await this.snapshot());
        const { rows: logRows } = await this.db.query(LOG_PRESENT_SQL);
        // No log, no capture: its token is null, which tells the reader to compare everything.
        if (logRows[0]?.['present'] !== 't')
          return { ids: [], checkpoint: encodeCheckpoint({ v: 1, s: current }), hasMore: false };
        await this.purgeOccasionally();
        const { rows } = await this.db.query(READ_EXPORT_CHANGES_SQL, [
          this.context.schema(),
          table,
          checkpoint.s,
          current,
          checkpoint.a?.[0] ?? null,
          checkpoint.a?.[1] ?? null,
          limit + 1,
        ]);
        const { entries, hasMore, next } = pageOfLog(rows, limit, checkpoint, current);
        return {
          ids: distinctKeys(entries as { pk: unknown }[]),
          checkpoint: encodeCheckpoint(next),
          hasMore,
        };
      },
      `Could not read the changes of table "${table}"`,
    );
  }

  /**
   * Retention: every EXPORT_PURGE_EVERY_MS a reader deletes up to EXPORT_PURGE_BATCH export-log entries older
   * than the retention (all tables). Housekeeping only: a failure here does not fail the read.
   */
  private async purgeOccasionally(): Promise<void> {
    if (Date.now() - this.lastPurge < EXPORT_PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    await this.purgeExportLog().catch(() => undefined);
  }

  /** Deletes up to `batch` export-log entries older than the retention; returns how many. */
  async purgeExportLog(batch = EXPORT_PURGE_BATCH): Promise<number> {
    const result = await this.context.pool.query(PURGE_EXPORT_LOG_SQL, [EXPORT_RETENTION_DAYS, batch]);
    return result.rowCount ?? 0;
  }

  async stopSourceCapture(table: string): Promise<void> {
    await exportGuard(
      this.context,
      async () => {
        const schema = this.context.schema();
        await this.setupTransaction(async (db) => {
          const names = CAPTURE_TRIGGERS.map((trigger) => trigger.name);
          const { rows } = await db.query(PRESENT_TRIGGERS_SQL, [schema, table, names]);
          for (const row of rows)
            await db.query(
              `DROP TRIGGER IF EXISTS ${ident(String(row['name']))} ON ${qualified(schema, table)}`,
            );
          const present = (await db.query(INFRASTRUCTURE_STATE_SQL)).rows[0]!;
          if (present['log'] === 't') await db.query(FORGET_TABLE_SQL(EXPORT_LOG), [schema, table]);
          if (present['resets'] === 't') await db.query(FORGET_TABLE_SQL(EXPORT_RESETS), [schema, table]);
        });
      },
      `Could not stop change capture on table "${table}"`,
    );
  }
}
