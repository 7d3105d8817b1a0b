/**
 * The write ceiling of an initial sync: the rows that an initial sync of N records must write, written with
 * every byte of their text built before the clock starts, and nothing read, compared or decided. The engine
 * cannot be faster than this on the same machine, whatever its own code costs, as long as it stores what the
 * design asks for: per record, the target row, one record link (the left shadow, the right one as `"="`, both
 * content hashes, the seen times, its operation's id) and one `created` operation with its `field_changes`,
 * stored as the engine stores an initial sync's creates: one `operation_batches` row per page.
 *
 * - Target rows: in batches of 500 (`ENGINE_WRITE_BATCH`) into a fresh table prepared by the connector with a
 *   service id column, as the raw write's table is; PostgreSQL by `COPY`, MariaDB by a multi-row `INSERT`.
 * - Store rows: pages of 1,000 (`ENGINE_PAGE_SIZE`), each page's links by `COPY` and its batch of operations
 *   by one `INSERT`, in one transaction with `synchronous_commit = off`, in the columns and the text form
 *   `insertLinks` and `insertOperationBatches` use (libs/persistence/src/store: record-links, operations), into the migrated service
 *   store. The pages go over one store connection, or over two taking turns (the engine has up to two page
 *   commits under way).
 * - The target writes and the store writes run at the same time, each on its own connection.
 *
 * The rows are under a sync id of their own and deleted afterwards (then the two tables are vacuumed), and the
 * target table is dropped.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import mysql from 'mysql2/promise';
import { Client } from 'pg';
import { copyBuffer } from '@lockstep/persistence';
import { type AppSide, canonicalRow, uniqueName } from './apps';
import { ServerCpuSampler, type ServiceStore } from './service';

export interface WriteCeiling {
  rows: number;
  storeConnections: number;
  seconds: number;
  rowsPerSecond: number;
  /** Time this process took to build the texts before the clock started (one thread, nothing else to do). */
  buildSeconds: number;
  /** CPU seconds of the database servers while it ran (PostgreSQL: service store and app together). */
  serverCpuSeconds: { postgres: number; mariadb: number };
}

const TARGET_BATCH = 500;
const STORE_PAGE = 1000;
const LINK_COLUMNS =
  'id, sync_id, table_pair, service_id, name, left_remote_id, right_remote_id, left_shadow, right_shadow, left_hash, right_hash, left_seen_at, right_seen_at, created_op';
const INSERT_BATCH = `
  INSERT INTO operation_batches (id, sync_id, table_pair, side, table_id, table_name, action, trigger, size,
     records, field_changes)
  VALUES ($1, $2, 0, $3, $4, $5, 'created', 'push', $6, $7::json, $8::json)`;

/** A page's operations as one batch: its parameters of `INSERT_BATCH`, texts built. */
type BatchParams = [string, string, string, string, string, number, string, string];

/** An id of the service's form (`rec_` / `op_` and 20 lowercase letters and digits), unique per `i`. */
const serviceId = (prefix: string, i: number) => `${prefix}_${i.toString(36).padStart(20, '0')}`;

/** A 27-character base64url text, the length of a content hash. */
const hashText = (i: number) => Buffer.from(`${i}`.padStart(20, '0')).toString('base64url');

function storePages(
  rows: number,
  syncId: string,
  tableId: string,
  table: string,
  targetSide: 'left' | 'right',
  serviceIds: string[],
  now: string,
): { links: Buffer; batch: BatchParams }[] {
  const pages: { links: Buffer; batch: BatchParams }[] = [];
  for (let first = 1; first <= rows; first += STORE_PAGE) {
    const links: string[] = [];
    const records: string[] = [];
    const operations: string[] = [];
    const batchId = `op_${first.toString(36).padStart(16, '0')}`;
    for (let i = first; i <= Math.min(rows, first + STORE_PAGE - 1); i += 1) {
      const values = canonicalRow(i);
      const sorted = Object.keys(values).sort();
      const shadow = `{${sorted.map((field) => `${JSON.stringify(field)}:${JSON.stringify(values[field])}`).join(',')}}`;
      const changes = `[${Object.entries(values)
        .map(([field, value]) => `{"field":${JSON.stringify(field)},"after":${JSON.stringify(value)}}`)
        .join(',')}]`;
      const record = serviceId('rec', i);
      const name = String(values['name']);
      links.push(
        [
          record,
          syncId,
          0,
          serviceIds[i - 1],
          name,
          i,
          i,
          shadow,
          '"="',
          hashText(i),
          hashText(i),
          now,
          now,
          batchId + (i - first).toString(36).padStart(4, '0'),
        ].join('\t'),
      );
      records.push(JSON.stringify([record, String(i), name]));
      operations.push(changes);
    }
    pages.push({
      links: Buffer.from(`${links.join('\n')}\n`),
      batch: [
        batchId,
        syncId,
        targetSide,
        tableId,
        table,
        records.length,
        `[${records.join(',')}]`,
        `[${operations.join(',')}]`,
      ],
    });
  }
  return pages;
}

