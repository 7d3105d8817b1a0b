/**
 * `sync_leases`: which worker runs a sync. A lease is a row with an owner, an expiry and a fencing token that
 * grows with every change of owner; the engine's commits check the token (`holdsLease`), so a worker that lost
 * its lease (stalled, partitioned) can no longer commit. A lease is released by expiring it, not by deleting
 * it: the next owner's token continues from this one.
 */
import type { Db } from '../db';
import { returnedRows } from '../db';

const RELEASE_OWNER_LEASES_SQL = `
  UPDATE sync_leases SET expires_at = now() - interval '1 second' WHERE owner = $1`;

/** Every lease this owner holds ends now (the worker shuts down). */
export async function releaseLeasesOf(db: Db, owner: string): Promise<void> {
  await db.query(RELEASE_OWNER_LEASES_SQL, [owner]);
}

const RELEASE_LEASE_SQL = `
  UPDATE sync_leases SET expires_at = now() - interval '1 second' WHERE sync_id = $1 AND owner = $2
     AND token = $3`;

/** The lease of one sync ends now, when this owner still holds it with this token. */
export async function releaseLease(db: Db, syncId: string, owner: string, token: string): Promise<void> {
  await db.query(RELEASE_LEASE_SQL, [syncId, owner, token]);
}

const RENEW_LEASES_SQL = `
  UPDATE sync_leases SET expires_at = now() + make_interval(secs => $3)
  WHERE owner = $1 AND sync_id = ANY($2::text[]) RETURNING sync_id`;

/** Extends this owner's leases of these syncs by `ttlSeconds`; returns the syncs whose lease it still held. */
export async function renewLeases(
  db: Db,
  owner: string,
  syncIds: string[],
  ttlSeconds: number,
): Promise<string[]> {
  const rows = returnedRows<{ sync_id: string }>(
    await db.query(RENEW_LEASES_SQL, [owner, syncIds, ttlSeconds]),
  );
  return rows.map((row) => row.sync_id);
}

const WAKE_SQL = `
  UPDATE sync_leases SET wake_requested_at = now() WHERE sync_id = $1`;

/** Wakes the sync's runner now instead of at the end of its failure backoff (taken by `takeWakeRequests`). */
export async function wakeRunner(db: Db, syncId: string): Promise<void> {
  await db.query(WAKE_SQL, [syncId]);
}

const TAKE_WAKE_REQUESTS_SQL = `
  UPDATE sync_leases SET wake_requested_at = NULL
  WHERE owner = $1 AND sync_id = ANY($2::text[]) AND wake_requested_at IS NOT NULL RETURNING sync_id`;

/**
 * The syncs among these whose runner a person asked to try again now (`POST /sync/issues/{id}/retry` sets
 * `wake_requested_at`); the requests are taken (cleared).
 */
export async function takeWakeRequests(db: Db, owner: string, syncIds: string[]): Promise<string[]> {
  const rows = returnedRows<{ sync_id: string }>(await db.query(TAKE_WAKE_REQUESTS_SQL, [owner, syncIds]));
  return rows.map((row) => row.sync_id);
}

const LEASABLE_SYNCS_SQL = `
  SELECT s.id FROM syncs s LEFT JOIN sync_leases l ON l.sync_id = s.id
  WHERE s.status = 'active' AND s.deleted_at IS NULL AND (l.sync_id IS NULL OR l.expires_at < now())
     AND NOT (s.id = ANY($1::text[]))
    AND ($3::text IS NULL OR s.account_id = $3)
  ORDER BY s.id LIMIT $2`;

/**
 * Active syncs nobody holds a lease of (or whose lease expired), other than `exclude`, at most `limit`, of one
 * account when `accountId` is given.
 */
export async function leasableSyncs(
  db: Db,
  input: { exclude: string[]; limit: number; accountId: string | null },
): Promise<string[]> {
  const rows: { id: string }[] = await db.query(LEASABLE_SYNCS_SQL, [
    input.exclude,
    input.limit,
    input.accountId,
  ]);
  return rows.map((row) => row.id);
}

const CLAIM_LEASE_SQL = `
  INSERT INTO sync_leases (sync_id, owner, token, expires_at) VALUES ($1, $2, 1,
     now() + make_interval(secs => $3))
  ON CONFLICT (sync_id) DO UPDATE SET owner = EXCLUDED.owner, token = sync_leases.token + 1,
     expires_at = EXCLUDED.expires_at
    WHERE sync_leases.expires_at < now()
  RETURNING token::text AS token`;

/** Takes the lease of a sync nobody holds (or whose lease expired); its fencing token, or null when taken. */
export async function claimLease(
  db: Db,
  syncId: string,
  owner: string,
  ttlSeconds: number,
): Promise<string | null> {
  const rows: { token: string }[] = await db.query(CLAIM_LEASE_SQL, [syncId, owner, ttlSeconds]);
  return rows[0]?.token ?? null;
}

const HOLDS_LEASE_SQL = `SELECT 1 FROM sync_leases WHERE sync_id = $1 AND owner = $2 AND token = $3 FOR SHARE`;

/**
 * Whether this owner still holds the sync's lease with this token. Run first in a transaction: the row stays
 * locked (shared) until it ends, so no other worker takes the lease over before the transaction commits.
 */
export async function holdsLease(db: Db, syncId: string, owner: string, token: string): Promise<boolean> {
  const rows: unknown[] = await db.query(HOLDS_LEASE_SQL, [syncId, owner, token]);
  return rows.length > 0;
}
