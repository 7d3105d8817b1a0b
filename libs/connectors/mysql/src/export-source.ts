/**
 * Live export source (`LiveExportSource`, see libs/connectors/core/src/live-export.ts): the rows of a table
 * with a hash each, in key order, by page or streamed.
 *
 * A row's hash is computed by the server over `CONCAT_WS(',', salt, QUOTE(CAST(field AS BINARY)), ...)`:
 * QUOTE makes the text unambiguous (NULL is the bare word NULL, every value a quoted, escaped string),
 * BINARY avoids collation clashes, and the session's fixed `time_zone = '+00:00'` makes TIMESTAMP text
 * stable. The hash is CRC32 and CRC32C of that text together (64 bits, MariaDB 10.8+, far cheaper than MD5
 * there) or MD5 elsewhere. Values and the hash of a row always come from the same statement.
 */
import {
  ConnectorError,
  type ExportSourceHash,
  type ExportSourceOptions,
  type ExportSourcePage,
  type ExportSourceRow,
} from '@lockstep/connectors-core';
import { loadTableMeta, type TableKey, type TableMeta } from './catalog';
import { streamRows, type Db, type Row } from './db';
import { keyText } from './decode';
import { atLeast } from './native-types';
import { keyParam, LOOKUP_CHUNK, planRecord, readColumns, readPlan, type ReadPlan } from './records';
import { requireKey } from './schema';
import { chunk, placeholders, quoteIdent, quoteString } from './sql';

export const MAX_SOURCE_PAGE = 100_000;
/** The select alias of a row's hash in source reads. */
const HASH_ALIAS = 'lockstep_export_row_hash';

/** What a source read selects: the key, the mapped fields (decoded as `readPage` decodes them), the hash. */
interface SourceRead {
  table: string;
  key: TableKey;
  plan: ReadPlan;
  fields: string[];
  hash: string;
}

const SOURCE_HASHES_SQL = (read: SourceRead, where: string) => {
  const k = quoteIdent(read.key.column);
  return `
SELECT ${k}, ${read.hash}
  FROM ${read.table}
 WHERE ${where}
 ORDER BY ${k}
 LIMIT ?`;
};

const SCAN_SOURCE_HASHES_SQL = (read: SourceRead) => {
  const k = quoteIdent(read.key.column);
  return `
SELECT ${k}, ${read.hash} FROM ${read.table} WHERE ${k} IS NOT NULL`;
};

const SOURCE_ROWS_SQL = (read: SourceRead, where: string) => `
SELECT ${read.plan.selectList}, ${read.hash} AS ${quoteIdent(HASH_ALIAS)}
  FROM ${read.table}
 WHERE ${where}
 ORDER BY ${quoteIdent(read.key.column)}
 LIMIT ?`;

const SOURCE_ROWS_BY_ID_SQL = (read: SourceRead, count: number) => `
SELECT ${read.plan.selectList}, ${read.hash} AS ${quoteIdent(HASH_ALIAS)}
  FROM ${read.table}
 WHERE ${quoteIdent(read.key.column)} IN (${placeholders(count)})`;

/** The row text a hash is computed over (see the header). */
const ROW_TEXT_SQL = (salt: string, fields: string[]) => {
  const values = fields.map((field) => `QUOTE(CAST(${quoteIdent(field)} AS BINARY))`);
  return `CONCAT_WS(',', ${[quoteString(salt), ...values].join(', ')})`;
};

/** The keyset condition of a source page after `after` (key order), its parameters ending in `limit + 1`. */
function keysetPage(
  key: TableKey,
  after: string | null | undefined,
  limit: number,
): { where: string; params: unknown[] } {
  const k = quoteIdent(key.column);
  const params: unknown[] = [];
  let where = `${k} IS NOT NULL`;
  if (after !== undefined && after !== null) {
    const value = keyParam(key, after);
    if (value === undefined)
      throw new ConnectorError('invalid_data', 'The page checkpoint is not one this connector issued');
    where += ` AND ${k} > ?`;
    params.push(value);
  }
  params.push(limit + 1);
  return { where, params };
}

export class MysqlExportSource {
  /** Descriptions of the tables read as a source (a connection lives for one run). */
  private readonly sources = new Map<string, Promise<TableMeta>>();

  constructor(
    private readonly db: Db,
    private readonly database: () => string,
  ) {}

