/**
 * Test fixture for the worker e2e tests: real scratch databases (a PostgreSQL schema, a MariaDB database), a
 * sync written to the service store the way the API leaves it after a person started it (sides with
 * encrypted credentials, schema cache, stored mappings, status active, initial sync preparing), and the
 * worker, either in this process or as the real `dist/apps/worker/src/main.js` process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '@lockstep/config';
import { newId } from '@lockstep/domain';
import { findConnector } from '@lockstep/connectors-registry';
import { CredentialCipher, sideOwner } from '@lockstep/persistence';
import { WorkerModule } from '../../src/worker.module';

export const PG_URL = process.env['TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const MYSQL_URL = process.env['TEST_MYSQL_URL'] ?? 'mysql://root@127.0.0.1:3306';
export const MASTER_KEY = Buffer.alloc(32, 5).toString('base64');
const ROOT = join(__dirname, '..', '..', '..', '..');

export const unique = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex')}`;

export interface Pg {
  schema: string;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

export async function scratchPg(setup: string): Promise<Pg> {
  const schema = unique('eng');
  const client = new Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path TO ${schema}`);
  if (setup) await client.query(setup);
  return {
    schema,
    sql: async (text, params = []) => (await client.query(text, params)).rows,
    drop: async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await client.end();
    },
  };
}

export interface My {
  database: string;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

export async function scratchMysql(setup: string[]): Promise<My> {
  const database = unique('eng');
  const connection = await mysql.createConnection({ uri: MYSQL_URL });
  await connection.query(`CREATE DATABASE \`${database}\``);
  await connection.query(`USE \`${database}\``);
  for (const statement of setup) await connection.query(statement);
  return {
    database,
    sql: async <T>(text: string, params: unknown[] = []) => (await connection.query(text, params))[0] as T[],
    drop: async () => {
      await connection.query(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => undefined);
      await connection.end();
    },
  };
}

export interface SideSpec {
  connector: 'postgres' | 'mysql';
  base: string;
  /** Connection URL for this side's credentials (default PG_URL / MYSQL_URL), e.g. a proxy in front of the server. */
  url?: string;
}

export interface PairSpec {
  left: string;
  right: string;
  direction?: 'two_way' | 'left_to_right' | 'right_to_left';
  /** [left field, right field, direction?] */
  fields: [string, string, ('two_way' | 'left_to_right' | 'right_to_left')?][];
  leftBehavior?: 'sync' | 'do_nothing';
  rightBehavior?: 'sync' | 'do_nothing';
  filter?: unknown;
  advancedSettings?: unknown;
}

export interface SyncSpec {
  left: SideSpec;
  right: SideSpec;
  pairs: PairSpec[];
  deleteApproval?: 'review_required' | 'auto_approve';
  prefer?: 'left' | 'right';
  match?: { tablePair: number; leftField: string; rightField: string }[];
  /** An existing account to own the sync (default: a new account). */
  accountId?: string;
}

const credentialsFor = (side: SideSpec) => ({
  connectionString: side.url ?? (side.connector === 'postgres' ? PG_URL : MYSQL_URL),
});

/** The service store (the test database of the jest global setup). */
export async function store(): Promise<DataSource> {
  const db = new DataSource({ type: 'postgres', url: process.env['DATABASE_URL'], entities: [] });
  await db.initialize();
  return db;
}

