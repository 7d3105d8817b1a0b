/**
 * Test fixture for live export worker e2e tests: a saved live export written to the service store the way the
 * API leaves it after create + save (encrypted credentials bound to the export, the plan, the destination
 * tables provisioned through the connector layer), a Bull queue on a queue prefix of the test's own (so no
 * other test's worker takes its jobs), and helpers to read runs and drive the test clock.
 */
import { randomBytes } from 'node:crypto';
import Bull, { type Queue } from 'bull';
import type { DataSource } from 'typeorm';
import { loadConfig } from '@lockstep/config';
import { newId } from '@lockstep/domain';
import { exportCaptureOf, type LiveExportSourceCapture } from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import type { LiveExportPlan } from '@lockstep/domain';
import { CredentialCipher, liveExportOwner } from '@lockstep/persistence';
import { LIVE_EXPORT_JOBS, QUEUES } from '@lockstep/jobs';
import { MASTER_KEY, MYSQL_URL, PG_URL, waitFor } from './fixture';

export const egress = { allowPrivate: true, allowLoopback: true };

export interface ExportSpec {
  /** `url`: a connection string other than the test server's admin one (e.g. a role with fewer privileges). */
  source: { connector: 'postgres' | 'mysql'; base: string; url?: string };
  destination: { connector: 'postgres' | 'mysql'; location: string };
  tables: LiveExportPlan['tables'];
  plan?: 'pro' | 'business';
}

const credentials = (connector: 'postgres' | 'mysql') => ({
  connectionString: connector === 'postgres' ? PG_URL : MYSQL_URL,
});

export async function createAccount(db: DataSource, plan: 'pro' | 'business' = 'business'): Promise<string> {
  const accountId = newId('account');
  await db.query(`INSERT INTO accounts (id, email, password_hash, plan) VALUES ($1, $2, 'x', $3)`, [
    accountId,
    `${accountId}@example.com`,
    plan,
  ]);
  return accountId;
}

/** A saved live export (plan written, destination tables provisioned); returns its id. */
export async function createSavedExport(
  db: DataSource,
  accountId: string,
  spec: ExportSpec,
): Promise<string> {
  const cipher = new CredentialCipher(loadConfig(process.env, { LOCKSTEP_MASTER_KEY: MASTER_KEY }));
  const id = newId('liveExport');
  const plan: LiveExportPlan = {
    source: { connector: spec.source.connector, base: spec.source.base },
    destination: spec.destination,
    tables: spec.tables,
  };
  await db.query(
    `INSERT INTO live_exports (id, account_id, name, source_connector, source_base, source_credentials, source_auth_method, source_connected_at,
       destination_connector, destination_location, destination_credentials, destination_auth_method, destination_connected_at, saved_version, saved_at, plan)
     VALUES ($1, $2, 'export test', $3, $4, $5, 'api_key', now(), $6, $7, $8, 'api_key', now(), 1, now(), $9)`,
    [
      id,
      accountId,
      spec.source.connector,
      spec.source.base,
      cipher.encrypt(
        spec.source.url ? { connectionString: spec.source.url } : credentials(spec.source.connector),
        liveExportOwner(id, 'source'),
      ),
      spec.destination.connector,
      spec.destination.location,
      cipher.encrypt(credentials(spec.destination.connector), liveExportOwner(id, 'destination')),
      JSON.stringify(plan),
    ],
  );
  const connection = await findConnector(spec.destination.connector)!.connect(
    credentials(spec.destination.connector),
    spec.destination.location,
    { egress },
  );
  try {
    for (const table of spec.tables) {
      await connection.liveExport!.provisionExportTable({
        name: table.destinationTable,
        columns: table.columns.map((column) => ({
          name: column.column,
          typeClass: column.typeClass,
          sourceType: column.sourceType,
          typeDetails: column.typeDetails ?? null,
        })),
      });
    }
  } finally {
    await connection.close();
  }
  return id;
}

export interface RunRow {
  id: string;
  state: string;
  trigger: string;
  slot_at: Date | null;
  rows_read: string;
  rows_written: string;
  rows_removed: string;
  error: { code: string; message: string } | null;
  finished_at: Date | null;
  cancel_requested_at: Date | null;
}

export async function getRun(db: DataSource, runId: string): Promise<RunRow> {
  return ((await db.query(`SELECT * FROM live_export_runs WHERE id = $1`, [runId])) as RunRow[])[0]!;
}

export async function runsOf(db: DataSource, liveExportId: string): Promise<RunRow[]> {
  return (await db.query(`SELECT * FROM live_export_runs WHERE live_export_id = $1 ORDER BY created_at`, [
    liveExportId,
  ])) as RunRow[];
}

/** A queue prefix of the test's own, and the Bull queue on it. */
export function testQueue(): { prefix: string; queue: Queue } {
  const prefix = `lockstep-lx-test-${randomBytes(4).toString('hex')}`;
  const queue = new Bull(QUEUES.liveExport, process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', { prefix });
  return { prefix, queue };
}

/** Inserts a queued manual run and adds its job, as the API's trigger does. */
export async function triggerRun(
  db: DataSource,
  queue: Queue,
  accountId: string,
  liveExportId: string,
): Promise<string> {
  const runId = newId('run');
  await db.query(
    `INSERT INTO live_export_runs (id, live_export_id, account_id, state, trigger) VALUES ($1, $2, $3, 'queued', 'manual')`,
    [runId, liveExportId, accountId],
  );
  await queue.add(LIVE_EXPORT_JOBS.run, { runId }, { jobId: `run:${runId}`, removeOnComplete: 100 });
  return runId;
}

export async function finished(db: DataSource, runId: string, timeoutMs = 45_000): Promise<RunRow> {
  return waitFor(
    `run ${runId} to finish`,
    async () => {
      const run = await getRun(db, runId);
      return ['succeeded', 'failed', 'canceled'].includes(run.state) ? run : null;
    },
    timeoutMs,
    50,
  );
}

/** Waits until a worker process has registered on the queue (its tick repeatable exists). */
export async function workerReady(queue: Queue): Promise<void> {
  await waitFor(
    'the worker to register its live export tick',
    async () => (await queue.getRepeatableJobs()).some((job) => job.name === LIVE_EXPORT_JOBS.tick),
    30_000,
    100,
  );
}

/** Runs `work` with the export capture layer of a source (to look at or remove its change capture as a person or another export would). */
export async function withSourceCapture<T>(
  source: { connector: 'postgres' | 'mysql'; base: string },
  work: (capture: LiveExportSourceCapture) => Promise<T>,
): Promise<T> {
  const connection = await findConnector(source.connector)!.connect(
    credentials(source.connector),
    source.base,
    { egress },
  );
  try {
    const capture = exportCaptureOf(connection);
    if (!capture) throw new Error(`the ${source.connector} connector has no export change capture`);
    return await work(capture);
  } finally {
    await connection.close();
  }
}

export interface CaptureRow {
  source_table: string;
  destination_table: string;
  token: string;
  checkpoint: string;
  full_compare_at: Date;
  released_at: Date | null;
}

export async function capturesOf(db: DataSource, liveExportId: string): Promise<CaptureRow[]> {
  return (await db.query(
    `SELECT * FROM live_export_captures WHERE live_export_id = $1 ORDER BY source_table`,
    [liveExportId],
  )) as CaptureRow[];
}
