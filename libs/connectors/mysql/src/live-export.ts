/**
 * Live export for MySQL / MariaDB (see libs/connectors/core/src/live-export.ts): one object that is the
 * connection's target (export-target.ts), source (export-source.ts) and source change capture, each method
 * delegating.
 *
 * The source's change capture (`LiveExportSourceCapture`, export-capture.ts): its own triggers log changed
 * keys into `lockstep_export_log`, so a run reads the ids changed since its checkpoint instead of hashing
 * the whole table.
 */
import {
  ConnectorError,
  DelegatingLiveExport,
  type ExportCaptureStart,
  type ExportChangePage,
  type LiveExportSourceCapture,
} from '@lockstep/connectors-core';
import { findTableMeta, loadTableMeta } from './catalog';
import { logExists } from './change-capture';
import type { Db } from './db';
import {
  capturableKey,
  EXPORT_LOG_TABLE,
  exportCaptureToken,
  installExportCapture,
  removeExportCapture,
} from './export-capture';
import { exportCheckpoint, purgeExportLog, readExportChanges } from './export-feed';
import { MAX_SOURCE_PAGE, MysqlExportSource } from './export-source';
import { MysqlExportTarget } from './export-target';

/** The export log is purged at most this often per connection (as the sync's change log is). */
const PURGE_EVERY_MS = 10 * 60_000;

export class MysqlLiveExport extends DelegatingLiveExport implements LiveExportSourceCapture {
  private lastCapturePurge = 0;

  constructor(
    private readonly db: Db,
    private readonly database: () => string,
    invalidate: (table: string) => void,
  ) {
    super(new MysqlExportTarget(db, database, invalidate), new MysqlExportSource(db, database));
  }

  // source change capture (export-capture.ts)

  async startSourceCapture(name: string): Promise<ExportCaptureStart | null> {
    const database = this.database();
    const server = await this.db.server();
    return this.db.withConnection(async (connection) => {
      const meta = await loadTableMeta(connection, database, name, server);
      const key = await capturableKey(connection, database, meta);
      if (!key) return null;
      await installExportCapture(connection, database, name, key);
      const token = await exportCaptureToken(connection, database, name, key);
      if (!token)
        throw new ConnectorError(
          'transient',
          `The change capture of "${name}" was removed while it was being installed; try again`,
        );
      // Taken after the install: every change committed after it is logged.
      return { token, checkpoint: await exportCheckpoint(connection, database) };
    }, `Could not install change capture on "${name}"`);
  }

  async sourceCaptureToken(name: string): Promise<string | null> {
    const database = this.database();
    const server = await this.db.server();
    return this.db.withConnection(async (connection) => {
      const meta = await findTableMeta(connection, database, name, server);
      if (!meta) return null;
      const key = await capturableKey(connection, database, meta);
      return key ? exportCaptureToken(connection, database, name, key) : null;
    }, `Could not read the change capture of "${name}"`);
  }

  async readSourceChanges(
    name: string,
    since: string,
    options: { limit: number },
  ): Promise<ExportChangePage> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    const database = this.database();
    await this.purgeCaptureLog();
    return this.db.withConnection(
      (connection) => readExportChanges(connection, { database, table: name, since, limit }),
      `Could not read the changes of "${name}"`,
    );
  }

  async stopSourceCapture(name: string): Promise<void> {
    const database = this.database();
    await this.db.withConnection(
      (connection) => removeExportCapture(connection, database, name),
      `Could not remove the change capture of "${name}"`,
    );
  }

  /** Deletes log entries past the retention now and then (a bounded batch); never fails the read. */
  private async purgeCaptureLog(): Promise<void> {
    if (Date.now() - this.lastCapturePurge < PURGE_EVERY_MS) return;
    this.lastCapturePurge = Date.now();
    const database = this.database();
    await this.db
      .withConnection(async (connection) => {
        if (await logExists(connection, database, EXPORT_LOG_TABLE)) await purgeExportLog(connection);
      })
      .catch(() => undefined);
  }
}
