import type { DataSource, EntityManager } from 'typeorm';
import { newId } from '@lockstep/contracts';

type Db = DataSource | EntityManager;

/**
 * A credential the app rejected (spec 2.4): the side shows `auth_status: error` with `auth_error`, and one
 * open `connection` issue (de-duplicated per side: a repeat raises `occurrence_count` and `last_seen_at`)
 * explains the fix. Shared by the API (schema and bases reads) and the worker.
 */
export async function markCredentialRejected(db: Db, input: { syncId: string; side: 'left' | 'right'; connector: string; connectorName: string; reason: string; reconnectUrl: string }): Promise<void> {
  await db.query(`UPDATE sync_sides SET auth_status = 'error', auth_error = 'invalid_credentials', updated_at = now() WHERE sync_id = $1 AND side = $2`, [input.syncId, input.side]);
  const remediation = {
    explanation: `${input.connectorName} rejected the credentials stored for the ${input.side} side: ${input.reason}. Lockstep does not read from or write to that side until they are fixed.`,
    suggested_action: `Reconnect the ${input.side} side in Lockstep (or PATCH the sync's ${input.side} side with a new auth of the same shape); the sync then catches up.`,
    links: [{ name: `Reconnect the ${input.side} side`, url: input.reconnectUrl }],
  };
  await db.query(
    `INSERT INTO sync_issues (id, sync_id, type, code, side, connector, message, remediation, dedupe_key)
     VALUES ($1, $2, 'connection', 'authentication_error', $3, $4, $5, $6, $7)
     ON CONFLICT (sync_id, dedupe_key) WHERE resolved_at IS NULL
     DO UPDATE SET occurrence_count = sync_issues.occurrence_count + 1, last_seen_at = now(), message = EXCLUDED.message, remediation = EXCLUDED.remediation`,
    [newId('issue'), input.syncId, input.side, input.connector, `The ${input.side} side's credentials were rejected: ${input.reason}`, JSON.stringify(remediation), `credentials:${input.side}`],
  );
}

/** New credentials the app accepted: the side's credential issue is resolved. */
export async function resolveCredentialIssues(db: Db, syncId: string, side: 'left' | 'right'): Promise<void> {
  await db.query(`UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND side = $2 AND type = 'connection' AND resolved_at IS NULL`, [syncId, side]);
}