/** The target writes as statements or COPY texts, one per batch, and the function that sends one. */
async function targetWriter(
  target: AppSide,
  table: string,
  serviceIds: string[],
  rows: number,
): Promise<{
  batches: (string | Buffer)[];
  send(batch: string | Buffer): Promise<void>;
  close(): Promise<void>;
}> {
  const batches: (string | Buffer)[] = [];
  for (let first = 1; first <= rows; first += TARGET_BATCH) {
    const lines: string[] = [];
    for (let i = first; i <= Math.min(rows, first + TARGET_BATCH - 1); i += 1) {
      const row = canonicalRow(i);
      const at = String(row['updated_at']).replace('T', ' ').replace('Z', '');
      lines.push(
        target.kind === 'postgres'
          ? [row['id'], row['name'], row['qty'], row['note'], `${at}+00`, serviceIds[i - 1]].join('\t')
          : `(${row['id']},'${String(row['name'])}',${row['qty']},'${String(row['note'])}','${at}','${serviceIds[i - 1]}')`,
      );
    }
    batches.push(
      target.kind === 'postgres'
        ? Buffer.from(`${lines.join('\n')}\n`)
        : `INSERT INTO \`${table}\` (id, name, qty, note, updated_at, lockstep_id) VALUES ${lines.join(',')}`,
    );
  }
  const url = target.credentials['connectionString']!;
  if (target.kind === 'postgres') {
    const client = new Client({ connectionString: url });
    await client.connect();
    const statement = `COPY "${target.base}"."${table}" (id, name, qty, note, updated_at, lockstep_id) FROM STDIN`;
    return {
      batches,
      send: (batch) => copyBuffer(client, statement, batch as Buffer),
      close: () => client.end(),
    };
  }
  const connection = await mysql.createConnection({ uri: url, database: target.base });
  await connection.query(`SET time_zone = '+00:00'`);
  return {
    batches,
    send: async (batch) => {
      await connection.query(batch as string);
    },
    close: () => connection.end(),
  };
}

/**
 * Writes the ceiling's rows (see the file comment) and times them: from the first statement to the last
 * commit, the texts already built.
 */
export async function writeCeiling(
  store: ServiceStore,
  target: AppSide,
  rows: number,
  storeConnections: 1 | 2,
): Promise<WriteCeiling> {
  const table = `ceiling_write_${storeConnections}`;
  const syncId = uniqueName('sync_ceiling');
  await target.createTable(table);
  const prepared = await target.connect();
  try {
    await prepared.prepareTable(table, { changeCapture: false, serviceIdColumn: true });
  } finally {
    await prepared.close();
  }
  const serviceIds = Array.from({ length: rows }, () => randomUUID());
  const now = (await store.sql<{ now: string }>(`SELECT now()::text AS now`))[0]!.now;
  const building = performance.now();
  const pages = storePages(
    rows,
    syncId,
    uniqueName('table_ceiling'),
    table,
    target.kind === 'postgres' ? 'left' : 'right',
    serviceIds,
    now,
  );
  const writer = await targetWriter(target, table, serviceIds, rows);
  const buildSeconds = (performance.now() - building) / 1000;
  const clients = Array.from({ length: storeConnections }, () => new Client({ connectionString: store.url }));
  try {
    for (const client of clients) await client.connect();
    const servers = new ServerCpuSampler();
    servers.start();
    const started = performance.now();
    await Promise.all([
      (async () => {
        for (const batch of writer.batches) await writer.send(batch);
      })(),
      ...clients.map(async (client, turn) => {
        for (let page = turn; page < pages.length; page += clients.length) {
          await client.query('BEGIN');
          await client.query('SET LOCAL synchronous_commit = off');
          await copyBuffer(client, `COPY record_links (${LINK_COLUMNS}) FROM STDIN`, pages[page]!.links);
          await client.query(INSERT_BATCH, pages[page]!.batch);
          await client.query('COMMIT');
        }
      }),
    ]);
    const seconds = (performance.now() - started) / 1000;
    return {
      rows,
      storeConnections,
      seconds,
      rowsPerSecond: rows / seconds,
      buildSeconds,
      serverCpuSeconds: servers.stop(),
    };
  } finally {
    for (const client of clients) await client.end().catch(() => undefined);
    await writer.close().catch(() => undefined);
    await store.sql(`DELETE FROM record_links WHERE sync_id = $1`, [syncId]);
    await store.sql(`DELETE FROM operation_batches WHERE sync_id = $1`, [syncId]);
    // Their dead index entries would otherwise slow down whatever writes the store next.
    await store.sql(`VACUUM record_links, operation_batches`);
    await target.sql(
      target.kind === 'postgres'
        ? `DROP TABLE IF EXISTS "${target.base}"."${table}" CASCADE`
        : `DROP TABLE IF EXISTS \`${table}\``,
    );
  }
}
