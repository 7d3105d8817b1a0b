import type { DataSource, EntityManager } from 'typeorm';
import { raiseIssues } from './raise-issues';

type Db = DataSource | EntityManager;

const SIDE_REJECTED_SQL = `
  UPDATE sync_sides
     SET auth_status = 'error', auth_error = 'invalid_credentials', updated_at = now()
   WHERE sync_id = $1 AND side = $2`;

const RESOLVE_CONNECTION_ISSUES_SQL = `
  UPDATE sync_issues
     SET resolved_at = now()
   WHERE sync_id = $1 AND side = $2 AND type = 'connection' AND resolved_at IS NULL`;

/**
 * A credential the app rejected (spec 2.4): the side shows `auth_status: error` with `auth_error`, and one
 * `connection` issue per side (a repeat raises `occurrence_count` and `last_seen_at`, and reopens it if
 * resolved) explains the fix. Shared by the API (schema and bases reads) and the worker.
 */
export async function markCredentialRejected(
  db: Db,
  input: {
    syncId: string;
    side: 'left' | 'right';
    connector: string;
    connectorName: string;
    reason: string;
    reconnectUrl: string;
  },
): Promise<void> {
  const remediation = {
    explanation:
      `${input.connectorName} rejected the credentials stored for the ${input.side} side: ` +
      `${input.reason}. Lockstep does not read from or write to that side until they are fixed.`,
    suggested_action:
      `Reconnect the ${input.side} side in Lockstep (or PATCH the sync's ${input.side} side with a new ` +
      `auth of the same shape); the sync then catches up.`,
    links: [{ name: `Reconnect the ${input.side} side`, url: input.reconnectUrl }],
  };
  await raiseIssues(db, input.syncId, [
    {
      type: 'connection',
      code: 'authentication_error',
      side: input.side,
      connector: input.connector,
      message: `The ${input.side} side's credentials were rejected: ${input.reason}`,
      remediation,
      dedupeKey: `credentials:${input.side}`,
    },
  ]);
  // The status flips last: whoever sees `auth_status: error` finds the issue that explains it.
  await db.query(SIDE_REJECTED_SQL, [input.syncId, input.side]);
}

/** New credentials the app accepted: the side's credential issue is resolved. */
export async function resolveCredentialIssues(db: Db, syncId: string, side: 'left' | 'right'): Promise<void> {
  await db.query(RESOLVE_CONNECTION_ISSUES_SQL, [syncId, side]);
}
