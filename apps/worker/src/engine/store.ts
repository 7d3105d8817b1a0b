/**
 * The engine's SQL against the service store: record links, the per-record queue, operations and issues.
 * Bulk statements (jsonb_to_recordset / unnest) keep a page of a thousand records at a handful of round trips.
 */
import { hash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { newId } from '@lockstep/domain';
import type { SideName } from '@lockstep/domain';
import { copyIn, raiseIssues } from '@lockstep/persistence';

export type Db = Pick<EntityManager, 'query'>;

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
   * When the side's change that the other side has not taken yet was seen (ISO 8601), or null: set when the write
   * carrying it was refused or dropped, a value could not be converted or a relation was deferred (the side's
   * shadow kept its old values), so that a later merge compares that change's own time with the other side's,
   * not the time it reads the record again (`keepChangeTimes` in reconcile.ts).
   */
  left_changed_at: string | null;
  right_changed_at: string | null;
}

/**
 * A right shadow stored as this JSON text means "the same values as the left shadow" (see `insertLinks`): after
 * an initial create between two tables with the same field names and representations, both sides show the same
 * values, and storing them once saves the store one copy of them per record (about 130 bytes in the benchmark's
 * table, written to the heap, the WAL and again when the page is evicted). Shadows are always objects, so a JSON string cannot be a real one. Every reader goes through
 * `LINK_COLUMNS` (which resolves it in SQL), and a statement that clears the left shadow resolves it first.
 */
export const SAME_AS_LEFT = '"="';

/** The right shadow as the engine reads it: `SAME_AS_LEFT` resolved to the left shadow. */
export const RIGHT_SHADOW = `CASE WHEN right_shadow::text = '${SAME_AS_LEFT}' THEN left_shadow ELSE right_shadow END`;

const LINK_COLUMNS = `id, service_id::text AS service_id, table_pair, name, left_remote_id, right_remote_id, left_shadow, ${RIGHT_SHADOW} AS right_shadow, left_hash, right_hash,
  left_deleted, right_deleted, left_filtered, right_filtered, left_sync_disabled, right_sync_disabled, dead, create_pending,
  ${isoTime('left_changed_at')} AS left_changed_at, ${isoTime('right_changed_at')} AS right_changed_at`;

/** A `timestamptz` column as ISO 8601 text in UTC (what the merge compares). */
function isoTime(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

export function remoteOf(link: LinkRow, side: SideName): string | null {
  return side === 'left' ? link.left_remote_id : link.right_remote_id;
}

export function shadowOf(link: LinkRow, side: SideName): Record<string, unknown> | null {
  return side === 'left' ? link.left_shadow : link.right_shadow;
}

export function changedAtOf(link: LinkRow, side: SideName): string | null {
  return side === 'left' ? link.left_changed_at : link.right_changed_at;
}

export function deletedOn(link: LinkRow, side: SideName): boolean {
  return side === 'left' ? link.left_deleted : link.right_deleted;
}

/** Stable JSON (sorted keys) and its hash: the content hash of a side's mapped values. */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${stableJson(record[key])}`)
    .join(',')}}`;
}

/** Per list of mapped fields: the distinct fields in `stableJson`'s key order, each with its JSON key prefix. */
const hashKeys = new WeakMap<string[], { field: string; prefix: string }[]>();

function hashKeysOf(fields: string[]): { field: string; prefix: string }[] {
  let keys = hashKeys.get(fields);
  if (!keys) {
    keys = [...new Set(fields)].sort().map((field) => ({ field, prefix: `${JSON.stringify(field)}:` }));
    hashKeys.set(fields, keys);
  }
  return keys;
}

/** The stable JSON of exactly these fields of `values` (missing ones as null), and whether `values` holds no other key. */
function hashedText(values: Record<string, unknown>, keys: { field: string; prefix: string }[]): { text: string; exact: boolean } {
  let text = '{';
  let exact = true;
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index]!;
    const value = values[key.field];
    if (value === undefined) exact = false;
    text += (index === 0 ? '' : ',') + key.prefix + (value === null || value === undefined ? 'null' : typeof value === 'object' ? stableJson(value) : JSON.stringify(value));
  }
  text += '}';
  if (exact) {
    let count = 0;
    for (const name in values) if (Object.prototype.hasOwnProperty.call(values, name)) count += 1;
    exact = count === keys.length;
  }
  return { text, exact };
}

