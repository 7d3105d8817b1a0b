/**
 * Live export source (`LiveExportSource`, see libs/connectors/core/src/live-export.ts): the rows of a table
 * with a hash each, in key order, by page or streamed (`COPY ... TO STDOUT`).
 *
 * A row's hash is computed by the server over the row's text output `ROW(<fields>)::text` (unambiguous:
 * NULL is an empty unquoted field, strings with delimiters are quoted; the pool's sessions fix TimeZone=UTC,
 * DateStyle, IntervalStyle and extra_float_digits, so the text of a value is stable):
 * `hashtextextended(text, seed)` (64 bits, seeded with the plan fingerprint) on PostgreSQL 11+, else
 * `md5(salt || text)`. Values and the hash of a row always come from the same statement.
 */
import {
  ConnectorError,
  type ExportSourceHash,
  type ExportSourceOptions,
  type ExportSourcePage,
  type ExportSourceRow,
} from '@lockstep/connectors-core';
import type { CanonicalValue } from '@lockstep/domain';
import { copyOut, splitCopyLine } from '@lockstep/pg-copy';
import { escapeLiteral } from 'pg';
import { loadTable, type Queryable, type TableMeta } from './catalog';
import { copyOutLines, pairLine } from './copy';
import { exportGuard, type PostgresExportContext } from './db';
import { ident, isUuid, qualified } from './sql';
import { decoderFor, SERVICE_ID_COLUMN, type Decoder } from './types';

export const MAX_SOURCE_PAGE = 100_000;
const INT_RANGES: Record<string, bigint> = { int2: 32767n, int4: 2147483647n, int8: 9223372036854775807n };

/** What a source read selects: the key, the mapped fields (decoded as `readPage` decodes them), the hash. */
interface SourceRead {
  target: string;
  key: string;
  keyCast: string;
  fields: string[];
  decoders: Decoder[];
  hash: string;
  validKey: (id: string) => boolean;
}

const SOURCE_HASHES_SQL = (read: SourceRead, where: string) => `
SELECT ${read.key}, ${read.hash}
  FROM ${read.target}
 WHERE ${where}
 ORDER BY ${read.key}
 LIMIT $1`;

const SCAN_SOURCE_HASHES_SQL = (read: SourceRead) => `
COPY (SELECT ${read.key}, ${read.hash} FROM ${read.target} WHERE ${read.key} IS NOT NULL) TO STDOUT`;

const selectList = (read: SourceRead) => [read.key, ...read.fields.map(ident), read.hash].join(', ');

/** COPY takes no parameters: `where` holds the page's lower bound as a literal. */
const SOURCE_ROWS_SQL = (read: SourceRead, where: string, limit: number) => `
COPY (
  SELECT ${selectList(read)}
    FROM ${read.target}
   WHERE ${where}
   ORDER BY ${read.key}
   LIMIT ${limit + 1}
) TO STDOUT`;

const SOURCE_ROWS_BY_ID_SQL = (read: SourceRead) => `
SELECT ${selectList(read)}
  FROM ${read.target}
 WHERE ${read.key} = ANY ($1::${read.keyCast}[])`;

export class PostgresExportSource {
  /** Descriptions of the tables read as a source (a connection lives for one run). */
  private readonly sources = new Map<string, Promise<TableMeta>>();
  private version: Promise<number> | null = null;

  constructor(private readonly context: PostgresExportContext) {}

  private get db(): Queryable {
    return this.context.pool as unknown as Queryable;
  }

  private serverVersion(): Promise<number> {
    this.version ??= this.db
      .query('SHOW server_version_num')
      .then((result) => Number(result.rows[0]?.['server_version_num'] ?? 0));
    return this.version;
  }

  private sourceMeta(name: string): Promise<TableMeta> {
    let known = this.sources.get(name);
    if (!known) {
      known = loadTable(this.db, this.context.schema(), name).then((meta) => {
        if (!meta)
          throw new ConnectorError(
            'not_found',
            `Table "${name}" does not exist in schema "${this.context.schema()}"`,
            { appCode: '42P01' },
          );
        return meta;
      });
      known.catch(() => this.sources.delete(name));
      this.sources.set(name, known);
    }
    return known;
  }

