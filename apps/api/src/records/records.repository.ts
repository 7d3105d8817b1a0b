import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isId } from '@lockstep/domain';
import type { SideName } from '@lockstep/persistence';
import type { TableScope } from './record-tables';

/** A `record_links` row as the records API reads it (no shadows). */
export interface LinkRow {
  id: string;
  sync_id: string;
  table_pair: number;
  name: string | null;
  left_remote_id: string | null;
  right_remote_id: string | null;
  left_deleted: boolean;
  right_deleted: boolean;
  left_filtered: boolean;
  right_filtered: boolean;
  left_sync_disabled: boolean;
  right_sync_disabled: boolean;
}

export interface QueueRow {
  id: string;
  type: 'push' | 'refetch' | 'verify_delete';
  side: SideName | null;
}

export interface OperationRow {
  id: string;
  sync_id: string;
  occurred_at: Date;
  action: string;
  trigger: 'push' | 'poll';
  side: SideName | null;
  table_id: string | null;
  table_name: string | null;
  record_remote_id: string | null;
  record_name: string | null;
}

export interface IssueRow {
  id: string;
  type: string;
  code: string;
  side: SideName | null;
  connector: string;
  message: string;
  remediation: Record<string, unknown>;
  table_id: string | null;
  table_name: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  occurrence_count: number;
}

export interface PendingDeleteRow {
  id: string;
  record_id: string;
  state: 'awaiting_review' | 'ignored';
  missing_side: SideName;
  delete_from_side: SideName;
  pending_since: Date;
  ignored_at: Date | null;
}

export interface PendingDeleteEventRow {
  kind: 'detected' | 'approved' | 'ignored';
  actor: string | null;
  at: Date;
  pending_delete_id: string;
}

/** A search hit before mapping: the link and what matched. */
export interface MatchRow extends LinkRow {
  matched_by: 'record_id' | 'remote_id' | 'name';
  matched_side: SideName | null;
}

const LINK_COLUMNS = `id, sync_id, table_pair, name, left_remote_id, right_remote_id, left_deleted, right_deleted, left_filtered, right_filtered, left_sync_disabled, right_sync_disabled`;

/** History kinds the API reports (spec 3.2); the engine's `restored` / `closed` entries stay internal. */
const EVENT_KINDS = ['detected', 'approved', 'ignored'];

/** The substring pass of a search is cut off after this long (a sync with millions of records). */
const SUBSTRING_TIMEOUT_MS = 2000;
const QUERY_CANCELED = '57014';

const pairsOf = (scope: TableScope[], side?: SideName) => [...new Set(scope.filter((entry) => side === undefined || entry.side === side).map((entry) => entry.pair))];

/** `%`, `_` and `\` of a user's text taken literally in a `LIKE` pattern (backslash is the default escape). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

/**
 * The SQL of the records API over the engine's store. Every lookup is index-backed: links by primary key,
 * by remote id through the unique `(sync_id, table_pair, <side>_remote_id)` indexes (`table_pair = ANY` over
 * the mapped pairs), by display name through `record_links_name` (`lower(name) COLLATE "C"`); the queue,
 * operations, issues and held deletes of one record through their per-record indexes.
 */