/** The two sides of a record are hashed one after the other, and often hold the same text (the same field names and values on both sides, as after a create): the last hash is reused then. */
function hashOf(text: string): string {
  if (text !== lastHashed.text) lastHashed = { text, hash: hash('sha1', text, 'base64url') };
  return lastHashed.hash;
}

/**
 * The content hash of a side's mapped values: sha1 (base64url) of the stable JSON of exactly those fields
 * (missing ones as null). Equal to hashing `stableJson` of the picked values, without building the object.
 */
export function contentHash(values: Record<string, unknown> | null, fields: string[]): string | null {
  if (!values) return null;
  return hashOf(hashedText(values, hashKeysOf(fields)).text);
}

/**
 * Shadows whose JSON text is already known: the stable JSON their hash was taken from, when they hold exactly
 * the mapped fields (as after a create). The store keeps that text as the shadow (any key order is the same
 * JSON object), so it is not serialized a second time (see `shadowJson`).
 */
const shadowTexts = new WeakMap<object, string>();

/** `contentHash` of a shadow about to be stored; remembers its text for `shadowJson` when it can stand for the whole shadow. */
export function shadowHash(shadow: Record<string, unknown>, fields: string[]): string {
  const { text, exact } = hashedText(shadow, hashKeysOf(fields));
  if (exact) shadowTexts.set(shadow, text);
  return hashOf(text);
}

/** A shadow's JSON text as stored. */
export function shadowJson(shadow: Record<string, unknown>): string {
  return shadowTexts.get(shadow) ?? JSON.stringify(shadow);
}

let lastHashed = { text: '', hash: '' };

/**
 * The rows of an `UPDATE`/`DELETE ... RETURNING`: TypeORM's PostgreSQL driver answers those commands with
 * `[rows, affected count]` (and every other command with the rows), so reading such a result as rows directly
 * sees one array and one number.
 */
export function returnedRows<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}

/**
 * The links of records seen on either side, by remote id, and of records carrying a service id. A service id
 * this sync derived (`own`) is looked up among all links (an orphaned copy is recognised by its absence). Any
 * other service id only matters for adopting a row whose remote id was not stored yet (a create interrupted by
 * a crash), so it is looked up among the links that lack a remote id on a side: a small partial index, where
 * the full one would cost a random probe per record of a page (source rows often carry service ids of their own).
 */
export async function loadLinks(db: Db, syncId: string, pair: number, left: string[], right: string[], serviceIds: { own: string[]; unplaced: string[] }): Promise<LinkRow[]> {
  if (left.length === 0 && right.length === 0 && serviceIds.own.length === 0 && serviceIds.unplaced.length === 0) return [];
  // Only the conditions that can match (an empty list would still cost the planner an index scan).
  const conditions: string[] = [];
  const params: unknown[] = [syncId, pair];
  if (left.length > 0) conditions.push(`left_remote_id = ANY($${params.push(left)}::text[])`);
  if (right.length > 0) conditions.push(`right_remote_id = ANY($${params.push(right)}::text[])`);
  if (serviceIds.own.length > 0) conditions.push(`service_id = ANY($${params.push(serviceIds.own)}::uuid[])`);
  if (serviceIds.unplaced.length > 0) conditions.push(`(service_id = ANY($${params.push(serviceIds.unplaced)}::uuid[]) AND (left_remote_id IS NULL OR right_remote_id IS NULL))`);
  return db.query(`SELECT ${LINK_COLUMNS} FROM record_links WHERE sync_id = $1 AND table_pair = $2 AND (${conditions.join(' OR ')})`, params);
}

export async function loadLinksById(db: Db, ids: string[]): Promise<LinkRow[]> {
  if (ids.length === 0) return [];
  return db.query(`SELECT ${LINK_COLUMNS} FROM record_links WHERE id = ANY($1::text[])`, [ids]);
}