/** Writes a started sync the way the API leaves it; returns its ids. */
export async function createStartedSync(
  db: DataSource,
  spec: SyncSpec,
): Promise<{ syncId: string; accountId: string }> {
  const cipher = new CredentialCipher(loadConfig(process.env, { LOCKSTEP_MASTER_KEY: MASTER_KEY }));
  const accountId = spec.accountId ?? newId('account');
  if (!spec.accountId)
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
  const syncId = newId('sync');
  await db.query(
    `INSERT INTO syncs (id, account_id, name, delete_approval) VALUES ($1, $2, 'engine test', $3)`,
    [syncId, accountId, spec.deleteApproval ?? 'review_required'],
  );
  const ids: Record<'left' | 'right', Map<string, { id: string; fields: Map<string, string> }>> = {
    left: new Map(),
    right: new Map(),
  };
  for (const side of ['left', 'right'] as const) {
    const sideSpec = spec[side];
    const credentials = credentialsFor(sideSpec);
    await db.query(
      `INSERT INTO sync_sides (sync_id, side, connector, auth_method, base_id, base_name, credentials, credential_fingerprint, auth_status, connected_via, connected_at)
       VALUES ($1, $2, $3, 'api_key', $4, $4, $5, $6, 'ok', 'api', now())`,
      [
        syncId,
        side,
        sideSpec.connector,
        sideSpec.base,
        cipher.encrypt(credentials, sideOwner(syncId, side)),
        cipher.fingerprint(sideSpec.connector, credentials),
      ],
    );
    const connection = await findConnector(sideSpec.connector)!.connect(credentials, sideSpec.base, {
      egress: { allowPrivate: true, allowLoopback: true },
    });
    try {
      const tables = new Set(spec.pairs.map((pair) => pair[side]));
      for (const table of tables) {
        await connection.prepareTable(table, { changeCapture: false, serviceIdColumn: true });
        const tableId = newId('table');
        await db.query(
          `INSERT INTO sync_tables (id, sync_id, side, remote_id, name, fields_fetched_at) VALUES ($1, $2, $3, $4, $4, now())`,
          [tableId, syncId, side, table],
        );
        const fields = new Map<string, string>();
        for (const [position, field] of (await connection.listFields(table)).entries()) {
          const fieldId = newId('field');
          fields.set(field.remoteId, fieldId);
          await db.query(
            `INSERT INTO sync_fields (id, table_id, remote_id, name, type, type_class, read, write, required, is_primary, type_details, position)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
            [
              fieldId,
              tableId,
              field.remoteId,
              field.name,
              field.type,
              field.typeClass,
              field.read,
              field.write,
              field.required,
              field.primary,
              field.typeDetails ? JSON.stringify(field.typeDetails) : null,
              position,
            ],
          );
        }
        ids[side].set(table, { id: tableId, fields });
      }
    } finally {
      await connection.close();
    }
  }
  const field = (side: 'left' | 'right', table: string, name: string) => {
    const id = ids[side].get(table)?.fields.get(name);
    if (!id) throw new Error(`fixture: no field ${side}.${table}.${name}`);
    return id;
  };
  const mappings = {
    tables: spec.pairs.map((pair) => ({
      left_table: ids.left.get(pair.left)!.id,
      right_table: ids.right.get(pair.right)!.id,
      direction: pair.direction ?? 'two_way',
      left: { record_delete_behavior: pair.leftBehavior ?? 'sync' },
      right: { record_delete_behavior: pair.rightBehavior ?? 'sync' },
      fields: pair.fields.map(([l, r, direction]) => ({
        left_field: field('left', pair.left, l),
        right_field: field('right', pair.right, r),
        ...(direction ? { direction } : {}),
      })),
      ...(pair.filter ? { filter: pair.filter } : {}),
      ...(pair.advancedSettings ? { advanced_settings: pair.advancedSettings } : {}),
    })),
  };
  await db.query(
    `UPDATE syncs SET mappings = $2, status = 'active', initial_sync_phase = 'preparing', initial_sync_started_at = now(), reviewed_revision = mappings_revision,
       start_options = $3, started_at = now() WHERE id = $1`,
    [
      syncId,
      JSON.stringify(mappings),
      JSON.stringify({ prefer: spec.prefer ?? 'left', match: spec.match ?? [] }),
    ],
  );
  return { syncId, accountId };
}

function workerEnv(accountId: string, extra: Record<string, string>): Record<string, string> {
  return {
    LOCKSTEP_MASTER_KEY: MASTER_KEY,
    ENGINE_ACCOUNT_ID: accountId,
    ENGINE_LEASE_SECONDS: '3',
    ...extra,
  };
}

/** The worker in this process, limited to one account's syncs. */
export async function inProcessWorker(
  accountId: string,
  extra: Record<string, string> = {},
): Promise<INestApplicationContext> {
  const config = loadConfig({ ...process.env, ...workerEnv(accountId, extra) });
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { logger: false });
  await app.init();
  return app;
}

/** The real worker process (`dist/apps/worker/src/main.js`), for crash tests. */
export function workerProcess(accountId: string, extra: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
    env: {
      ...process.env,
      ...workerEnv(accountId, extra),
      LOG_LEVEL: process.env['ENGINE_TEST_LOG'] ?? 'silent',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return child;
}

/** SIGKILLs a worker process (when still running) and waits until it has exited. */
export async function killProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/**
 * A count once it has stopped moving for `quietMs` (at most `timeoutMs`): the app writes of a change land just
 * before the store commit that records its operations, so a count read the moment the apps converge can be short.
 */
export async function settledCount(
  count: () => Promise<number>,
  quietMs = 1000,
  timeoutMs = 15_000,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = await count();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = await count();
    if (now === last) return now;
    last = now;
  }
  throw new Error(`the count kept moving for ${timeoutMs} ms (last ${last})`);
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(
    `timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : String(last)}` : ''}`,
  );
}

export async function phase(db: DataSource, syncId: string): Promise<string> {
  return (
    (await db.query(`SELECT initial_sync_phase FROM syncs WHERE id = $1`, [syncId])) as {
      initial_sync_phase: string;
    }[]
  )[0]!.initial_sync_phase;
}
