/**
 * `record_links`: one row per record of a sync, with both sides' remote ids, shadows (the values last
 * synced), content hashes and flags. The engine reads and writes whole rows (`LinkRow`); bulk statements
 * (jsonb_to_recordset / unnest / COPY) keep a page of a thousand records at a handful of round trips.
 */
import type { SideName } from '@lockstep/domain';
import { copyIn } from '@lockstep/pg-copy';
import { type Db, returnedRows } from '../db';
import { plainColumns } from '../copy-columns';
import { shadowJson } from './link-hashes';
import { RIGHT_SHADOW, SAME_AS_LEFT } from './right-shadow';

export interface LinkRow {
  id: string;
  service_id: string;
  table_pair: number;
  name: string | null;
  left_remote_id: string | null;
  right_remote_id: string | null;
  left_shadow: Record<string, unknown> | null;
  right_shadow: Record<string, unknown> | null;
  left_hash: string | null;
  right_hash: string | null;
  left_deleted: boolean;
  right_deleted: boolean;
  left_filtered: boolean;
  right_filtered: boolean;
  left_sync_disabled: boolean;
  right_sync_disabled: boolean;
  dead: boolean;
  create_pending: SideName | null;
  /**
   * When the side's change that the other side has not taken yet was seen (ISO 8601), or null: set when the
   * write carrying it was refused or dropped, a value could not be converted or a relation was deferred (the
   * side's shadow kept its old values), so that a later merge compares that change's own time with the other
   * side's, not the time it reads the record again (`keepChangeTimes` in reconcile.ts).
   */
  left_changed_at: string | null;
  right_changed_at: string | null;
  /**
   * The operation that created the record's copy when it is stored in a batch (`operation-batches.ts`): the
   * filter by record finds it through here. Written only with a new link (`insertLinks`), never read back
   * with the link.
   */
  created_op?: string | null;
}