/** Links as they should be stored; inserted when new, otherwise every column is overwritten. */
export async function saveLinks(db: Db, syncId: string, links: LinkRow[], seen: { left: string[]; right: string[] }): Promise<void> {
  if (links.length === 0) return;
  const seenLeft = new Set(seen.left);
  const seenRight = new Set(seen.right);
  const rows = links.map((link) => ({ ...link, left_seen: seenLeft.has(link.id), right_seen: seenRight.has(link.id) }));
  await db.query(
    `INSERT INTO record_links AS l (id, sync_id, table_pair, service_id, name, left_remote_id, right_remote_id, left_shadow, right_shadow, left_hash, right_hash,
        left_deleted, right_deleted, left_filtered, right_filtered, left_sync_disabled, right_sync_disabled, dead, create_pending, left_changed_at, right_changed_at, left_seen_at, right_seen_at, updated_at)
     SELECT v.id, $2, v.table_pair, v.service_id::uuid, v.name, v.left_remote_id, v.right_remote_id, v.left_shadow, v.right_shadow, v.left_hash, v.right_hash,
        v.left_deleted, v.right_deleted, v.left_filtered, v.right_filtered, v.left_sync_disabled, v.right_sync_disabled, v.dead, v.create_pending, v.left_changed_at, v.right_changed_at,
        CASE WHEN v.left_seen THEN now() END, CASE WHEN v.right_seen THEN now() END, now()
     FROM jsonb_to_recordset($1::jsonb) AS v(id text, table_pair integer, service_id text, name text, left_remote_id text, right_remote_id text, left_shadow json, right_shadow json,
        left_hash text, right_hash text, left_deleted boolean, right_deleted boolean, left_filtered boolean, right_filtered boolean, left_sync_disabled boolean,
        right_sync_disabled boolean, dead boolean, create_pending text, left_changed_at timestamptz, right_changed_at timestamptz, left_seen boolean, right_seen boolean)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, left_remote_id = EXCLUDED.left_remote_id, right_remote_id = EXCLUDED.right_remote_id,
        left_shadow = EXCLUDED.left_shadow, right_shadow = EXCLUDED.right_shadow, left_hash = EXCLUDED.left_hash, right_hash = EXCLUDED.right_hash,
        left_deleted = EXCLUDED.left_deleted, right_deleted = EXCLUDED.right_deleted, left_filtered = EXCLUDED.left_filtered, right_filtered = EXCLUDED.right_filtered,
        left_sync_disabled = EXCLUDED.left_sync_disabled, right_sync_disabled = EXCLUDED.right_sync_disabled, dead = EXCLUDED.dead, create_pending = EXCLUDED.create_pending,
        left_changed_at = EXCLUDED.left_changed_at, right_changed_at = EXCLUDED.right_changed_at, left_seen_at = COALESCE(EXCLUDED.left_seen_at, l.left_seen_at), right_seen_at = COALESCE(EXCLUDED.right_seen_at, l.right_seen_at), updated_at = now()`,
    [JSON.stringify(rows), syncId],
  );
}

/**
 * The transaction's start time as the server's text (`now()`): COPY rows carry it where an INSERT would call
 * now(). It is the same for the whole transaction, so it is read once per transaction.
 */
function serverNow(db: Db): Promise<string> {
  let now = transactionTimes.get(db);
  if (!now) {
    now = db.query(`SELECT now()::text AS now`).then((rows: { now: string }[]) => rows[0]!.now);
    transactionTimes.set(db, now);
  }
  return now;
}

const transactionTimes = new WeakMap<Db, Promise<string>>();

/** `created_at` and `updated_at` are left to their default, `now()`: the server parses no timestamp text for them. */
const NEW_LINK_COLUMNS = [
  'id', 'sync_id', 'table_pair', 'service_id', 'name', 'left_remote_id', 'right_remote_id', 'left_shadow', 'right_shadow', 'left_hash', 'right_hash',
  'left_deleted', 'right_deleted', 'left_filtered', 'right_filtered', 'left_sync_disabled', 'right_sync_disabled', 'dead', 'create_pending',
  'left_changed_at', 'right_changed_at', 'left_seen_at', 'right_seen_at',
];