@Injectable()
export class RecordsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async link(id: string): Promise<LinkRow | null> {
    const rows: LinkRow[] = await this.db.query(`SELECT ${LINK_COLUMNS} FROM record_links WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Links whose remote id on a side in scope equals `remoteId`, each once, with the side(s) that matched. */
  async byRemoteId(syncId: string, remoteId: string, scope: TableScope[]): Promise<(LinkRow & { matched_side: SideName })[]> {
    const rows: (LinkRow & { matched_side: SideName })[] = await this.db.query(
      `SELECT ${LINK_COLUMNS}, 'left' AS matched_side FROM record_links WHERE sync_id = $1 AND table_pair = ANY($2::int[]) AND left_remote_id = $4
       UNION ALL
       SELECT ${LINK_COLUMNS}, 'right' AS matched_side FROM record_links WHERE sync_id = $1 AND table_pair = ANY($3::int[]) AND right_remote_id = $4`,
      [syncId, pairsOf(scope, 'left'), pairsOf(scope, 'right'), remoteId],
    );
    const seen = new Set<string>();
    return rows
      .sort((a, b) => a.table_pair - b.table_pair || (a.matched_side === b.matched_side ? 0 : a.matched_side === 'left' ? -1 : 1))
      .filter((row) => (seen.has(row.id) ? false : (seen.add(row.id), true)));
  }

  /**
   * Search, best first, at most `max` rows: the `rec_` id, then exact remote ids (left, then right), then
   * display names starting with the query (case-insensitive, so an equal name comes first), then names
   * containing it. Each pass asks only for what is still missing. The substring pass walks the sync's names
   * in index order and filters; on a very large sync it is cut off after `SUBSTRING_TIMEOUT_MS` and the
   * result says `truncated` (the caller reports `has_more`: narrow the query).
   */
  async search(syncId: string, query: string, scope: TableScope[], max: number): Promise<{ rows: MatchRow[]; truncated: boolean }> {
    const pairs = pairsOf(scope);
    const found: MatchRow[] = [];
    const add = (rows: MatchRow[]) => {
      for (const row of rows) if (found.length < max && !found.some((hit) => hit.id === row.id)) found.push(row);
    };
    if (isId('record', query)) {
      const link = await this.link(query);
      if (link && link.sync_id === syncId && pairs.includes(link.table_pair)) add([{ ...link, matched_by: 'record_id', matched_side: null }]);
    }
    add((await this.byRemoteId(syncId, query, scope)).map((row) => ({ ...row, matched_by: 'remote_id' as const })));
    const pattern = likeLiteral(query);
    const byName = async (m: EntityManager, where: string): Promise<MatchRow[]> => {
      const missing = max - found.length;
      if (missing <= 0 || pairs.length === 0) return [];
      return m.query(
        `SELECT ${LINK_COLUMNS}, 'name' AS matched_by, NULL AS matched_side FROM record_links
         WHERE sync_id = $1 AND name IS NOT NULL AND table_pair = ANY($2::int[]) AND NOT (id = ANY($3::text[])) AND ${where}
         ORDER BY lower(name) COLLATE "C", id LIMIT $5`,
        [syncId, pairs, found.map((hit) => hit.id), pattern, missing],
      );
    };
    add(await byName(this.db.manager, `lower(name) COLLATE "C" LIKE lower($4) || '%'`));
    let truncated = false;
    const contained = await this.db
      .transaction(async (m) => {
        await m.query(`SET LOCAL statement_timeout = ${SUBSTRING_TIMEOUT_MS}`);
        return byName(m, `lower(name) COLLATE "C" LIKE '%' || lower($4) || '%' AND NOT (lower(name) COLLATE "C" LIKE lower($4) || '%')`);
      })
      .catch((error: unknown) => {
        if ((error as { code?: string }).code !== QUERY_CANCELED) throw error;
        truncated = true;
        return [];
      });
    add(contained);
    return { rows: found, truncated };
  }

  async queue(recordId: string): Promise<QueueRow[]> {
    return this.db.query(`SELECT id::text AS id, type, side FROM record_queue WHERE record_id = $1 ORDER BY id`, [recordId]);
  }

  /** The most recent operations of the record (both sides), `limit + 1` to tell whether there are more. */
  async operations(syncId: string, recordId: string, limit: number): Promise<OperationRow[]> {
    return this.db.query(
      `SELECT id, sync_id, occurred_at, action, trigger, side, table_id, table_name, record_remote_id, record_name FROM operations
       WHERE sync_id = $1 AND record_id = $2 ORDER BY occurred_at DESC, seq DESC LIMIT $3`,
      [syncId, recordId, limit + 1],
    );
  }

  async openIssues(syncId: string, recordId: string): Promise<IssueRow[]> {
    return this.db.query(
      `SELECT id, type, code, side, connector, message, remediation, table_id, table_name, first_seen_at, last_seen_at, occurrence_count FROM sync_issues
       WHERE sync_id = $1 AND record_id = $2 AND resolved_at IS NULL ORDER BY last_seen_at DESC, id DESC LIMIT 50`,
      [syncId, recordId],
    );
  }

  async openPendingDelete(syncId: string, recordId: string): Promise<PendingDeleteRow | null> {
    const rows: PendingDeleteRow[] = await this.db.query(
      `SELECT id, record_id, state, missing_side, delete_from_side, pending_since, ignored_at FROM pending_deletes
       WHERE sync_id = $1 AND record_id = $2 AND state IN ('awaiting_review', 'ignored')`,
      [syncId, recordId],
    );
    return rows[0] ?? null;
  }

  async pendingDeleteEvents(syncId: string, recordId: string): Promise<PendingDeleteEventRow[]> {
    return this.db.query(
      `SELECT kind, actor, at, pending_delete_id FROM pending_delete_events
       WHERE sync_id = $1 AND record_id = $2 AND kind = ANY($3::text[]) ORDER BY at DESC, id DESC LIMIT 50`,
      [syncId, recordId, EVENT_KINDS],
    );
  }

  /**
   * Queues a refetch of each side behind everything already queued for the record (the worker runs a
   * record's entries in id order). A refetch of that side already waiting at the end of the queue is enough,
   * so repeating the request adds nothing.
   */
  async queueRefetch(syncId: string, recordId: string, sides: SideName[]): Promise<void> {
    await this.db.transaction(async (m) => {
      // One request at a time per record, so two concurrent refetches cannot both see "nothing at the end".
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('record_refetch:' || $1))`, [recordId]);
      for (const side of sides) {
        await m.query(
          `INSERT INTO record_queue (sync_id, record_id, type, side)
           SELECT $1, $2, 'refetch', $3
           WHERE NOT EXISTS (
             SELECT 1 FROM record_queue q WHERE q.record_id = $2 AND q.type = 'refetch' AND q.side = $3 AND q.attempts = 0
               AND NOT EXISTS (SELECT 1 FROM record_queue later WHERE later.record_id = $2 AND later.id > q.id AND later.type <> 'refetch'))`,
          [syncId, recordId, side],
        );
      }
    });
  }
}
