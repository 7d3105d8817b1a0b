import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import {
  queueRefetch,
  recordLink,
  type RecordIssueRow,
  type RecordLinkRow,
  recordLinksByRemoteId,
  type RecordMatchRow,
  recordOpenIssues,
  recordOpenPendingDelete,
  recordOperations,
  type RecordOperationRow,
  recordPendingDeleteEvents,
  type RecordPendingDeleteEventRow,
  type RecordPendingDeleteRow,
  recordQueue,
  type RecordQueueRow,
  searchRecords,
  type SideName,
} from '@lockstep/persistence';
import type { TableScope } from './record-tables';

const pairsOf = (scope: TableScope[], side?: SideName) => [
  ...new Set(scope.filter((entry) => side === undefined || entry.side === side).map((entry) => entry.pair)),
];

/**
 * The records API's reads and its refetch request over the engine's store (libs/persistence's record-search
 * and record-queue), with the caller's table scope turned into the table pairs each lookup covers.
 */
@Injectable()
export class RecordsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  link(id: string): Promise<RecordLinkRow | null> {
    return recordLink(this.db, id);
  }

  /** Links whose remote id on a side in scope equals `remoteId`, each once, with the side(s) that matched. */
  byRemoteId(
    syncId: string,
    remoteId: string,
    scope: TableScope[],
  ): Promise<(RecordLinkRow & { matched_side: SideName })[]> {
    return recordLinksByRemoteId(this.db, syncId, remoteId, {
      left: pairsOf(scope, 'left'),
      right: pairsOf(scope, 'right'),
    });
  }

  /** Search, best first, at most `max` rows (see `searchRecords`). */
  search(
    syncId: string,
    query: string,
    scope: TableScope[],
    max: number,
  ): Promise<{ rows: RecordMatchRow[]; truncated: boolean }> {
    const pairs = { all: pairsOf(scope), left: pairsOf(scope, 'left'), right: pairsOf(scope, 'right') };
    return searchRecords(this.db, { syncId, query, pairs, max });
  }

  queue(recordId: string): Promise<RecordQueueRow[]> {
    return recordQueue(this.db, recordId);
  }

  /** The most recent operations of the record (both sides), `limit + 1` to tell whether there are more. */
  operations(syncId: string, recordId: string, limit: number): Promise<RecordOperationRow[]> {
    return recordOperations(this.db, syncId, recordId, limit);
  }

  openIssues(syncId: string, recordId: string): Promise<RecordIssueRow[]> {
    return recordOpenIssues(this.db, syncId, recordId);
  }

  openPendingDelete(syncId: string, recordId: string): Promise<RecordPendingDeleteRow | null> {
    return recordOpenPendingDelete(this.db, syncId, recordId);
  }

  pendingDeleteEvents(syncId: string, recordId: string): Promise<RecordPendingDeleteEventRow[]> {
    return recordPendingDeleteEvents(this.db, syncId, recordId);
  }

  /** Queues a refetch of each side behind everything already queued for the record (see `queueRefetch`). */
  queueRefetch(syncId: string, recordId: string, sides: SideName[]): Promise<void> {
    return queueRefetch(this.db, syncId, recordId, sides);
  }
}