const FLAG_COLUMNS: ReadonlySet<string> = new Set(['left_deleted', 'right_deleted', 'left_filtered', 'right_filtered', 'left_sync_disabled', 'right_sync_disabled', 'dead', 'create_pending']);

/** The same without the flags, `create_pending` and the change times, for links that hold their defaults there (a plain initial create). */
const PLAIN_LINK_COLUMNS = NEW_LINK_COLUMNS.filter((column) => !FLAG_COLUMNS.has(column) && !column.endsWith('_changed_at'));

/**
 * Link columns whose COPY text needs no escaping (see `copyIn`): ids the service made, numbers, hashes (base64url),
 * flags, and the server's time. Names, remote ids, shadows and service ids (a row may carry any text there) do.
 */
const UNESCAPED_LINK_COLUMNS = ['id', 'sync_id', 'table_pair', 'left_hash', 'right_hash', ...FLAG_COLUMNS, 'left_seen_at', 'right_seen_at'];
const NEW_LINK_PLAIN = plainColumns(NEW_LINK_COLUMNS, UNESCAPED_LINK_COLUMNS);
const PLAIN_LINK_PLAIN = plainColumns(PLAIN_LINK_COLUMNS, UNESCAPED_LINK_COLUMNS);

/** `copyIn`'s `plain` flags: per column, whether it is one of `unescaped`. */
function plainColumns(columns: readonly string[], unescaped: readonly string[]): boolean[] {
  return columns.map((column) => unescaped.includes(column));
}

function plain(link: LinkRow): boolean {
  return !link.left_deleted && !link.right_deleted && !link.left_filtered && !link.right_filtered && !link.left_sync_disabled && !link.right_sync_disabled && !link.dead && link.create_pending === null && link.left_changed_at === null && link.right_changed_at === null;
}

/**
 * Links stored for the first time (no row yet: no create intent was written for them), copied in one `COPY`.
 * A right shadow with the same JSON text as the left one is stored as `SAME_AS_LEFT`; when every link holds the
 * default flags (as after an initial create), those columns are left to their defaults. Falls back to
 * `saveLinks` outside a PostgreSQL transaction.
 */
export async function insertLinks(db: Db, syncId: string, links: LinkRow[], seen: { left: string[]; right: string[] }): Promise<void> {
  if (links.length === 0) return;
  const now = await serverNow(db);
  const seenLeft = new Set(seen.left);
  const seenRight = new Set(seen.right);
  const narrow = links.every(plain);
  const rows = links.map((link) => {
    const left = link.left_shadow === null ? null : shadowJson(link.left_shadow);
    const right = link.right_shadow === null ? null : shadowJson(link.right_shadow);
    const head = [link.id, syncId, link.table_pair, link.service_id, link.name, link.left_remote_id, link.right_remote_id, left, right !== null && right === left ? SAME_AS_LEFT : right, link.left_hash, link.right_hash];
    const seenAt = [seenLeft.has(link.id) ? now : null, seenRight.has(link.id) ? now : null];
    if (narrow) return [...head, ...seenAt];
    return [...head, link.left_deleted, link.right_deleted, link.left_filtered, link.right_filtered, link.left_sync_disabled, link.right_sync_disabled, link.dead, link.create_pending, link.left_changed_at, link.right_changed_at, ...seenAt];
  });
  if (!(await copyIn(db, 'record_links', narrow ? PLAIN_LINK_COLUMNS : NEW_LINK_COLUMNS, rows, narrow ? PLAIN_LINK_PLAIN : NEW_LINK_PLAIN))) await saveLinks(db, syncId, links, seen);
}

/**
 * Create intents, written (and committed) before the app sees the creates: a new link is inserted with just
 * its ids, its source copy's remote id and `create_pending` (the full row follows in the page's commit); an
 * existing link only gets `create_pending`. A narrow insert: a page of a thousand costs one round trip.
 */
