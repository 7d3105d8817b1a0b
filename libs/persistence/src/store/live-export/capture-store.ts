/**
 * The live export's change-capture state per source table (`live_export_captures`, see the migration): what a
 * run needs to write only the rows changed since the last run, and the rows of released captures (export
 * deleted, table unmapped) waiting for the worker to remove the capture from the source database.
 */
import type { EntityManager } from 'typeorm';

export interface CaptureState {
  sourceTable: string;
  destinationTable: string;
  token: string;
  checkpoint: string;
  salt: string;
  checkpointAt: Date;
  fullCompareAt: Date;
}

export interface ReleasedCapture {
  sourceTable: string;
  connector: string | null;
  base: string | null;
  credentials: Buffer | null;
}

interface Row {
  source_table: string;
  destination_table: string;
  token: string;
  checkpoint: string;
  salt: string;
  checkpoint_at: Date;
  full_compare_at: Date;
}

const LOAD_SQL = `
  SELECT source_table, destination_table, token, checkpoint, salt, checkpoint_at, full_compare_at
    FROM live_export_captures
   WHERE live_export_id = $1 AND released_at IS NULL`;

const SAVE_SQL = `
  INSERT INTO live_export_captures (live_export_id, account_id, source_table, destination_table, token,
                                    checkpoint, salt, checkpoint_at, full_compare_at)
  SELECT e.id, e.account_id, $2, $3, $4, $5, $6, $7, $8 FROM live_exports e WHERE e.id = $1
  ON CONFLICT (live_export_id, source_table) DO UPDATE
     SET destination_table = EXCLUDED.destination_table, token = EXCLUDED.token,
         checkpoint = EXCLUDED.checkpoint, salt = EXCLUDED.salt, checkpoint_at = EXCLUDED.checkpoint_at,
         full_compare_at = EXCLUDED.full_compare_at
   WHERE live_export_captures.released_at IS NULL`;

const FORGET_SQL = `
  DELETE FROM live_export_captures WHERE live_export_id = $1 AND source_table = $2`;

const RELEASED_SQL = `
  SELECT source_table, connector, base, credentials
    FROM live_export_captures
   WHERE live_export_id = $1 AND released_at IS NOT NULL
   ORDER BY source_table`;

const STALE_RELEASES_SQL = `
  SELECT DISTINCT live_export_id
    FROM live_export_captures
   WHERE released_at IS NOT NULL AND released_at < now() - make_interval(secs => $1)
     AND ($2::text IS NULL OR account_id = $2)
   LIMIT 50`;

/**
 * Every capture of the export is released, carrying the source connector, base and sealed credentials (still
 * bound to the export's source, `liveExportOwner`), so the worker can reach the source and remove the capture
 * after the export row is gone.
 */
const RELEASE_ALL_SQL = `
  UPDATE live_export_captures c
     SET released_at = now(), connector = e.source_connector,
         base = coalesce(e.plan->'source'->>'base', e.source_base), credentials = e.source_credentials
    FROM live_exports e
   WHERE e.id = $1 AND c.live_export_id = e.id AND c.released_at IS NULL`;

export class CaptureStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  /** The export's capture states (released ones left out), by source table. */
  async load(liveExportId: string): Promise<Map<string, CaptureState>> {
    const rows: Row[] = await this.db.query(LOAD_SQL, [liveExportId]);
    return new Map(
      rows.map((row) => [
        row.source_table,
        {
          sourceTable: row.source_table,
          destinationTable: row.destination_table,
          token: row.token,
          checkpoint: row.checkpoint,
          salt: row.salt,
          checkpointAt: new Date(row.checkpoint_at),
          fullCompareAt: new Date(row.full_compare_at),
        },
      ]),
    );
  }

  /**
   * Records the state a finished table left (only while the export exists; a deleted export keeps nothing).
   */
  async save(liveExportId: string, state: CaptureState): Promise<void> {
    await this.db.query(SAVE_SQL, [
      liveExportId,
      state.sourceTable,
      state.destinationTable,
      state.token,
      state.checkpoint,
      state.salt,
      state.checkpointAt,
      state.fullCompareAt,
    ]);
  }

  /** Forgets a table's state (the next run compares it in full). */
  async forget(liveExportId: string, sourceTable: string): Promise<void> {
    await this.db.query(FORGET_SQL, [liveExportId, sourceTable]);
  }

  /** Released captures of an export (deleted export), with what the worker needs to reach the source. */
  async released(liveExportId: string): Promise<ReleasedCapture[]> {
    const rows: {
      source_table: string;
      connector: string | null;
      base: string | null;
      credentials: Buffer | null;
    }[] = await this.db.query(RELEASED_SQL, [liveExportId]);
    return rows.map((row) => ({
      sourceTable: row.source_table,
      connector: row.connector,
      base: row.base,
      credentials: row.credentials,
    }));
  }

  /**
   * Export ids with released captures older than `seconds` (their release job was lost or failed for good).
   */
  async staleReleases(seconds: number, accountId: string | null): Promise<string[]> {
    const rows: { live_export_id: string }[] = await this.db.query(STALE_RELEASES_SQL, [seconds, accountId]);
    return rows.map((row) => row.live_export_id);
  }

  /**
   * Releases every capture of the export, in the delete's transaction before the export row goes (the worker
   * removes them from the source afterwards). Returns how many were released.
   */
  async releaseAll(liveExportId: string): Promise<number> {
    const [, released] = (await this.db.query(RELEASE_ALL_SQL, [liveExportId])) as [unknown, number];
    return released;
  }
}
