/**
 * The engine's issues in `sync_issues`: per record and side (`record`), and side-wide (`connection`: an app
 * unreachable). Each is raised through `raiseIssues` (a failure seen again reopens its issue) and resolves
 * itself once the record or side works again.
 */
import type { SideName } from '@lockstep/domain';
import { raiseIssues } from '../../issues/raise-issues';
import type { Db } from '../db';

export interface RecordIssue {
  recordId: string;
  side: SideName;
  connector: string;
  cause: string;
  message: string;
  remediation: { explanation: string; suggested_action: string; links: { name: string; url: string }[] };
  tableId: string;
  tableName: string;
  remoteId: string | null;
  name: string | null;
  recordUrl: string | null;
}

/** Record issues, one per record, side and cause (see `raiseIssues`: a failure seen again reopens its issue). */
export async function openRecordIssues(db: Db, syncId: string, issues: RecordIssue[]): Promise<void> {
  await raiseIssues(
    db,
    syncId,
    issues.map((issue) => ({
      type: 'record',
      code: 'record_error',
      side: issue.side,
      connector: issue.connector,
      message: issue.message,
      remediation: issue.remediation,
      dedupeKey: `record:${issue.recordId}:${issue.side}:${issue.cause}`,
      tableId: issue.tableId,
      tableName: issue.tableName,
      recordId: issue.recordId,
      recordRemoteId: issue.remoteId,
      recordName: issue.name,
      recordUrl: issue.recordUrl,
    })),
  );
}

const RESOLVE_RECORD_ISSUES_SQL = `
  UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND type = 'record' AND resolved_at IS NULL
    AND (record_id, side) IN (SELECT * FROM unnest($2::text[], $3::text[]))`;

/** Only issues of these causes (`kinds`: the 4th part of the dedupe key, see `resolveRecordIssues`). */
const OF_KINDS = ` AND split_part(dedupe_key, ':', 4) = ANY($4::text[])`;

/**
 * Records that synced: their open record issues on that side clear themselves. `kinds` limits it to issues of
 * those causes (the part of `RecordIssue.cause` before its first colon, as kept in the dedupe key).
 */
export async function resolveRecordIssues(
  db: Db,
  syncId: string,
  records: { recordId: string; side: SideName }[],
  kinds?: string[],
): Promise<void> {
  if (records.length === 0) return;
  await db.query(`${RESOLVE_RECORD_ISSUES_SQL}${kinds ? OF_KINDS : ''}`, [
    syncId,
    records.map((record) => record.recordId),
    records.map((record) => record.side),
    ...(kinds ? [kinds] : []),
  ]);
}

/** A side-wide problem (app unreachable): one `connection` issue per side and cause (see `raiseIssues`). */
export async function openSideIssue(
  db: Db,
  input: {
    syncId: string;
    side: SideName;
    connector: string;
    code: string;
    cause: string;
    message: string;
    remediation: RecordIssue['remediation'];
  },
): Promise<void> {
  const { syncId, side, connector, code, message, remediation } = input;
  await raiseIssues(db, syncId, [
    { type: 'connection', code, side, connector, message, remediation, dedupeKey: `${input.cause}:${side}` },
  ]);
}

const RESOLVE_SIDE_ISSUE_SQL = `
  UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND dedupe_key = $2 AND resolved_at IS NULL`;

export async function resolveSideIssue(db: Db, syncId: string, side: SideName, cause: string): Promise<void> {
  await db.query(RESOLVE_SIDE_ISSUE_SQL, [syncId, `${cause}:${side}`]);
}