/** A `timestamptz` column as ISO 8601 text in UTC (what the merge compares). */
function isoTime(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

const LINK_COLUMNS = `
  id, service_id::text AS service_id, table_pair, name, left_remote_id, right_remote_id,
  left_shadow, ${RIGHT_SHADOW} AS right_shadow, left_hash, right_hash,
  left_deleted, right_deleted, left_filtered, right_filtered, left_sync_disabled, right_sync_disabled, dead,
  create_pending,
  ${isoTime('left_changed_at')} AS left_changed_at,
  ${isoTime('right_changed_at')} AS right_changed_at`;

export function remoteOf(
  link: Pick<LinkRow, 'left_remote_id' | 'right_remote_id'>,
  side: SideName,
): string | null {
  return side === 'left' ? link.left_remote_id : link.right_remote_id;
}

export function shadowOf(link: LinkRow, side: SideName): Record<string, unknown> | null {
  return side === 'left' ? link.left_shadow : link.right_shadow;
}

export function changedAtOf(link: LinkRow, side: SideName): string | null {
  return side === 'left' ? link.left_changed_at : link.right_changed_at;
}

export function deletedOn(link: Pick<LinkRow, 'left_deleted' | 'right_deleted'>, side: SideName): boolean {
  return side === 'left' ? link.left_deleted : link.right_deleted;
}

/**
 * The links of records seen on either side, by remote id, and of records carrying a service id. A service id
 * this sync derived (`own`) is looked up among all links (an orphaned copy is recognised by its absence). Any
 * other service id only matters for adopting a row whose remote id was not stored yet (a create interrupted
 * by a crash), so it is looked up among the links that lack a remote id on a side: a small partial index,
 * where the full one would cost a random probe per record of a page (source rows often carry service ids of
 * their own).
 */
export async function loadLinks(
  db: Db,
  syncId: string,
  pair: number,
  left: string[],
  right: string[],
  serviceIds: { own: string[]; unplaced: string[] },
): Promise<LinkRow[]> {
  if (
    left.length === 0 &&
    right.length === 0 &&
    serviceIds.own.length === 0 &&
    serviceIds.unplaced.length === 0
  ) {
    return [];
  }
  // Only the conditions that can match (an empty list would still cost the planner an index scan).
  const conditions: string[] = [];
  const params: unknown[] = [syncId, pair];
  if (left.length > 0) conditions.push(`left_remote_id = ANY($${params.push(left)}::text[])`);
  if (right.length > 0) conditions.push(`right_remote_id = ANY($${params.push(right)}::text[])`);
  if (serviceIds.own.length > 0) conditions.push(`service_id = ANY($${params.push(serviceIds.own)}::uuid[])`);
  if (serviceIds.unplaced.length > 0) {
    conditions.push(
      `(service_id = ANY($${params.push(serviceIds.unplaced)}::uuid[])
        AND (left_remote_id IS NULL OR right_remote_id IS NULL))`,
    );
  }
  return db.query(
    `SELECT ${LINK_COLUMNS}
       FROM record_links
      WHERE sync_id = $1 AND table_pair = $2 AND (${conditions.join(' OR ')})`,
    params,
  );
}

const LINKS_BY_ID_SQL = `SELECT ${LINK_COLUMNS} FROM record_links WHERE id = ANY($1::text[])`;

export async function loadLinksById(db: Db, ids: string[]): Promise<LinkRow[]> {
  if (ids.length === 0) return [];
  return db.query(LINKS_BY_ID_SQL, [ids]);
}

const SAVE_LINKS_SQL = `
  INSERT INTO record_links AS l (id, sync_id, table_pair, service_id, name, left_remote_id, right_remote_id,
     left_shadow, right_shadow, left_hash, right_hash,
     left_deleted, right_deleted, left_filtered, right_filtered, left_sync_disabled, right_sync_disabled,
        dead, create_pending, left_changed_at, right_changed_at, left_seen_at, right_seen_at, updated_at)
  SELECT v.id, $2, v.table_pair, v.service_id::uuid, v.name, v.left_remote_id, v.right_remote_id,
     v.left_shadow, v.right_shadow, v.left_hash, v.right_hash,
     v.left_deleted, v.right_deleted, v.left_filtered, v.right_filtered, v.left_sync_disabled,
        v.right_sync_disabled, v.dead, v.create_pending, v.left_changed_at, v.right_changed_at,
     CASE WHEN v.left_seen THEN now() END, CASE WHEN v.right_seen THEN now() END, now()
  FROM jsonb_to_recordset($1::jsonb) AS v(id text, table_pair integer, service_id text, name text,
     left_remote_id text, right_remote_id text, left_shadow json, right_shadow json,
     left_hash text, right_hash text, left_deleted boolean, right_deleted boolean, left_filtered boolean,
        right_filtered boolean, left_sync_disabled boolean,
     right_sync_disabled boolean, dead boolean, create_pending text, left_changed_at timestamptz,
        right_changed_at timestamptz, left_seen boolean, right_seen boolean)
  ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, left_remote_id = EXCLUDED.left_remote_id,
     right_remote_id = EXCLUDED.right_remote_id,
     left_shadow = EXCLUDED.left_shadow, right_shadow = EXCLUDED.right_shadow, left_hash = EXCLUDED.left_hash,
        right_hash = EXCLUDED.right_hash,
     left_deleted = EXCLUDED.left_deleted, right_deleted = EXCLUDED.right_deleted,
        left_filtered = EXCLUDED.left_filtered, right_filtered = EXCLUDED.right_filtered,
     left_sync_disabled = EXCLUDED.left_sync_disabled, right_sync_disabled = EXCLUDED.right_sync_disabled,
        dead = EXCLUDED.dead, create_pending = EXCLUDED.create_pending,
     left_changed_at = EXCLUDED.left_changed_at, right_changed_at = EXCLUDED.right_changed_at,
        left_seen_at = COALESCE(EXCLUDED.left_seen_at, l.left_seen_at),
        right_seen_at = COALESCE(EXCLUDED.right_seen_at, l.right_seen_at), updated_at = now()`;

/** Which links' records were seen on each side (their `<side>_seen_at` becomes the transaction's time). */
export interface SeenLinks {
  left: string[];
  right: string[];
}

/** Links as they should be stored; inserted when new, otherwise every column is overwritten. */
export async function saveLinks(db: Db, syncId: string, links: LinkRow[], seen: SeenLinks): Promise<void> {
  if (links.length === 0) return;
  const seenLeft = new Set(seen.left);
  const seenRight = new Set(seen.right);
  const rows = links.map((link) => ({
    ...link,
    left_seen: seenLeft.has(link.id),
    right_seen: seenRight.has(link.id),
  }));
  await db.query(SAVE_LINKS_SQL, [JSON.stringify(rows), syncId]);
}

const SERVER_NOW_SQL = `SELECT now()::text AS now`;

const transactionTimes = new WeakMap<Db, Promise<string>>();

/**
 * The transaction's start time as the server's text (`now()`): COPY rows carry it where an INSERT would call
 * now(). It is the same for the whole transaction, so it is read once per transaction.
 */
function serverNow(db: Db): Promise<string> {
  let now = transactionTimes.get(db);
  if (!now) {
    now = db.query(SERVER_NOW_SQL).then((rows: { now: string }[]) => rows[0]!.now);
    transactionTimes.set(db, now);
  }
  return now;
}

/**
 * `created_at` and `updated_at` are left to their default, `now()`: the server parses no timestamp text for
 * them.
 */
const NEW_LINK_COLUMNS = [
  'id',
  'sync_id',
  'table_pair',
  'service_id',
  'name',
  'left_remote_id',
  'right_remote_id',
  'left_shadow',
  'right_shadow',
  'left_hash',
  'right_hash',
  'left_deleted',
  'right_deleted',
  'left_filtered',
  'right_filtered',
  'left_sync_disabled',
  'right_sync_disabled',
  'dead',
  'create_pending',
  'left_changed_at',
  'right_changed_at',
  'left_seen_at',
  'right_seen_at',
  'created_op',
];

const FLAG_COLUMNS: ReadonlySet<string> = new Set([
  'left_deleted',
  'right_deleted',
  'left_filtered',
  'right_filtered',
  'left_sync_disabled',
  'right_sync_disabled',
  'dead',
  'create_pending',
]);

/**
 * The same without the flags, `create_pending` and the change times, for links that hold their defaults there
 * (a plain initial create).
 */
const PLAIN_LINK_COLUMNS = NEW_LINK_COLUMNS.filter(
  (column) => !FLAG_COLUMNS.has(column) && !column.endsWith('_changed_at'),
);

/**
 * Link columns whose COPY text needs no escaping (see `copyIn`): ids the service made, numbers, hashes
 * (base64url), flags, and the server's time. Names, remote ids, shadows and service ids (a row may carry any
 * text there) do.
 */
const UNESCAPED_LINK_COLUMNS = [
  'id',
  'sync_id',
  'table_pair',
  'left_hash',
  'right_hash',
  ...FLAG_COLUMNS,
  'left_seen_at',
  'right_seen_at',
  'created_op',
];
const NEW_LINK_PLAIN = plainColumns(NEW_LINK_COLUMNS, UNESCAPED_LINK_COLUMNS);
const PLAIN_LINK_PLAIN = plainColumns(PLAIN_LINK_COLUMNS, UNESCAPED_LINK_COLUMNS);

function plain(link: LinkRow): boolean {
  return (
    !link.left_deleted &&
    !link.right_deleted &&
    !link.left_filtered &&
    !link.right_filtered &&
    !link.left_sync_disabled &&
    !link.right_sync_disabled &&
    !link.dead &&
    link.create_pending === null &&
    link.left_changed_at === null &&
    link.right_changed_at === null
  );
}

/** A new link's COPY row: the narrow columns when `narrow` (every link holds the default flags). */
function copyRow(
  link: LinkRow,
  syncId: string,
  narrow: boolean,
  leftSeen: string | null,
  rightSeen: string | null,
): (string | number | boolean | null)[] {
  const left = shadowJson(link, 'left');
  const right = shadowJson(link, 'right');
  const head = [
    link.id,
    syncId,
    link.table_pair,
    link.service_id,
    link.name,
    link.left_remote_id,
    link.right_remote_id,
    left,
    right !== null && right === left ? SAME_AS_LEFT : right,
    link.left_hash,
    link.right_hash,
  ];
  if (narrow) return [...head, leftSeen, rightSeen, link.created_op ?? null];
  return [
    ...head,
    link.left_deleted,
    link.right_deleted,
    link.left_filtered,
    link.right_filtered,
    link.left_sync_disabled,
    link.right_sync_disabled,
    link.dead,
    link.create_pending,
    link.left_changed_at,
    link.right_changed_at,
    leftSeen,
    rightSeen,
    link.created_op ?? null,
  ];
}

/**
 * Links stored for the first time (no row yet: no create intent was written for them), copied in one `COPY`.
 * A right shadow with the same JSON text as the left one is stored as `SAME_AS_LEFT`; when every link holds
 * the default flags (as after an initial create), those columns are left to their defaults. Falls back to
 * `saveLinks` outside a PostgreSQL transaction.
 */
export async function insertLinks(db: Db, syncId: string, links: LinkRow[], seen: SeenLinks): Promise<void> {
  if (links.length === 0) return;
  const now = await serverNow(db);
  const seenLeft = new Set(seen.left);
  const seenRight = new Set(seen.right);
  const narrow = links.every(plain);
  const rows = links.map((link) =>
    copyRow(link, syncId, narrow, seenLeft.has(link.id) ? now : null, seenRight.has(link.id) ? now : null),
  );
  const columns = narrow ? PLAIN_LINK_COLUMNS : NEW_LINK_COLUMNS;
  if (!(await copyIn(db, 'record_links', columns, rows, narrow ? PLAIN_LINK_PLAIN : NEW_LINK_PLAIN))) {
    await saveLinks(db, syncId, links, seen);
  }
}

const INSERT_CREATE_INTENTS_SQL = `
  INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id,
     create_pending)
  SELECT v.id, $1, v.table_pair, v.service_id::uuid, v.left_remote_id, v.right_remote_id, v.create_pending
  FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
    AS v(id, table_pair, service_id, left_remote_id, right_remote_id, create_pending)`;

const UPDATE_CREATE_INTENTS_SQL = `
  UPDATE record_links l SET create_pending = v.create_pending, updated_at = now()
  FROM unnest($2::text[], $3::text[]) AS v(id, create_pending)
  WHERE l.sync_id = $1 AND l.id = v.id`;

/**
 * Create intents, written (and committed) before the app sees the creates: a new link is inserted with just
 * its ids, its source copy's remote id and `create_pending` (the full row follows in the page's commit); an
 * existing link only gets `create_pending`. A narrow insert: a page of a thousand costs one round trip.
 */
export async function saveCreateIntents(
  db: Db,
  syncId: string,
  intents: { link: LinkRow; isNew: boolean }[],
): Promise<void> {
  const fresh = intents.filter((intent) => intent.isNew).map((intent) => intent.link);
  const existing = intents.filter((intent) => !intent.isNew).map((intent) => intent.link);
  if (fresh.length > 0) {
    await db.query(INSERT_CREATE_INTENTS_SQL, [
      syncId,
      fresh.map((link) => link.id),
      fresh.map((link) => link.table_pair),
      fresh.map((link) => link.service_id),
      fresh.map((link) => link.left_remote_id),
      fresh.map((link) => link.right_remote_id),
      fresh.map((link) => link.create_pending),
    ]);
  }
  if (existing.length > 0) {
    await db.query(UPDATE_CREATE_INTENTS_SQL, [
      syncId,
      existing.map((link) => link.id),
      existing.map((link) => link.create_pending),
    ]);
  }
}

/**
 * A person restored a held delete: the missing side's copy is forgotten (the next reconcile creates it again,
 * under a new service id). The right shadow is resolved first when the left one is cleared (`SAME_AS_LEFT`).
 */
export async function forgetCopy(db: Db, linkId: string, missing: SideName): Promise<void> {
  const keepRight = missing === 'left' ? `right_shadow = ${RIGHT_SHADOW}, ` : '';
  await db.query(
    `UPDATE record_links
        SET ${keepRight}${missing}_remote_id = NULL, ${missing}_shadow = NULL, ${missing}_hash = NULL,
            ${missing}_deleted = false, dead = false, service_id = gen_random_uuid(), updated_at = now()
      WHERE id = $1`,
    [linkId],
  );
}

const TABLE_PAIRS_SQL = `
  SELECT id, table_pair FROM record_links WHERE sync_id = $1 AND id = ANY($2::text[])`;

/** The table pair of each of these records of the sync (those still linked). */
export async function linkTablePairs(
  db: Db,
  syncId: string,
  recordIds: string[],
): Promise<Pick<LinkRow, 'id' | 'table_pair'>[]> {
  return db.query(TABLE_PAIRS_SQL, [syncId, recordIds]);
}

const HAS_LINKS_SQL = `
  SELECT EXISTS (SELECT 1 FROM record_links WHERE sync_id = $1 AND table_pair = $2) AS found`;

/** Whether the table pair has any link. */
export async function hasLinks(db: Db, syncId: string, pair: number): Promise<boolean> {
  const rows: { found: boolean }[] = await db.query(HAS_LINKS_SQL, [syncId, pair]);
  return rows[0]?.found === true;
}

const ANALYZE_LOOKUPS_SQL = `
  ANALYZE record_links (sync_id, table_pair, left_remote_id, right_remote_id, service_id)`;

/**
 * Fresh statistics for the columns links are looked up by (a full ANALYZE would also sample the shadows), so
 * that the planner uses the indexes while the table grows fast (an initial sync).
 */
export async function analyzeLinkLookups(db: Db): Promise<void> {
  await db.query(ANALYZE_LOOKUPS_SQL);
}

const SYNCED_RIGHT_SQL = `
  SELECT right_remote_id FROM record_links
  WHERE sync_id = $1 AND table_pair = $2 AND right_remote_id = ANY($3::text[]) AND right_shadow IS NOT NULL`;

/** Those of these right-side records whose link holds a right shadow (synced already). */
export async function syncedRightRemoteIds(
  db: Db,
  syncId: string,
  pair: number,
  remoteIds: string[],
): Promise<string[]> {
  const rows: { right_remote_id: string }[] = await db.query(SYNCED_RIGHT_SQL, [syncId, pair, remoteIds]);
  return rows.map((row) => row.right_remote_id);
}

/** The side's copy of the record is gone (confirmed missing, or deleted by the engine). */
export async function markDeleted(db: Db, linkId: string, side: SideName): Promise<void> {
  await db.query(`UPDATE record_links SET ${side}_deleted = true, updated_at = now() WHERE id = $1`, [
    linkId,
  ]);
}

/** The side's copy is gone, and when `dead` the link is dead too (nothing left to sync). */
export async function markDeletedOrDead(
  db: Db,
  linkId: string,
  side: SideName,
  dead: boolean,
): Promise<void> {
  await db.query(
    `UPDATE record_links SET ${side}_deleted = true, dead = dead OR $2, updated_at = now() WHERE id = $1`,
    [linkId, dead],
  );
}

/**
 * A link a full scan compared: its record's remote id, content hash and whether its copy was marked deleted.
 */
export interface SeenLink {
  remote_id: string;
  hash: string | null;
  deleted: boolean;
}

/** A full scan saw these records of the side: their links' seen time is now; returns what to compare. */
export async function markSeen(
  db: Db,
  syncId: string,
  pair: number,
  side: SideName,
  remoteIds: string[],
): Promise<SeenLink[]> {
  return returnedRows<SeenLink>(
    await db.query(
      `UPDATE record_links SET ${side}_seen_at = now()
       WHERE sync_id = $1 AND table_pair = $2 AND ${side}_remote_id = ANY($3::text[])
       RETURNING ${side}_remote_id AS remote_id, ${side}_hash AS hash, ${side}_deleted AS deleted`,
      [syncId, pair, remoteIds],
    ),
  );
}

/** The links of these records of the side whose copy there is not marked deleted. */
export async function undeletedLinkIds(
  db: Db,
  syncId: string,
  pair: number,
  side: SideName,
  remoteIds: string[],
): Promise<string[]> {
  const rows: { id: string }[] = await db.query(
    `SELECT id FROM record_links
     WHERE sync_id = $1 AND table_pair = $2 AND ${side}_remote_id = ANY($3::text[]) AND NOT ${side}_deleted`,
    [syncId, pair, remoteIds],
  );
  return rows.map((row) => row.id);
}

/**
 * The links with a copy on the side (not marked deleted) that a full scan begun at `since` did not see,
 * created before it began.
 */
export async function unseenLinkIds(
  db: Db,
  syncId: string,
  pair: number,
  side: SideName,
  since: string,
): Promise<string[]> {
  const rows: { id: string }[] = await db.query(
    `SELECT id FROM record_links
     WHERE sync_id = $1 AND table_pair = $2 AND ${side}_remote_id IS NOT NULL AND NOT ${side}_deleted
       AND (${side}_seen_at IS NULL OR ${side}_seen_at < $3::timestamptz) AND created_at < $3::timestamptz`,
    [syncId, pair, since],
  );
  return rows.map((row) => row.id);
}

/**
 * The links of the records `ids` on `side` of table pair `pair`: each record's remote id there (`source`) and
 * its copy's on the other side (`target`, null while it has none): how a relation's value crosses sides.
 */
export async function relationTargets(
  db: Db,
  syncId: string,
  pair: number,
  side: SideName,
  ids: string[],
): Promise<{ source: string; target: string | null }[]> {
  const column = side === 'left' ? 'left_remote_id' : 'right_remote_id';
  const target = side === 'left' ? 'right_remote_id' : 'left_remote_id';
  return db.query(
    `
    SELECT ${column} AS source, ${target} AS target
      FROM record_links
     WHERE sync_id = $1 AND table_pair = $2 AND ${column} = ANY($3::text[])`,
    [syncId, pair, ids],
  );
}
