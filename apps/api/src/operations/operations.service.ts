import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DomainError, ErrorCode, type OperationDto, type OperationListDto } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { accountOperation, listOperations, SyncTableEntity } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { requireSyncParam, sinceParam, tableParam } from '../common/http/query-params';
import {
  CursorService,
  type CursorPosition,
  invalidCursor,
  type LimitRule,
  parseLimit,
} from '../common/pagination/cursor.service';
import { resolveTableRef } from '../schema/table-ref';
import { SyncAccess } from '../syncs/sync-access';
import { SyncLinks } from '../syncs/sync-links';
import { toOperationDto, toOperationListItem } from './operations.mapper';

export const OPERATIONS_LIMIT: LimitRule = { min: 1, max: 100, default: 20 };

export interface OperationsQuery {
  sync?: unknown;
  table?: unknown;
  record?: unknown;
  since?: unknown;
  limit?: unknown;
  cursor?: unknown;
}

/** Optional `record`: a `rec_` id (`invalid_request` otherwise; the spec has no code of its own for it). */
function recordParam(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isId('record', raw))
    throw new DomainError(
      ErrorCode.InvalidRequest,
      "`record` must be a record id (`rec_...`), the id shared by both sides' copies.",
      { parameter: 'record' },
    );
  return raw;
}

/**
 * The record-level change log (spec 2.10, 4.5), newest first: `ORDER BY occurred_at DESC, seq DESC` with a
 * keyset cursor on the same pair. Every filter has an index in that order (sync; sync + table; sync +
 * record), so a page is an index range scan however long the log is.
 */
@Injectable()
export class OperationsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly access: SyncAccess,
    private readonly links: SyncLinks,
    private readonly cursors: CursorService,
  ) {}

  async list(auth: AuthContext, query: OperationsQuery): Promise<OperationListDto> {
    const syncId = requireSyncParam(query.sync);
    const tableRef = tableParam(query.table);
    const recordId = recordParam(query.record);
    const since = sinceParam(query.since);
    const limit = parseLimit(query.limit, OPERATIONS_LIMIT);
    // A cursor is bound to the endpoint, the account and the sync.
    const endpoint = `GET /sync/operations?sync=${syncId}`;
    const position = this.cursors.decode(query.cursor, endpoint, auth.accountId);
    // The sync is checked with the page (one statement); with a table, before the table is looked up.
    this.access.assertMayAsk(auth, syncId);
    if (tableRef !== undefined) await this.access.assertVisible(auth, syncId);
    const tableId = tableRef === undefined ? undefined : await this.resolveTable(syncId, tableRef);
    const rows = await listOperations(this.db, {
      accountId: auth.accountId,
      syncId,
      tableId,
      recordId,
      since,
      before: position ? keysetOf(position) : undefined,
      limit: limit + 1,
    });
    if (rows === null) throw this.access.notFound(syncId);
    return this.cursors.page(
      rows,
      limit,
      endpoint,
      auth.accountId,
      (row) => ({
        createdAt: row.occurred_key,
        id: row.position === undefined ? row.seq : `${row.seq}.${row.position}`,
      }),
      (row) => toOperationListItem(row, this.links),
    );
  }

  async get(auth: AuthContext, id: string): Promise<OperationDto> {
    const notFound = () => new DomainError(ErrorCode.NotFound, `No operation ${String(id).slice(0, 100)}.`);
    if (!isId('operation', id)) throw notFound();
    const row = await accountOperation(this.db, { id, accountId: auth.accountId, syncId: auth.syncId });
    if (!row) throw notFound();
    return toOperationDto(row, this.links);
  }

  /**
   * `table`: a `table_` id of either side, else a remote id (or exact name) resolved over both sides' tables
   * of this sync. Not a table of this sync: `invalid_table`; a bare reference found on both sides:
   * `table_ambiguous`.
   */
  private async resolveTable(syncId: string, ref: string): Promise<string> {
    const tables = await this.db.getRepository(SyncTableEntity).findBy({ syncId });
    const shown = ref.slice(0, 100);
    const invalid = () =>
      new DomainError(
        ErrorCode.InvalidTable,
        `\`table\` "${shown}" is not a table of this sync; pass a \`table_...\` id or a remote id ` +
          `from the sync's table listings.`,
      );
    if (isId('table', ref)) {
      if (!tables.some((table) => table.id === ref)) throw invalid();
      return ref;
    }
    const match = resolveTableRef(ref, tables);
    if (match.kind === 'found') return match.table.id;
    if (match.kind === 'ambiguous') {
      throw new DomainError(
        ErrorCode.TableAmbiguous,
        `\`table\` "${shown}" names a table on both sides; pass its \`table_...\` id.`,
        {
          tables: match.tables.map((table) => ({
            id: table.id,
            side: table.side,
            remote_id: table.remoteId,
            name: table.name,
          })),
        },
      );
    }
    throw invalid();
  }
}

/**
 * The log's keyset position in a cursor: `seq`, or `seq.position` for an operation stored in a batch. A
 * cursor is signed, so anything else was issued by an older release that no longer reads it.
 */
function keysetOf(position: CursorPosition): { occurredKey: string; seq: string; position?: number } {
  const match = /^(\d{1,19})(?:\.(\d{1,7}))?$/.exec(position.id);
  if (!match) throw invalidCursor();
  const [, seq, inBatch] = match;
  return {
    occurredKey: position.createdAt,
    seq: seq!,
    ...(inBatch === undefined ? {} : { position: Number(inBatch) }),
  };
}