export async function saveCreateIntents(db: Db, syncId: string, intents: { link: LinkRow; isNew: boolean }[]): Promise<void> {
  const fresh = intents.filter((intent) => intent.isNew).map((intent) => intent.link);
  const existing = intents.filter((intent) => !intent.isNew).map((intent) => intent.link);
  if (fresh.length > 0) {
    await db.query(
      `INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id, create_pending)
       SELECT v.id, $1, v.table_pair, v.service_id::uuid, v.left_remote_id, v.right_remote_id, v.create_pending
       FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[]) AS v(id, table_pair, service_id, left_remote_id, right_remote_id, create_pending)`,
      [
        syncId,
        fresh.map((link) => link.id),
        fresh.map((link) => link.table_pair),
        fresh.map((link) => link.service_id),
        fresh.map((link) => link.left_remote_id),
        fresh.map((link) => link.right_remote_id),
        fresh.map((link) => link.create_pending),
      ],
    );
  }
  if (existing.length > 0) {
    await db.query(
      `UPDATE record_links l SET create_pending = v.create_pending, updated_at = now() FROM unnest($2::text[], $3::text[]) AS v(id, create_pending) WHERE l.sync_id = $1 AND l.id = v.id`,
      [syncId, existing.map((link) => link.id), existing.map((link) => link.create_pending)],
    );
  }
}

export interface OperationRow {
  record_id: string | null;
  table_pair: number;
  side: SideName;
  table_id: string;
  table_name: string;
  record_remote_id: string | null;
  record_name: string | null;
  action: string;
  trigger: 'push' | 'poll';
  field_changes: { field: string; before: unknown; after: unknown }[];
  details: Record<string, unknown> | null;
}

/** `occurred_at` is left to its default, `now()` (the transaction's time). */
const OPERATION_COLUMNS = ['id', 'sync_id', 'record_id', 'table_pair', 'side', 'table_id', 'table_name', 'record_remote_id', 'record_name', 'action', 'trigger', 'field_changes', 'details'];

/** Operation columns whose COPY text needs no escaping: the service's ids, numbers and fixed words (see `copyIn`). */
const OPERATION_PLAIN = plainColumns(OPERATION_COLUMNS, ['id', 'sync_id', 'record_id', 'table_pair', 'side', 'table_id', 'action', 'trigger']);

/**
 * `field_changes` as stored: a `before` that is null is left out (the API reads a missing one as null), which
 * makes a create's entry (every field, nothing before) about a third shorter.
 */
export function fieldChangesJson(changes: OperationRow['field_changes'] | null | undefined): string {
  if (!changes || changes.length === 0) return '[]';
  let text = '[';
  for (let index = 0; index < changes.length; index += 1) {
    const change = changes[index]!;
    const after = change.after === null || change.after === undefined ? 'null' : JSON.stringify(change.after);
    text += (index === 0 ? '' : ',') + fieldPrefix(change.field) + (change.before === null || change.before === undefined ? '' : `"before":${JSON.stringify(change.before)},`) + '"after":' + after + '}';
  }
  return `${text}]`;
}

/** `{"field":<name>,` per field name (an initial sync writes one per field and record). */
function fieldPrefix(field: string): string {
  let prefix = fieldPrefixes.get(field);
  if (prefix === undefined) {
    prefix = `{"field":${JSON.stringify(field)},`;
    if (fieldPrefixes.size > 10_000) fieldPrefixes.clear();
    fieldPrefixes.set(field, prefix);
  }
  return prefix;
}

const fieldPrefixes = new Map<string, string>();