  private sourceMeta(name: string): Promise<TableMeta> {
    let known = this.sources.get(name);
    if (!known) {
      known = this.db
        .server()
        .then((server) =>
          this.db.withConnection(
            (connection) => loadTableMeta(connection, this.database(), name, server),
            `Could not read table "${name}"`,
          ),
        );
      known.catch(() => this.sources.delete(name));
      this.sources.set(name, known);
    }
    return known;
  }

  private async sourceRead(name: string, options: ExportSourceOptions): Promise<SourceRead> {
    const meta = await this.sourceMeta(name);
    const key = requireKey(meta);
    if (!/^[0-9a-f]{16,}$/.test(options.salt))
      throw new ConnectorError('invalid_data', 'The export salt must be hex text of at least 16 characters');
    const wanted = [...new Set(options.fields)];
    for (const field of wanted) {
      if (meta.byName.get(field)?.read !== true)
        throw new ConnectorError(
          'not_found',
          `Field "${field}" does not exist or cannot be read in table "${name}"`,
        );
    }
    const columns = readColumns(meta, wanted);
    const fields = columns.map((column) => column.name);
    // Values are taken from the driver row into a fresh object (never in place: the row also holds the hash).
    const plan: ReadPlan = { ...readPlan(meta, fields), inPlace: false };
    const text = ROW_TEXT_SQL(options.salt, fields);
    const server = await this.db.server();
    const hash =
      server.flavor === 'mariadb' && atLeast(server, 10, 8)
        ? `CONCAT(HEX(CRC32(${text})), '.', HEX(CRC32C(${text})))`
        : `MD5(${text})`;
    return { table: quoteIdent(meta.name), key, plan, fields, hash };
  }

  private sourceRow(read: SourceRead, row: Row): ExportSourceRow {
    const hash = String(row[HASH_ALIAS]);
    const record = planRecord(read.plan, row);
    return { id: record.remoteId, hash, values: record.values };
  }

  async readSourceHashes(
    name: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceHash>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    const read = await this.sourceRead(name, options);
    const { where, params } = keysetPage(read.key, options.after, limit);
    const found = await this.db.withConnection(async (connection) => {
      const sql = SOURCE_HASHES_SQL(read, where);
      const [result] = await connection.query({ sql, values: params, rowsAsArray: true });
      return result as unknown as [unknown, unknown][];
    }, `Could not read table "${name}"`);
    const count = Math.min(found.length, limit);
    const page: ExportSourceHash[] = new Array(count);
    for (let index = 0; index < count; index += 1)
      page[index] = { id: keyText(found[index]![0]), hash: String(found[index]![1]) };
    return { rows: page, next: found.length > limit ? page[count - 1]!.id : null };
  }

  async scanSourceHashes(
    name: string,
    options: ExportSourceOptions & { signal?: AbortSignal },
    onRow: (id: string, hash: string) => void,
  ): Promise<number> {
    const read = await this.sourceRead(name, options);
    return streamRows(
      this.db,
      SCAN_SOURCE_HASHES_SQL(read),
      (row) => onRow(keyText(row[0]), String(row[1])),
      options.signal,
      `Could not read table "${name}"`,
    );
  }

  async readSourceRows(
    name: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceRow>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    const read = await this.sourceRead(name, options);
    const { where, params } = keysetPage(read.key, options.after, limit);
    const found = await this.db.rows(SOURCE_ROWS_SQL(read, where), params, `Could not read table "${name}"`);
    const count = Math.min(found.length, limit);
    const page: ExportSourceRow[] = new Array(count);
    for (let index = 0; index < count; index += 1) page[index] = this.sourceRow(read, found[index]!);
    return { rows: page, next: found.length > limit ? page[count - 1]!.id : null };
  }

  async readSourceRowsById(
    name: string,
    ids: string[],
    options: ExportSourceOptions,
  ): Promise<ExportSourceRow[]> {
    const read = await this.sourceRead(name, options);
    const params = [...new Set(ids)]
      .map((id) => keyParam(read.key, id))
      .filter((param) => param !== undefined);
    const result: ExportSourceRow[] = [];
    for (const part of chunk(params, LOOKUP_CHUNK)) {
      const found = await this.db.rows(
        SOURCE_ROWS_BY_ID_SQL(read, part.length),
        part,
        `Could not read table "${name}"`,
      );
      for (const row of found) result.push(this.sourceRow(read, row));
    }
    return result;
  }
}
