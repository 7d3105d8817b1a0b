import type { DataSource } from 'typeorm';
import { liveExportOwner } from '../entities/live-export.entity';
import { type CredentialCipher, sideOwner } from './credential-cipher';

/**
 * The additional authenticated data of a console sign-in flow's sealed secrets (keyed by the handle's hash).
 */
export const oauthFlowOwner = (handleHash: Buffer): string => `console-oauth:${handleHash.toString('hex')}`;

/** One stored column of sealed credentials: its table, primary key, and the owner each row is bound to. */
interface SealedColumn {
  name: string;
  table: string;
  keys: string[];
  column: string;
  owner(row: Record<string, unknown>): string;
  /**
   * Extra columns the new value depends on (an api-key side's fingerprint is recomputed under the new key).
   */
  extra?: {
    select: string[];
    set: string;
    value(
      row: Record<string, unknown>,
      credentials: Record<string, string>,
      cipher: CredentialCipher,
    ): string | null;
  };
}

const SEALED_COLUMNS: SealedColumn[] = [
  {
    name: 'sync side',
    table: 'sync_sides',
    keys: ['sync_id', 'side'],
    column: 'credentials',
    owner: (row) => sideOwner(String(row['sync_id']), String(row['side'])),
    // An oauth side's fingerprint is of the sign-in identity, which is not stored: it keeps its value.
    extra: {
      select: ['connector', 'auth_method'],
      set: 'credential_fingerprint',
      value: (row, credentials, cipher) =>
        row['auth_method'] === 'api_key' ? cipher.fingerprint(String(row['connector']), credentials) : null,
    },
  },
  {
    name: 'live export source',
    table: 'live_exports',
    keys: ['id'],
    column: 'source_credentials',
    owner: (row) => liveExportOwner(String(row['id']), 'source'),
  },
  {
    name: 'live export destination',
    table: 'live_exports',
    keys: ['id'],
    column: 'destination_credentials',
    owner: (row) => liveExportOwner(String(row['id']), 'destination'),
  },
  {
    name: 'released live export capture',
    table: 'live_export_captures',
    keys: ['live_export_id', 'source_table'],
    column: 'credentials',
    owner: (row) => liveExportOwner(String(row['live_export_id']), 'source'),
  },
  {
    name: 'console sign-in flow',
    table: 'console_oauth_flows',
    keys: ['handle_hash'],
    column: 'sealed',
    owner: (row) => oauthFlowOwner(row['handle_hash'] as Buffer),
  },
];

export interface RotationReport {
  /** Values now sealed with the current key. */
  rotated: number;
  /**
   * Values another writer changed between the read and the write: theirs stands (a rerun checks it again).
   */
  changed_concurrently: number;
  /** Values no configured key opens: the row and the reason. */
  unreadable: { column: string; row: string; reason: string }[];
  /** Values still not sealed with the current key after the run. */
  remaining: number;
}

/**
 * Re-seals every stored credential that the current master key did not seal, in keyset-ordered batches. Each
 * write is conditional on the value read (`... AND column = old`), so a credential written meanwhile (already
 * under the current key, by a process configured with it) is never overwritten; running it again is harmless.
 */
export class CredentialRotation {
  constructor(
    private readonly db: DataSource,
    private readonly cipher: CredentialCipher,
  ) {}

  async rotate(batchSize = 100): Promise<RotationReport> {
    const report: RotationReport = { rotated: 0, changed_concurrently: 0, unreadable: [], remaining: 0 };
    for (const column of SEALED_COLUMNS) await this.rotateColumn(column, batchSize, report);
    for (const column of SEALED_COLUMNS) report.remaining += await this.countStale(column);
    return report;
  }

  private async rotateColumn(column: SealedColumn, batchSize: number, report: RotationReport): Promise<void> {
    let after: unknown[] | null = null;
    for (;;) {
      const rows = await this.staleBatch(column, after, batchSize);
      for (const row of rows) await this.rotateRow(column, row, report);
      if (rows.length < batchSize) return;
      const last = rows[rows.length - 1]!;
      after = column.keys.map((key) => last[key]);
    }
  }

  private async rotateRow(
    column: SealedColumn,
    row: Record<string, unknown>,
    report: RotationReport,
  ): Promise<void> {
    const old = row[column.column] as Buffer;
    let credentials: Record<string, string>;
    try {
      credentials = this.cipher.decrypt(old, column.owner(row));
    } catch (error) {
      const id = column.keys
        .map((key) => (Buffer.isBuffer(row[key]) ? (row[key] as Buffer).toString('hex') : String(row[key])))
        .join(' ');
      report.unreadable.push({
        column: column.name,
        row: id,
        reason: error instanceof Error ? error.message : String(error),
      });
      return;
    }
    const sealed = this.cipher.encrypt(credentials, column.owner(row));
    const extra = column.extra?.value(row, credentials, this.cipher) ?? null;
    const where = column.keys.map((key, i) => `${key} = $${i + 3}`).join(' AND ');
    const set =
      column.extra && extra !== null
        ? `${column.column} = $1, ${column.extra.set} = $${column.keys.length + 3}`
        : `${column.column} = $1`;
    const params = [
      sealed,
      old,
      ...column.keys.map((key) => row[key]),
      ...(column.extra && extra !== null ? [extra] : []),
    ];
    const [, affected] = (await this.db.query(
      `UPDATE ${column.table} SET ${set} WHERE ${where} AND ${column.column} = $2`,
      params,
    )) as [unknown, number];
    if (affected === 1) report.rotated += 1;
    else report.changed_concurrently += 1;
  }

  /**
   * Up to `limit` rows after the keyset position `after` whose value does not start with the current key's
   * prefix.
   */
  private async staleBatch(
    column: SealedColumn,
    after: unknown[] | null,
    limit: number,
  ): Promise<Record<string, unknown>[]> {
    const keys = column.keys.join(', ');
    const select = [...column.keys, column.column, ...(column.extra?.select ?? [])].join(', ');
    const position =
      after === null ? '' : `AND (${keys}) > (${column.keys.map((_key, i) => `$${i + 3}`).join(', ')})`;
    return this.db.query(
      `SELECT ${select}
         FROM ${column.table}
        WHERE ${column.column} IS NOT NULL AND substring(${column.column} FROM 1 FOR $2) <> $1 ${position}
        ORDER BY ${keys}
        LIMIT ${Number(limit)}`,
      [this.cipher.currentPrefix, this.cipher.currentPrefix.length, ...(after ?? [])],
    );
  }

  private async countStale(column: SealedColumn): Promise<number> {
    const [row] = (await this.db.query(
      `SELECT count(*)::int AS n
         FROM ${column.table}
        WHERE ${column.column} IS NOT NULL AND substring(${column.column} FROM 1 FOR $2) <> $1`,
      [this.cipher.currentPrefix, this.cipher.currentPrefix.length],
    )) as { n: number }[];
    return row?.n ?? 0;
  }
}