/** Operations in one `COPY` (in the order given: `seq` follows it; `occurred_at` is the transaction's time). */
export async function insertOperations(db: Db, syncId: string, operations: OperationRow[]): Promise<void> {
  if (operations.length === 0) return;
  const copied = operations.map((o) => [
    newId('operation'), syncId, o.record_id, o.table_pair, o.side, o.table_id, o.table_name, o.record_remote_id, o.record_name, o.action, o.trigger,
    fieldChangesJson(o.field_changes), o.details === null ? null : JSON.stringify(o.details),
  ]);
  if (await copyIn(db, 'operations', OPERATION_COLUMNS, copied, OPERATION_PLAIN)) return;
  const rows = operations.map((operation) => ({ ...operation, id: newId('operation') }));
  await db.query(
    `INSERT INTO operations (id, sync_id, record_id, table_pair, side, table_id, table_name, record_remote_id, record_name, action, trigger, field_changes, details, occurred_at)
     SELECT v.id, $2, v.record_id, v.table_pair, v.side, v.table_id, v.table_name, v.record_remote_id, v.record_name, v.action, v.trigger, COALESCE(v.field_changes, '[]'::json), v.details, clock_timestamp()
     FROM jsonb_to_recordset($1::jsonb) AS v(id text, record_id text, table_pair integer, side text, table_id text, table_name text, record_remote_id text, record_name text,
        action text, trigger text, field_changes json, details json)`,
    [JSON.stringify(rows), syncId],
  );
}

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

/**
 * Records that synced: their open record issues on that side clear themselves. `kinds` limits it to issues of
 * those causes (the part of `RecordIssue.cause` before its first colon, as kept in the dedupe key).
 */
export async function resolveRecordIssues(db: Db, syncId: string, records: { recordId: string; side: SideName }[], kinds?: string[]): Promise<void> {
  if (records.length === 0) return;
  await db.query(
    `UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND type = 'record' AND resolved_at IS NULL
       AND (record_id, side) IN (SELECT * FROM unnest($2::text[], $3::text[]))${kinds ? ` AND split_part(dedupe_key, ':', 4) = ANY($4::text[])` : ''}`,
    [syncId, records.map((record) => record.recordId), records.map((record) => record.side), ...(kinds ? [kinds] : [])],
  );
}

/** A side-wide problem (app unreachable): one `connection` issue per side and cause (see `raiseIssues`). */
export async function openSideIssue(db: Db, input: { syncId: string; side: SideName; connector: string; code: string; cause: string; message: string; remediation: RecordIssue['remediation'] }): Promise<void> {
  const { syncId, side, connector, code, message, remediation } = input;
  await raiseIssues(db, syncId, [{ type: 'connection', code, side, connector, message, remediation, dedupeKey: `${input.cause}:${side}` }]);
}

export async function resolveSideIssue(db: Db, syncId: string, side: SideName, cause: string): Promise<void> {
  await db.query(`UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND dedupe_key = $2 AND resolved_at IS NULL`, [syncId, `${cause}:${side}`]);
}

/**
 * Deferred pushes (queued again with a backoff because a record they link to had no copy on the other side yet) of
 * records in these table pairs are due now: a record of the pair they link to was just created there.
 */
export async function wakeDeferredPushes(db: Db, syncId: string, pairs: number[]): Promise<void> {
  await db.query(
    `UPDATE record_queue q SET not_before = now() FROM record_links l
     WHERE q.sync_id = $1 AND q.type = 'push' AND q.attempts > 0 AND q.not_before > now() AND l.id = q.record_id AND l.table_pair = ANY($2::int[])`,
    [syncId, pairs],
  );
}

export async function enqueue(db: Db, syncId: string, entries: { recordId: string; type: 'push' | 'refetch' | 'verify_delete'; side: SideName | null; delayMs?: number; attempts?: number }[]): Promise<void> {
  if (entries.length === 0) return;
  // One waiting entry of a kind per record and side is enough (entries being carried out are removed first).
  await db.query(
    `INSERT INTO record_queue (sync_id, record_id, type, side, not_before, attempts)
     SELECT $1, v.record_id, v.type, v.side, now() + make_interval(secs => v.delay / 1000.0), v.attempts
     FROM jsonb_to_recordset($2::jsonb) AS v(record_id text, type text, side text, delay integer, attempts integer)
     WHERE NOT EXISTS (SELECT 1 FROM record_queue q WHERE q.record_id = v.record_id AND q.type = v.type AND q.side IS NOT DISTINCT FROM v.side)`,
    [syncId, JSON.stringify(entries.map((entry) => ({ record_id: entry.recordId, type: entry.type, side: entry.side, delay: entry.delayMs ?? 0, attempts: entry.attempts ?? 0 })))],
  );
}