  private async sourceRead(name: string, options: ExportSourceOptions): Promise<SourceRead> {
    const meta = await this.sourceMeta(name);
    const key = meta.keyColumn;
    if (key === null) {
      throw new ConnectorError(
        'unsupported',
        `Table "${name}" has no single-column primary key; ` +
          `prepare it for sync first (it gets a ${SERVICE_ID_COLUMN} column)`,
      );
    }
    if (!/^[0-9a-f]{16,}$/.test(options.salt))
      throw new ConnectorError('invalid_data', 'The export salt must be hex text of at least 16 characters');
    const fields = [...new Set(options.fields)];
    const decoders = fields.map((field) => {
      if (meta.fieldById.get(field)?.read !== true) {
        throw new ConnectorError(
          'not_found',
          `Field "${field}" does not exist or cannot be read in table "${name}"`,
          { appCode: '42703' },
        );
      }
      return decoderFor(meta.kinds.get(field)!);
    });
    // ROW(...)::text of no fields is "()": every row then has the same hash (only ids matter).
    const text = `ROW(${fields.map(ident).join(', ')})::text`;
    const seed = BigInt(`0x${options.salt.slice(0, 15)}`).toString();
    const hash =
      (await this.serverVersion()) >= 110000
        ? `hashtextextended(${text}, ${seed})::text`
        : `md5(${escapeLiteral(options.salt)} || ${text})`;
    const keyColumn = meta.columnByName.get(key)!;
    const limit = INT_RANGES[keyColumn.baseName];
    return {
      target: qualified(meta.schema, meta.name),
      key: ident(key),
      keyCast: keyColumn.castType,
      fields,
      decoders,
      hash,
      validKey: (id) => {
        if (limit !== undefined)
          return /^-?\d{1,20}$/.test(id) && BigInt(id) <= limit && BigInt(id) >= -limit - 1n;
        if (keyColumn.baseName === 'uuid') return isUuid(id);
        return true;
      },
    };
  }

  private sourceRow(read: SourceRead, cells: (string | null)[]): ExportSourceRow {
    const values: Record<string, CanonicalValue> = {};
    const { fields, decoders } = read;
    for (let index = 0; index < fields.length; index += 1) {
      const text = cells[index + 1];
      values[fields[index]!] = text === null || text === undefined ? null : decoders[index]!(text);
    }
    return { id: cells[0] ?? '', hash: cells[fields.length + 1] ?? '', values };
  }

  async readSourceHashes(
    name: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceHash>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    return exportGuard(
      this.context,
      async () => {
        const read = await this.sourceRead(name, options);
        const values: unknown[] = [limit + 1];
        let where = `${read.key} IS NOT NULL`;
        if (options.after !== undefined && options.after !== null) {
          values.push(options.after);
          where += ` AND ${read.key} > $2::${read.keyCast}`;
        }
        const { rows } = await this.context.pool.query<[string, string]>({
          text: SOURCE_HASHES_SQL(read, where),
          values,
          rowMode: 'array',
        });
        const count = Math.min(rows.length, limit);
        const page: ExportSourceHash[] = new Array(count);
        for (let index = 0; index < count; index += 1)
          page[index] = { id: rows[index]![0], hash: rows[index]![1] };
        return { rows: page, next: rows.length > limit ? page[count - 1]!.id : null };
      },
      `Could not read table "${name}"`,
    );
  }

  async scanSourceHashes(
    name: string,
    options: ExportSourceOptions & { signal?: AbortSignal },
    onRow: (id: string, hash: string) => void,
  ): Promise<number> {
    return exportGuard(
      this.context,
      async () => {
        const read = await this.sourceRead(name, options);
        return copyOutLines(
          this.context.pool,
          SCAN_SOURCE_HASHES_SQL(read),
          (line) => pairLine(line, (id, hash) => onRow(id, hash ?? '')),
          options.signal,
        );
      },
      `Could not read table "${name}"`,
    );
  }

  async readSourceRows(
    name: string,
    options: ExportSourceOptions & { after?: string | null; limit: number },
  ): Promise<ExportSourcePage<ExportSourceRow>> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_SOURCE_PAGE);
    return exportGuard(
      this.context,
      async () => {
        const read = await this.sourceRead(name, options);
        let where = `${read.key} IS NOT NULL`;
        // COPY takes no parameters: the lower bound is a quoted literal, cast to the key's type.
        if (options.after !== undefined && options.after !== null)
          where += ` AND ${read.key} > ${escapeLiteral(options.after)}::${read.keyCast}`;
        const rows: ExportSourceRow[] = [];
        let more = false;
        await copyOut(this.context.pool, SOURCE_ROWS_SQL(read, where, limit), (line) => {
          if (rows.length >= limit) {
            more = true;
            return;
          }
          rows.push(this.sourceRow(read, splitCopyLine(line)));
        });
        return { rows, next: more ? rows[rows.length - 1]!.id : null };
      },
      `Could not read table "${name}"`,
    );
  }

  async readSourceRowsById(
    name: string,
    ids: string[],
    options: ExportSourceOptions,
  ): Promise<ExportSourceRow[]> {
    return exportGuard(
      this.context,
      async () => {
        const read = await this.sourceRead(name, options);
        const wanted = [...new Set(ids.filter(read.validKey))];
        if (wanted.length === 0) return [];
        const { rows } = await this.context.pool.query<(string | null)[]>({
          text: SOURCE_ROWS_BY_ID_SQL(read),
          values: [wanted],
          rowMode: 'array',
        });
        return rows.map((cells) => this.sourceRow(read, cells));
      },
      `Could not read table "${name}"`,
    );
  }
}
