import { Injectable } from '@nestjs/common';
import {
  DomainError,
  ErrorCode,
  type RecordSearchDto,
  type RecordStatusDto,
  type RefetchResultDto,
} from '@lockstep/contracts';
import { ID_PREFIX, isId } from '@lockstep/domain';
import type { RecordLinkRow as LinkRow, SideName } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { requireSyncParam, sideParam, tableParam } from '../common/http/query-params';
import { type LimitRule, parseLimit } from '../common/pagination/cursor.service';
import { type LoadedSync, SIDES, SyncAccess } from '../syncs/sync-access';
import { SyncLinks } from '../syncs/sync-links';
import { type PairTables, RecordTables } from './record-tables';
import { hasCopy, toHitDto, toStatusDto } from './records.mapper';
import { RecordsRepository } from './records.repository';

/** Record search is capped, not paginated (spec 4.6, 8). */
export const SEARCH_LIMIT: LimitRule = { min: 1, max: 25, default: 10 };
/** Operations shown in a status document; the rest are behind `operations_url`. */
export const STATUS_OPERATIONS = 10;
const MAX_QUERY_LENGTH = 500;

interface Resolved {
  loaded: LoadedSync;
  link: LinkRow;
  pairs: PairTables[];
}

/**
 * Records of a sync (spec 2.12, 3.3, 4.6): search by id or display text, the status document, and a refetch
 * queued behind what is already queued for the record. Read from the engine's store; the worker does the
 * work.
 */
@Injectable()
export class RecordsService {
  constructor(
    private readonly access: SyncAccess,
    private readonly links: SyncLinks,
    private readonly tables: RecordTables,
    private readonly records: RecordsRepository,
  ) {}

  async search(
    auth: AuthContext,
    raw: { sync: unknown; query: unknown; table: unknown; limit: unknown },
  ): Promise<RecordSearchDto> {
    const syncId = requireSyncParam(raw.sync);
    const query = queryParam(raw.query);
    const table = tableParam(raw.table);
    const limit = parseLimit(raw.limit, SEARCH_LIMIT);
    const { sync } = await this.access.load(auth, syncId);
    const pairs = await this.tables.pairs(sync);
    const scope = await this.tables.scope(sync, pairs, table);
    const { rows, truncated } = await this.records.search(syncId, query, scope, limit + 1);
    return {
      data: rows.slice(0, limit).map((hit) => toHitDto(hit, pairs, this.links)),
      has_more: rows.length > limit || truncated,
      next_cursor: null,
    };
  }

  async status(
    auth: AuthContext,
    recordId: string,
    raw: { sync: unknown; table: unknown },
  ): Promise<RecordStatusDto> {
    const { link, pairs } = await this.resolve(auth, recordId, raw);
    const [queue, issues, pendingDelete, events, operations] = await Promise.all([
      this.records.queue(link.id),
      this.records.openIssues(link.sync_id, link.id),
      this.records.openPendingDelete(link.sync_id, link.id),
      this.records.pendingDeleteEvents(link.sync_id, link.id),
      this.records.operations(link.sync_id, link.id, STATUS_OPERATIONS),
    ]);
    return toStatusDto(
      { link, pairs, queue, issues, pendingDelete, events, operations, operationsLimit: STATUS_OPERATIONS },
      this.links,
    );
  }

  async refetch(
    auth: AuthContext,
    recordId: string,
    raw: { sync: unknown; table: unknown },
    body: unknown,
  ): Promise<RefetchResultDto> {
    const requested = refetchSide(body);
    const { link } = await this.resolve(auth, recordId, raw);
    const sides: SideName[] = requested ? [requested] : SIDES.filter((side) => hasCopy(link, side));
    if (requested && !hasCopy(link, requested)) {
      throw new DomainError(
        ErrorCode.NoCopyToRefetch,
        `The ${requested} side holds no copy of record ${link.id}` +
          ((requested === 'left' ? link.left_remote_id : link.right_remote_id)
            ? ' (it was deleted there)'
            : '') +
          '; there is nothing to refetch there.',
        {
          record_id: link.id,
          side: requested,
        },
      );
    }
    if (sides.length === 0)
      throw new DomainError(
        ErrorCode.NoCopyToRefetch,
        `Neither side holds a copy of record ${link.id}; there is nothing to refetch.`,
        { record_id: link.id },
      );
    await this.records.queueRefetch(link.sync_id, link.id, sides);
    return { record_id: link.id, sides, url: this.links.record(link.sync_id, link.id) };
  }

  /**
   * A `rec_` id (`sync` optional but, when given, must be the record's sync), or a connected-app id within
   * `sync` (required) and optionally `table`: several records with that id is `ambiguous_record`, with the
   * candidates in `details`. Without `sync`, any id with the `rec_` prefix is taken for a `rec_` id (spec 4.6
   * requires `sync` only for a connected-app id), so one that does not exist is `404`, not `missing_sync`.
   * Anything the caller may not see is `404 not_found`.
   */
  private async resolve(
    auth: AuthContext,
    recordId: string,
    raw: { sync: unknown; table: unknown },
  ): Promise<Resolved> {
    const notFound = () =>
      new DomainError(
        ErrorCode.NotFound,
        `No record ${recordId.slice(0, 200)}` +
          (raw.sync && typeof raw.sync === 'string' ? ` in sync ${raw.sync}` : '') +
          '.',
      );
    if (isRecordId(recordId) || (raw.sync === undefined && recordId.startsWith(RECORD_PREFIX))) {
      const syncId = raw.sync === undefined ? undefined : requireSyncParam(raw.sync);
      const table = tableParam(raw.table);
      // A malformed `rec_` id names no record (and is never sent to the store).
      const link = isRecordId(recordId) ? await this.records.link(recordId) : null;
      if (!link || (syncId !== undefined && link.sync_id !== syncId)) throw notFound();
      const loaded = await this.access.load(auth, link.sync_id).catch((error: unknown) => {
        throw error instanceof DomainError && error.code === ErrorCode.NotFound ? notFound() : error;
      });
      const pairs = await this.tables.pairs(loaded.sync);
      if (
        table !== undefined &&
        !(await this.tables.scope(loaded.sync, pairs, table)).some((entry) => entry.pair === link.table_pair)
      )
        throw notFound();
      return { loaded, link, pairs };
    }
    const syncId = requireSyncParam(raw.sync);
    const table = tableParam(raw.table);
    if (recordId.length > 1024) throw notFound();
    const loaded = await this.access.load(auth, syncId);
    const pairs = await this.tables.pairs(loaded.sync);
    const matches = await this.records.byRemoteId(
      syncId,
      recordId,
      await this.tables.scope(loaded.sync, pairs, table),
    );
    if (matches.length === 0) throw notFound();
    if (matches.length > 1) {
      const candidates = matches.map((match) => ({
        id: match.id,
        side: match.matched_side,
        table_pair: match.table_pair,
        table: pairs[match.table_pair]?.[match.matched_side] ?? null,
        url: this.links.record(syncId, match.id),
      }));
      throw new DomainError(
        ErrorCode.AmbiguousRecord,
        `The id "${recordId.slice(0, 200)}" names ${matches.length} records of sync ${syncId} ` +
          `(${candidates.map((c) => `${c.side} ${c.table?.name ?? `pair ${c.table_pair}`}`).join(', ')}); ` +
          `add \`table\` (a \`table_...\` id from details.candidates) or use the \`rec_\` id.`,
        { candidates },
      );
    }
    return { loaded, link: matches[0]!, pairs };
  }
}

/** A `rec_` id (a plain boolean: the text is a remote id otherwise, not `never`). */
const isRecordId = (value: string): boolean => isId('record', value);
const RECORD_PREFIX = `${ID_PREFIX.record}_`;

/** `query` (required): the text to look for; `missing_query` when absent or blank. */
function queryParam(raw: unknown): string {
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) {
    throw new DomainError(
      ErrorCode.MissingQuery,
      'The `query` query parameter is required: a remote record id, a `rec_` id or display text.',
    );
  }
  if (typeof raw !== 'string') throw new DomainError(ErrorCode.InvalidRequest, '`query` must be given once.');
  if (raw.length > MAX_QUERY_LENGTH)
    throw new DomainError(
      ErrorCode.InvalidRequest,
      `\`query\` must be at most ${MAX_QUERY_LENGTH} characters.`,
      { max_length: MAX_QUERY_LENGTH },
    );
  return raw.trim();
}

/**
 * The optional refetch body `{side}`: `invalid_side` for another side value, `invalid_request` for anything
 * else.
 */
function refetchSide(body: unknown): SideName | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body))
    throw new DomainError(
      ErrorCode.InvalidRequest,
      'The body, when sent, must be a JSON object `{"side": "left"|"right"}`.',
    );
  const unknown = Object.keys(body).filter((key) => key !== 'side');
  if (unknown.length > 0)
    throw new DomainError(
      ErrorCode.InvalidRequest,
      `Unknown field(s) ${unknown.map((key) => `\`${key}\``).join(', ')}; the body takes only \`side\`.`,
      { fields: unknown },
    );
  return sideParam((body as { side?: unknown }).side);
}
