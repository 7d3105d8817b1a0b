/**
 * The heart of the engine: given records observed on one or both sides of a table pair (from a change
 * feed, a page of the initial sync, a full scan or a queued refetch), decide field by field what to write
 * (three-way merge against each side's shadow), write it in batches, read back what the targets now hold,
 * and commit links, shadows, operations and issues in one fenced transaction. Replaying the same
 * observations after a crash is harmless: a side whose value equals its shadow is unchanged, and a create
 * carries the link's service id so a repeated create adopts the row it already wrote.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { CanonicalValue, SideName } from '@lockstep/domain';
import { canonicalEqual, filterGate, mergeRecord, passesFilter, syncEnabled, type MergeSide, type Values } from '@lockstep/domain';
import { newId } from '@lockstep/domain';
import { isConnectorError, type SourceRecord, type WriteResult } from '@lockstep/connectors-core';
import type { EngineContext } from './context';
import { applyConfirmedDeletes } from './deletes';
import { carries, convertAcross, type FieldPlan, fieldEnd, type PairPlan, pairWrites, sideEnd } from './plan';
import {
  changedAtOf,
  type Db,
  deletedOn,
  enqueue,
  insertLinks,
  insertOperations,
  type LinkRow,
  loadLinks,
  type OperationRow,
  openRecordIssues,
  type RecordIssue,
  remoteOf,
  resolveRecordIssues,
  returnedRows,
  saveCreateIntents,
  saveLinks,
  shadowHash,
  shadowOf,
  wakeDeferredPushes,
} from '@lockstep/persistence';
import { createdBySync, type IdScheme, initialServiceId } from './service-ids';
import { isRetryableWriteError, retryableWriteError } from './write-errors';

export interface Observation {
  side: SideName;
  remoteId: string;
  record: SourceRecord;
  /** When the change happened (change-log commit time), else null (observed now / unknown). */
  at: string | null;
}

export interface ReconcileOptions {
  /** Initial sync: no poll operations for records that simply exist; first-sight differences go to the preferred side. */
  initial: boolean;
  /** Records (side:remoteId) not to create on the other side (duplicate match keys). */
  skip?: Set<string>;
  /**
   * None of the observed records has a link (an initial sync pass that began with no links for the pair, see
   * `unlinkedPass`): no links are looked up. Not by remote id, and not by the service ids the records carry
   * either: the only links of the pair are the ones this pass wrote, for records of its earlier pages on the side
   * it reads, under service ids derived for their copies on the other side, which no record of this side carries.
   * A record carrying this sync's mark therefore finds no link, exactly as a lookup would find none (an orphan).
   */
  unlinked?: boolean;
  /** Extra work in the same commit (checkpoints, progress); receives the counts of this call, final before the commit. */
  onCommit?: (tx: Db, result: ReconcileResult) => Promise<void>;
  /** Queue entries this call carries out: removed in its commit, before the entries it queues itself. */
  consumed?: string[];
  /** Per record, how often its queued push has already been tried (a deferred push backs off with each try). */
  attempts?: Map<string, number>;
  /**
   * The initial sync's run: new links take service ids derived from it (service-ids.ts), so their creates
   * need no intent in the store first (a replay derives the same ids and the connector adopts the rows).
   */
  initialRun?: string;
  /** How `initialRun` derives its ids (the run's `id_scheme`; 1 for runs prepared before scheme 2 existed). */
  initialIdScheme?: IdScheme;
  /**
   * Pipelining: once the records are decided, the app writes and the store commit run in the background while
   * the caller goes on, and the result carries them as `commit`, which the caller must await. The commit writes
   * its rows at once but commits only after `after` (the previous page's commit) has: `onCommit` runs, and the
   * transaction commits, in page order.
   */
  detach?: { after: Promise<void> | null };
  /** How many times these records were already merged again after an edit under a write (see `remerge`). */
  remerges?: number;
}

/** A push deferred until a linked record exists on the target: retried after 1 s, 2 s, 4 s... at most 5 minutes apart. */
export function deferredDelayMs(attempts: number): number {
  return Math.min(300_000, 1000 * 2 ** Math.min(attempts, 9));
}

export interface ReconcileResult {
  created: { left: number; right: number };
  updated: { left: number; right: number };
  failed: number;
  verifyDeletes: number;
  /** With `detach`: the commit still running. */
  commit?: Promise<void>;
}

const other = (side: SideName): SideName => (side === 'left' ? 'right' : 'left');
const SIDES: SideName[] = ['left', 'right'];

interface Unit {
  link: LinkRow;
  isNew: boolean;
  current: Record<SideName, Values | null>;
  at: Record<SideName, string | null>;
  /** Values to write per side (target field remote id -> value), and which keys they came from. */
  writes: Record<SideName, { values: Values; keys: string[]; create: boolean } | null>;
  /** Shadow updates to apply after the writes, per side: field remote id -> value. */
  shadow: Record<SideName, Values>;
  ops: OperationRow[];
  /** Conflicts decided for this record, by the side whose write carries them (`to`: the losing side's copy). */
  conflicts: { to: SideName; field: string; winner: SideName; reason: string }[];
  deferred: boolean;
  /**
   * Per side: a change of that side did not reach the other one (a value that cannot be converted, a link whose
   * target is not there yet, a write refused or dropped); its shadow kept the old values for it.
   */
  kept: Record<SideName, boolean>;
  /** Both sides' values went through the field merge (a side's pending change was decided on, one way or the other). */
  merged: boolean;
  /**
   * A copy this sync created whose link never reached the store (a crash between the app write and the
   * commit) and whose source record has since gone: linked as it is, and its source is taken as deleted.
   */
  orphan: boolean;
}

function mappedFields(pair: PairPlan, side: SideName): string[] {
  return pair.fields.map((field) => fieldEnd(field, side).remoteId);
}

function pick(values: Record<string, CanonicalValue>, fields: string[]): Values {
  const out: Values = {};
  for (const field of fields) out[field] = values[field] ?? null;
  return out;
}

function recordName(pair: PairPlan, side: SideName, values: Values | null, remoteId: string | null): string | null {
  if (values) {
    for (const field of pair.fields) {
      const end = fieldEnd(field, side);
      const value = values[end.remoteId];
      if (end.typeClass === 'text' && typeof value === 'string' && value !== '') return value.slice(0, 200);
    }
  }
  return remoteId;
}

/** An operation on one side of a link (its record name from the values that side shows). */
function operation(pair: PairPlan, link: LinkRow, side: SideName, values: Values | null, action: string, trigger: OperationRow['trigger'], changes: OperationRow['field_changes'], details: Record<string, unknown> | null): OperationRow {
  const table = sideEnd(pair, side);
  const remoteId = remoteOf(link, side);
  return { record_id: link.id, table_pair: pair.index, side, table_id: table.id, table_name: table.name, record_remote_id: remoteId, record_name: recordName(pair, side, values, remoteId), action, trigger, field_changes: changes, details };
}

/** Translates relation values through record links of the target pair. */
class Relations {
  private readonly maps = new Map<string, Map<string, string>>();
  constructor(private readonly ctx: EngineContext) {}

  async preload(pair: PairPlan, units: Unit[]): Promise<void> {
    for (const field of pair.fields) {
      if (field.relationPair === null) continue;
      for (const side of SIDES) {
        const ids = new Set<string>();
        for (const unit of units) {
          const value = unit.current[side]?.[fieldEnd(field, side).remoteId];
          for (const id of Array.isArray(value) ? value : [value]) if (typeof id === 'string' || typeof id === 'number') ids.add(String(id));
        }
        if (ids.size === 0) continue;
        const column = side === 'left' ? 'left_remote_id' : 'right_remote_id';
        const target = side === 'left' ? 'right_remote_id' : 'left_remote_id';
        const rows: { source: string; target: string | null }[] = await this.ctx.db.query(
          `SELECT ${column} AS source, ${target} AS target FROM record_links WHERE sync_id = $1 AND table_pair = $2 AND ${column} = ANY($3::text[])`,
          [this.ctx.syncId, field.relationPair, [...ids]],
        );
        const map = this.map(field.relationPair, side);
        for (const row of rows) if (row.target !== null) map.set(row.source, row.target);
      }
    }
  }

  private map(pairIndex: number, from: SideName): Map<string, string> {
    const key = `${pairIndex}:${from}`;
    let map = this.maps.get(key);
    if (!map) {
      map = new Map();
      this.maps.set(key, map);
    }
    return map;
  }

  /** The value for the other side, or undefined when a target has no copy there yet. */
  translate(field: FieldPlan, from: SideName, value: CanonicalValue): CanonicalValue | undefined {
    if (value === null) return null;
    const map = this.map(field.relationPair!, from);
    if (Array.isArray(value)) {
      const out: string[] = [];
      for (const item of value) {
        const mapped = map.get(String(item));
        if (mapped === undefined) return undefined;
        out.push(mapped);
      }
      return out;
    }
    const mapped = map.get(String(value));
    if (mapped === undefined) return undefined;
    // Keep the target side's own representation (numbers stay numbers where the source had one).
    return typeof value === 'number' && /^-?\d+$/.test(mapped) ? Number(mapped) : mapped;
  }
}

/**
 * Long synchronous loops over a page's records (a thousand of them take tens of milliseconds) give the event loop
 * a turn every YIELD_EVERY records: the earlier pages' app writes and store commits, running in the background,
 * send their next statement as soon as the previous one answers instead of after the whole loop, so the
 * databases work while the worker decides (measured: 12-16% more rows per second in the initial sync).
 */
const YIELD_EVERY = 64;

export async function reconcile(ctx: EngineContext, pair: PairPlan, observations: Observation[], options: ReconcileOptions): Promise<ReconcileResult> {
  const result: ReconcileResult = { created: { left: 0, right: 0 }, updated: { left: 0, right: 0 }, failed: 0, verifyDeletes: 0 };
  const fields = { left: mappedFields(pair, 'left'), right: mappedFields(pair, 'right') };
  // 1. Latest observation per record.
  const latest = new Map<string, Observation>();
  for (const observation of observations) latest.set(`${observation.side}:${observation.remoteId}`, observation);
  const obs = [...latest.values()];
  const ids = { left: obs.filter((o) => o.side === 'left').map((o) => o.remoteId), right: obs.filter((o) => o.side === 'right').map((o) => o.remoteId) };
  const serviceIds = { own: [] as string[], unplaced: [] as string[] };
  if (!options.unlinked) for (const o of obs) {
    const id = o.record.serviceId;
    if (typeof id === 'string' && /^[0-9a-f-]{36}$/i.test(id)) (createdBySync(ctx.syncId, id) ? serviceIds.own : serviceIds.unplaced).push(id);
  }
  const links = options.unlinked ? [] : await loadLinks(ctx.db, ctx.syncId, pair.index, ids.left, ids.right, serviceIds);
  const byRemote = { left: new Map<string, LinkRow>(), right: new Map<string, LinkRow>() };
  const byService = new Map<string, LinkRow>();
  for (const link of links) {
    if (link.left_remote_id !== null) byRemote.left.set(link.left_remote_id, link);
    if (link.right_remote_id !== null) byRemote.right.set(link.right_remote_id, link);
    byService.set(link.service_id, link);
  }

  // 2. Units: one per link (new links for records seen for the first time).
  const units = new Map<string, Unit>();
  const reappeared = new Set<string>();
  const unitFor = (link: LinkRow, isNew: boolean): Unit => {
    let unit = units.get(link.id);
    if (!unit) {
      unit = { link, isNew, current: { left: null, right: null }, at: { left: null, right: null }, writes: { left: null, right: null }, shadow: { left: {}, right: {} }, ops: [], conflicts: [], deferred: false, kept: { left: false, right: false }, merged: false, orphan: false };
      units.set(link.id, unit);
    }
    return unit;
  };
  let seenCount = 0;
  for (const o of obs) {
    if (++seenCount % YIELD_EVERY === 0) await setImmediate();
    let link = byRemote[o.side].get(o.remoteId);
    if (!link && o.record.serviceId) {
      // A row this sync created (its service id is the link's) whose remote id was not stored before a crash: adopt it.
      const adopted = byService.get(o.record.serviceId.toLowerCase());
      if (adopted && remoteOf(adopted, o.side) === null) {
        if (o.side === 'left') adopted.left_remote_id = o.remoteId;
        else adopted.right_remote_id = o.remoteId;
        if (adopted.create_pending === o.side) adopted.create_pending = null;
        link = adopted;
      }
    }
    let isNew = false;
    let orphan = false;
    if (!link) {
      if (options.skip?.has(`${o.side}:${o.remoteId}`)) continue;
      isNew = true;
      orphan = createdBySync(ctx.syncId, o.record.serviceId) && !byService.has(o.record.serviceId!.toLowerCase());
      const serviceId = orphan ? o.record.serviceId!.toLowerCase() : options.initialRun ? initialServiceId(ctx.syncId, options.initialRun, pair.index, o.side, o.remoteId, options.initialIdScheme ?? 1) : randomUUID();
      link = blankLink(pair.index, serviceId);
      if (o.side === 'left') link.left_remote_id = o.remoteId;
      else link.right_remote_id = o.remoteId;
      byRemote[o.side].set(o.remoteId, link);
      byService.set(serviceId, link);
    }
    const unit = unitFor(link, isNew);
    unit.orphan ||= orphan;
    unit.current[o.side] = pick(o.record.values, fields[o.side]);
    unit.at[o.side] = o.at;
    // A record seen again on a side where it was marked deleted has reappeared: its pending delete closes by itself.
    if (!isNew && deletedOn(link, o.side)) reappeared.add(link.id);
    if (o.side === 'left') link.left_deleted = false;
    else link.right_deleted = false;
  }

  // 3. The other side's current values where it has a copy that was not observed.
  const verify: { recordId: string; side: SideName }[] = [];
  for (const side of SIDES) {
    const wanted = [...units.values()].filter((unit) => unit.current[side] === null && remoteOf(unit.link, side) !== null && !deletedOn(unit.link, side));
    if (wanted.length === 0) continue;
    await ctx.assertCanWrite();
    const found = await ctx.sides[side].use((connection) => connection.readByIds(sideEnd(pair, side).remoteId, wanted.map((unit) => remoteOf(unit.link, side)!)));
    const byId = new Map(found.map((record) => [record.remoteId, record]));
    for (const unit of wanted) {
      const record = byId.get(remoteOf(unit.link, side)!);
      if (record) unit.current[side] = pick(record.values, fields[side]);
      else verify.push({ recordId: unit.link.id, side });
    }
  }

  const relations = new Relations(ctx);
  await relations.preload(pair, [...units.values()]);
  const issues: RecordIssue[] = [];
  const queue: { recordId: string; type: 'push' | 'verify_delete'; side: SideName | null; delayMs?: number; attempts?: number }[] = verify.map((entry) => ({ ...entry, type: 'verify_delete' as const }));
  const now = new Date().toISOString();

  // 4. Decide per unit.
  let done = 0;
  for (const unit of units.values()) {
    decide(ctx, pair, unit, relations, options, issues, now);
    if (++done % YIELD_EVERY === 0) await setImmediate();
  }

  // 5.-7. Write, read back, record and commit. Detached (the pipelined initial sync), this runs in the
  // background while the caller decides the next page; that page's app writes queue behind these on the side's
  // single connection, and its commit follows this one.
  const finish = async (after: Promise<void> | null): Promise<void> => {
    // 5. Write: creates (with a create intent stored first), then updates, per side.
    const succeeded: { recordId: string; side: SideName }[] = [];
    const edited: { unit: Unit; target: SideName; at: string }[] = [];
    for (const target of SIDES) {
      const creates = [...units.values()].filter((unit) => unit.writes[target]?.create);
      const updates = [...units.values()].filter((unit) => unit.writes[target] && !unit.writes[target]!.create);
      if (creates.length === 0 && updates.length === 0) continue;
      const table = sideEnd(pair, target);
      if (creates.length > 0) {
        for (const unit of creates) unit.link.create_pending = target;
        // The create intent: links exist (with their service id) before the app sees the create. An initial
        // sync's new links need none: their service ids are derived, so a replay derives them again.
        const intents = creates.filter((unit) => !(unit.isNew && options.initialRun));
        if (intents.length > 0) await ctx.fenced((tx) => saveCreateIntents(tx, ctx.syncId, intents.map((unit) => ({ link: unit.link, isNew: unit.isNew }))));
        for (const unit of intents) unit.isNew = false;
      }
      // What each write stored: the record the connector read back inside its own write transaction, if it did.
      const written: { unit: Unit; stored: SourceRecord | null }[] = [];
      for (let offset = 0; offset < creates.length; offset += ctx.writeBatch) {
        const batch = creates.slice(offset, offset + ctx.writeBatch);
        await ctx.assertCanWrite();
        const results = await ctx.sides[target].use((connection) => connection.createRecords(table.remoteId, batch.map((unit) => ({ serviceId: unit.link.service_id, values: unit.writes[target]!.values }))));
        batch.forEach((unit, index) => {
          const outcome = results[index]!;
          if (outcome.ok) {
            if (target === 'left') unit.link.left_remote_id = outcome.remoteId;
            else unit.link.right_remote_id = outcome.remoteId;
            unit.link.create_pending = null;
            written.push({ unit, stored: outcome.record });
          } else {
            unit.link.create_pending = null;
            failWrite(ctx, pair, unit, target, outcome, issues, result);
          }
        });
      }
      for (let offset = 0; offset < updates.length; offset += ctx.writeBatch) {
        const batch = updates.slice(offset, offset + ctx.writeBatch);
        await ctx.assertCanWrite();
        const results = await ctx.sides[target].use((connection) =>
          connection.updateRecords(table.remoteId, batch.map((unit) => ({ remoteId: remoteOf(unit.link, target)!, values: unit.writes[target]!.values, expected: expectedOf(unit, target) }))),
        );
        batch.forEach((unit, index) => {
          const outcome = results[index]!;
          if (outcome.ok) written.push({ unit, stored: outcome.record });
          else if (outcome.error.kind === 'changed') {
            // Edited on the target since it was read (step 3 or the observation): nothing was written, and the
            // source keeps its pending change (its old shadow). The record is merged again once this commit is in.
            dropWrite(pair, unit, target);
            edited.push({ unit, target, at: new Date().toISOString() });
          } else if (outcome.error.kind === 'not_found') {
            unit.writes[target] = null;
            queue.push({ recordId: unit.link.id, type: 'verify_delete', side: target });
          } else failWrite(ctx, pair, unit, target, outcome, issues, result);
        });
      }
      // 6. The target's shadow is what it stored. A connector that read the row back inside its write transaction
      //    says exactly that; otherwise the shadow is what was sent. A separate read-back after the commit would
      //    race with the app: an edit made there in between would land in the shadow and never reach the other side.
      //    Only a create that left mapped fields unwritten (the app fills them in) is read back, for those fields.
      const fillIns = written.filter(({ unit, stored }) => stored === null && unit.writes[target]!.create && fields[target].some((field) => !Object.prototype.hasOwnProperty.call(unit.writes[target]!.values, field)));
      const readBack = new Map<string, SourceRecord>();
      const readIds = fillIns.map(({ unit }) => remoteOf(unit.link, target)!);
      for (let offset = 0; offset < readIds.length; offset += 1000) {
        const found = await ctx.sides[target].use((connection) => connection.readByIds(table.remoteId, readIds.slice(offset, offset + 1000)));
        for (const record of found) readBack.set(record.remoteId, record);
      }
      let recorded = 0;
      for (const { unit, stored } of written) {
        if (++recorded % YIELD_EVERY === 0) await setImmediate();
        const write = unit.writes[target]!;
        const filled = readBack.get(remoteOf(unit.link, target)!);
        const values = stored ? pick(stored.values, fields[target]) : { ...(filled ? pick(filled.values, fields[target]) : {}), ...write.values };
        const before = shadowOf(unit.link, target);
        const changes: OperationRow['field_changes'] = [];
        if (write.create) {
          Object.assign(unit.shadow[target], values);
          unit.current[target] = values;
          for (const field of pair.fields) {
            const end = fieldEnd(field, target);
            if (Object.prototype.hasOwnProperty.call(write.values, end.remoteId)) changes.push({ field: end.name, before: null, after: values[end.remoteId] ?? null });
          }
          result.created[target] += 1;
        } else {
          // What the target shows now counts for the flags below (an update that turns the sync-enabled field off on the other side).
          unit.current[target] = { ...(unit.current[target] ?? {}), ...pick(values, Object.keys(write.values)) };
          for (const remoteId of Object.keys(write.values)) {
            unit.shadow[target][remoteId] = values[remoteId] ?? null;
            const end = pair.fields.map((field) => fieldEnd(field, target)).find((f) => f.remoteId === remoteId);
            changes.push({ field: end?.name ?? remoteId, before: before?.[remoteId] ?? null, after: values[remoteId] ?? null });
          }
          result.updated[target] += 1;
        }
        succeeded.push({ recordId: unit.link.id, side: target });
        const conflicts = unit.conflicts.filter((conflict) => conflict.to === target).map(({ field, winner, reason }) => ({ field, winner, reason }));
        unit.ops.push(operation(pair, unit.link, target, values, write.create ? 'created' : 'updated', 'push', changes, conflicts.length > 0 ? { conflicts } : null));
      }
    }

    // 7. Shadows, hashes, flags; then one fenced commit.
    const toSave: LinkRow[] = [];
    const fresh: LinkRow[] = [];
    const operations: OperationRow[] = [];
    const seen = { left: [] as string[], right: [] as string[] };
    // Records whose pending change on one side is decided now (carried, or lost to a later change of the other side).
    const settled: { recordId: string; side: SideName }[] = [];
    let stepped = 0;
    for (const unit of units.values()) {
      if (++stepped % YIELD_EVERY === 0) await setImmediate();
      // A write can change whether the record passes the filter or the sync-enabled field (the field may be on the side written).
      if (unit.writes.left || unit.writes.right) setFlags(pair, unit);
      for (const side of SIDES) {
        const updates = unit.shadow[side];
        if (Object.keys(updates).length === 0) continue;
        const merged = { ...(shadowOf(unit.link, side) ?? {}), ...updates };
        if (side === 'left') {
          unit.link.left_shadow = merged;
          unit.link.left_hash = shadowHash(merged, fields.left);
        } else {
          unit.link.right_shadow = merged;
          unit.link.right_hash = shadowHash(merged, fields.right);
        }
      }
      for (const side of SIDES) if (unit.current[side] !== null) seen[side].push(unit.link.id);
      for (const side of keepChangeTimes(unit, now)) settled.push({ recordId: unit.link.id, side: other(side) });
      unit.link.name = recordName(pair, unit.current.left ? 'left' : 'right', unit.current.left ?? unit.current.right, remoteOf(unit.link, unit.current.left ? 'left' : 'right')) ?? unit.link.name;
      if (unit.deferred) {
        const tried = options.attempts?.get(unit.link.id) ?? 0;
        queue.push({ recordId: unit.link.id, type: 'push', side: null, delayMs: deferredDelayMs(tried), attempts: tried + 1 });
      }
      (unit.isNew ? fresh : toSave).push(unit.link);
      operations.push(...unit.ops);
    }
    // Records edited on a target between the read and the write are merged again right after this commit (see
    // `remerge`); in the initial sync (first sight: the preferred side wins whatever the times), and after
    // MAX_REMERGES rounds of a record that keeps being edited, a queued push does it instead.
    const remerging = !options.initial && !options.detach && (options.remerges ?? 0) < MAX_REMERGES;
    if (!remerging) {
      for (const { unit } of edited) {
        const tried = options.attempts?.get(unit.link.id) ?? 0;
        queue.push({ recordId: unit.link.id, type: 'push', side: null, delayMs: deferredDelayMs(tried), attempts: tried + 1 });
      }
    }
    result.verifyDeletes = queue.filter((entry) => entry.type === 'verify_delete').length;
    // A link stored for the first time has no open issue to clear.
    const freshIds = new Set(fresh.map((link) => link.id));
    const issueKeys = new Set(issues.map((issue) => `${issue.recordId}:${issue.side}`));
    const resolved = succeeded.filter((entry) => !freshIds.has(entry.recordId) && !issueKeys.has(`${entry.recordId}:${entry.side}`));
    const moot = settled.filter((entry) => !issueKeys.has(`${entry.recordId}:${entry.side}`));
    const orphans = [...units.values()].filter((unit) => unit.orphan).map((unit) => ({ link: unit.link, side: other(unit.current.left ? 'left' : 'right') }));
    const commit = async (after: Promise<void> | null): Promise<void> => {
      await ctx.fenced(async (tx) => {
        await insertLinks(tx, ctx.syncId, fresh, seen);
        await saveLinks(tx, ctx.syncId, toSave, seen);
        await insertOperations(tx, ctx.syncId, operations);
        await openRecordIssues(tx, ctx.syncId, issues);
        await resolveRecordIssues(tx, ctx.syncId, resolved);
        // Nothing is left to carry there: the issues of converting or writing the settled change are moot.
        await resolveRecordIssues(tx, ctx.syncId, moot, ['convert', 'write']);
        if (options.consumed && options.consumed.length > 0) await tx.query(`DELETE FROM record_queue WHERE id = ANY($1::bigint[])`, [options.consumed]);
        await enqueue(tx, ctx.syncId, queue);
        // Records that may be link targets were created: pushes waiting for them need not wait out their backoff.
        if (!options.initial && result.created.left + result.created.right > 0) {
          const dependents = ctx.plan.pairs.filter((candidate) => candidate.fields.some((field) => field.relationPair === pair.index)).map((candidate) => candidate.index);
          if (dependents.length > 0) await wakeDeferredPushes(tx, ctx.syncId, dependents);
        }
        await closeReappeared(tx, ctx.syncId, [...reappeared]);
        // Pipelined: the rows above went in while the previous page's commit may still have been running; the
        // progress is written, and this transaction commits, only after that one did (commits stay in page order).
        if (after) await after;
        if (options.onCommit) await options.onCommit(tx, result);
      });
      // The source of an orphaned copy is gone: the delete rules decide about the copy (a pending delete under review).
      if (orphans.length > 0) await applyConfirmedDeletes(ctx, pair, orphans);
    };
    await commit(after);
    if (remerging && edited.length > 0) {
      const again = await remerge(ctx, pair, edited, now, (options.remerges ?? 0) + 1);
      for (const side of SIDES) {
        result.created[side] += again.created[side];
        result.updated[side] += again.updated[side];
      }
      result.failed += again.failed;
      result.verifyDeletes += again.verifyDeletes;
    }
  };
  if (options.detach) {
    result.commit = finish(options.detach.after);
    // Awaited by the caller later; meanwhile a failure must not count as an unhandled rejection.
    result.commit.catch(() => undefined);
    return result;
  }
  await finish(null);
  return result;
}

/** Pending deletes of records that reappeared before review close by themselves (event `closed`). */
async function closeReappeared(tx: Db, syncId: string, recordIds: string[]): Promise<void> {
  if (recordIds.length === 0) return;
  const closed = returnedRows<{ id: string; record_id: string }>(
    await tx.query(`UPDATE pending_deletes SET state = 'closed', decided_at = now() WHERE sync_id = $1 AND record_id = ANY($2::text[]) AND state = 'awaiting_review' RETURNING id, record_id`, [syncId, recordIds]),
  );
  for (const row of closed) await tx.query(`INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor) VALUES ($1, $2, $3, 'closed', 'engine')`, [row.id, syncId, row.record_id]);
}

function blankLink(pair: number, serviceId: string): LinkRow {
  return {
    id: newId('record'),
    service_id: serviceId,
    table_pair: pair,
    name: null,
    left_remote_id: null,
    right_remote_id: null,
    left_shadow: null,
    right_shadow: null,
    left_hash: null,
    right_hash: null,
    left_deleted: false,
    right_deleted: false,
    left_filtered: false,
    right_filtered: false,
    left_sync_disabled: false,
    right_sync_disabled: false,
    dead: false,
    create_pending: null,
    left_changed_at: null,
    right_changed_at: null,
  };
}

/** Filter and sync-enabled field, evaluated on the record's values (a side without a copy reads through the mapping). */
function gate(pair: PairPlan, unit: Unit, values: Record<SideName, Values | null>): { passes: boolean; filtered: boolean; disabled: boolean } {
  const lookup = (side: SideName, ref: string): CanonicalValue => {
    const own = values[side];
    const field = pair.fields.find((candidate) => {
      const end = fieldEnd(candidate, side);
      return end.remoteId === ref || end.id === ref || end.name === ref;
    });
    const remoteId = field ? fieldEnd(field, side).remoteId : ref;
    if (own) return own[remoteId] ?? null;
    const theirs = values[other(side)];
    if (field && theirs) {
      const converted = convertAcross(field, other(side), theirs[fieldEnd(field, other(side)).remoteId] ?? null);
      return converted.ok ? converted.value : null;
    }
    return null;
  };
  const filtered = !passesFilter(pair.filter, lookup);
  const disabled = !syncEnabled(pair.syncEnabled, lookup);
  void unit;
  return { passes: !filtered && !disabled, filtered, disabled };
}

/** The link's filter and sync-enabled flags from the record's current values (on each side that has a copy). */
function setFlags(pair: PairPlan, unit: Unit): { passes: boolean; filtered: boolean; disabled: boolean } {
  const link = unit.link;
  const now = gate(pair, unit, unit.current);
  for (const side of SIDES) {
    const has = remoteOf(link, side) !== null || unit.current[side] !== null;
    if (side === 'left') {
      link.left_filtered = has && now.filtered;
      link.left_sync_disabled = has && now.disabled;
    } else {
      link.right_filtered = has && now.filtered;
      link.right_sync_disabled = has && now.disabled;
    }
  }
  return now;
}

function decide(ctx: EngineContext, pair: PairPlan, unit: Unit, relations: Relations, options: ReconcileOptions, issues: RecordIssue[], now: string): void {
  const link = unit.link;
  const present = SIDES.filter((side) => unit.current[side] !== null);
  if (present.length === 0) return;
  if (unit.orphan) {
    // Our own copy, written before a crash: its create is recorded now, and nothing is written.
    const side = present[0]!;
    const current = unit.current[side]!;
    for (const field of pair.fields) unit.shadow[side][fieldEnd(field, side).remoteId] = current[fieldEnd(field, side).remoteId] ?? null;
    const changes = pair.fields.map((field) => ({ field: fieldEnd(field, side).name, before: null, after: current[fieldEnd(field, side).remoteId] ?? null }));
    unit.ops.push(operation(pair, link, side, current, 'created', 'push', changes, { recovered: true, reason: 'Written by this sync before a crash; its source record was gone when the sync resumed.' }));
    return;
  }
  const shadows = { left: link.left_shadow as Values | null, right: link.right_shadow as Values | null };
  // Filters: a record failing them syncs in neither direction; the change that makes it fail still syncs.
  const before = shadows.left || shadows.right ? gate(pair, unit, { left: shadows.left, right: shadows.right }).passes : null;
  const wasFiltered = link.left_filtered || link.right_filtered || link.left_sync_disabled || link.right_sync_disabled;
  const now_ = setFlags(pair, unit);
  const decision = filterGate(wasFiltered ? false : before, now_.passes);
  const pollOps = (side: SideName) => {
    const current = unit.current[side];
    const shadow = shadows[side];
    if (!current || options.initial) return;
    const changes: OperationRow['field_changes'] = [];
    for (const field of pair.fields) {
      const end = fieldEnd(field, side);
      const after = current[end.remoteId] ?? null;
      const was = shadow ? (shadow[end.remoteId] ?? null) : null;
      if (!shadow || !canonicalEqual(after, was)) changes.push({ field: end.name, before: was, after });
    }
    if (changes.length === 0 && shadow) return;
    unit.ops.push(operation(pair, link, side, current, shadow ? 'updated' : 'created', 'poll', changes, null));
  };
  for (const side of present) pollOps(side);

  if (!decision.sync) {
    // Filtered out: nothing is written and shadows stay, so the record syncs once it passes again.
    return;
  }

  if (present.length === 2) {
    const side = (s: SideName): MergeSide => {
      const current = unit.current[s]!;
      const shadow = shadows[s];
      const keyed: Values = {};
      const keyedShadow: Values | null = shadow ? {} : null;
      for (const field of pair.fields) {
        const end = fieldEnd(field, s);
        keyed[field.key] = current[end.remoteId] ?? null;
        if (keyedShadow && shadow && Object.prototype.hasOwnProperty.call(shadow, end.remoteId)) keyedShadow[field.key] = (shadow[end.remoteId] ?? null) as CanonicalValue;
      }
      // A change seen before and still pending (its write was refused or dropped) counts at the time it was seen.
      return { current: keyed, shadow: keyedShadow, changedAt: options.initial ? null : (unit.at[s] ?? changedAtOf(link, s) ?? now) };
    };
    unit.merged = true;
    const outcomes = mergeRecord({
      fields: pair.fields.map((field) => ({ key: field.key, leftToRight: field.leftToRight, rightToLeft: field.rightToLeft })),
      left: side('left'),
      right: side('right'),
      preferred: pair.preferred,
      sameValue: (key, leftValue, rightValue) => {
        const field = pair.fields.find((f) => f.key === key)!;
        const across = valueFor(field, 'left', leftValue, relations);
        if (across.kind !== 'ok') return false;
        return canonicalEqual(across.value, rightValue) || looseSame(across.value, rightValue);
      },
    });
    for (const outcome of outcomes) {
      const field = pair.fields.find((f) => f.key === outcome.key)!;
      if (outcome.outcome === 'unchanged') continue;
      if (outcome.outcome === 'converged') {
        for (const s of SIDES) unit.shadow[s][fieldEnd(field, s).remoteId] = unit.current[s]![fieldEnd(field, s).remoteId] ?? null;
        continue;
      }
      if (outcome.outcome === 'held') {
        unit.shadow[outcome.side][fieldEnd(field, outcome.side).remoteId] = unit.current[outcome.side]![fieldEnd(field, outcome.side).remoteId] ?? null;
        continue;
      }
      const from = outcome.from;
      const to = outcome.to;
      const value = unit.current[from]![fieldEnd(field, from).remoteId] ?? null;
      const across = valueFor(field, from, value, relations);
      if (across.kind === 'deferred') {
        unit.deferred = true;
        unit.kept[from] = true;
        continue;
      }
      if (across.kind === 'failed') {
        conversionIssue(ctx, pair, unit, field, to, across.reason, issues);
        unit.kept[from] = true;
        continue;
      }
      unit.shadow[from][fieldEnd(field, from).remoteId] = value;
      const write = (unit.writes[to] ??= { values: {}, keys: [], create: false });
      write.values[fieldEnd(field, to).remoteId] = across.value;
      write.keys.push(field.key);
      if (outcome.conflict) unit.conflicts.push({ to, field: fieldEnd(field, to).name, winner: outcome.conflict.winner, reason: outcome.conflict.reason });
    }
    return;
  }

  // One side has a copy: create it on the other side when the pair writes there.
  const from = present[0]!;
  const to = other(from);
  const current = unit.current[from]!;
  for (const field of pair.fields) unit.shadow[from][fieldEnd(field, from).remoteId] = current[fieldEnd(field, from).remoteId] ?? null;
  const blocked = link.dead || deletedOn(link, to) || remoteOf(link, to) !== null || !pairWrites(pair, to);
  if (blocked) return;
  const values: Values = {};
  let unconvertible = false;
  for (const field of pair.fields) {
    if (!carries(field, from)) continue;
    const across = valueFor(field, from, current[fieldEnd(field, from).remoteId] ?? null, relations);
    if (across.kind === 'deferred') {
      // The target record is not on the other side yet: the link is written in a second pass.
      unit.deferred = true;
      delete unit.shadow[from][fieldEnd(field, from).remoteId];
      continue;
    }
    if (across.kind === 'failed') {
      conversionIssue(ctx, pair, unit, field, to, across.reason, issues);
      unconvertible = true;
      continue;
    }
    values[fieldEnd(field, to).remoteId] = across.value;
  }
  if (unconvertible) {
    // A copy without one of its values would be wrong (or refused): no create until the record is fixed.
    unit.shadow[from] = {};
    return;
  }
  unit.writes[to] = { values, keys: [], create: true };
}

type Across = { kind: 'ok'; value: CanonicalValue } | { kind: 'deferred' } | { kind: 'failed'; reason: string };

function valueFor(field: FieldPlan, from: SideName, value: CanonicalValue, relations: Relations): Across {
  if (field.relationPair !== null) {
    const translated = relations.translate(field, from, value);
    return translated === undefined ? { kind: 'deferred' } : { kind: 'ok', value: translated };
  }
  const converted = convertAcross(field, from, value);
  return converted.ok ? { kind: 'ok', value: converted.value } : { kind: 'failed', reason: converted.reason };
}

/** Numbers and their decimal text compare equal (a decimal column read as "12.50" vs 12.5). */
function looseSame(a: CanonicalValue, b: CanonicalValue): boolean {
  if (typeof a === 'number' && typeof b === 'string') return b.trim() !== '' && Number(b) === a;
  if (typeof a === 'string' && typeof b === 'number') return a.trim() !== '' && Number(a) === b;
  if (typeof a === 'string' && typeof b === 'string' && /^-?\d+(\.\d+)?$/.test(a) && /^-?\d+(\.\d+)?$/.test(b)) return Number(a) === Number(b);
  return false;
}

function recordUrl(ctx: EngineContext, recordId: string): string {
  return `${ctx.publicUrl}/v1/sync/records/${recordId}?sync=${ctx.syncId}`;
}

function conversionIssue(ctx: EngineContext, pair: PairPlan, unit: Unit, field: FieldPlan, to: SideName, reason: string, issues: RecordIssue[]): void {
  const from = other(to);
  issues.push({
    recordId: unit.link.id,
    side: to,
    connector: ctx.sides[to].connector,
    cause: `convert:${field.key}`,
    message: `The value of ${fieldEnd(field, from).name} cannot be written to ${sideEnd(pair, to).name}.${fieldEnd(field, to).name}: ${reason}`,
    remediation: {
      explanation: `Lockstep converts ${fieldEnd(field, from).typeClass} values of the ${from} field "${fieldEnd(field, from).name}" into the ${to} field "${fieldEnd(field, to).name}" (${fieldEnd(field, to).typeClass}); this value does not fit: ${reason}.`,
      suggested_action: `Change the value in the ${from} record, or widen the ${to} field's type; the record syncs again when it changes (or retry this issue).`,
      links: [{ name: 'Record status', url: recordUrl(ctx, unit.link.id) }],
    },
    tableId: sideEnd(pair, to).id,
    tableName: sideEnd(pair, to).name,
    remoteId: remoteOf(unit.link, from),
    name: unit.link.name,
    recordUrl: recordUrl(ctx, unit.link.id),
  });
}

/**
 * An update is conditional on the target still holding the values this reconcile saw there for the fields it
 * writes: an edit made on the target between that read and the write is then not overwritten (see `dropWrite`).
 */
function expectedOf(unit: Unit, target: SideName): Values | undefined {
  const current = unit.current[target];
  if (!current) return undefined;
  const expected: Values = {};
  for (const remoteId of Object.keys(unit.writes[target]!.values)) expected[remoteId] = current[remoteId] ?? null;
  return expected;
}

/** How often one reconcile call merges records again whose target keeps being edited under its writes. */
const MAX_REMERGES = 3;

/**
 * Merges again records whose conditional update found the target edited since it was read. The target is read
 * anew; its edit is the later change (it was made after the read, so after the source change that was being
 * written), so where both sides changed the same field, the conflict rules see the target's edit as later: the
 * target wins a two-way field (`later_change`), the source a field carried only its way (`direction`), and the
 * operation records the conflict. The source is observed as this call saw it, at its change time (or when this
 * call decided); an edit made there since reaches the engine through its own change feed.
 */
async function remerge(ctx: EngineContext, pair: PairPlan, edited: { unit: Unit; target: SideName; at: string }[], decidedAt: string, remerges: number): Promise<ReconcileResult> {
  const observations: Observation[] = [];
  for (const target of SIDES) {
    const entries = edited.filter((entry) => entry.target === target);
    if (entries.length === 0) continue;
    const from = other(target);
    await ctx.assertCanWrite();
    const found = await ctx.sides[target].use((connection) => connection.readByIds(sideEnd(pair, target).remoteId, entries.map(({ unit }) => remoteOf(unit.link, target)!)));
    const byId = new Map(found.map((record) => [record.remoteId, record]));
    for (const { unit, at } of entries) {
      const source = remoteOf(unit.link, from);
      if (source !== null && unit.current[from]) observations.push({ side: from, remoteId: source, record: { remoteId: source, values: unit.current[from]! }, at: unit.at[from] ?? decidedAt });
      // Gone meanwhile: step 3 of the new merge finds it missing and queues the check of its delete.
      const record = byId.get(remoteOf(unit.link, target)!);
      if (record) observations.push({ side: target, remoteId: record.remoteId, record, at });
    }
  }
  return reconcile(ctx, pair, observations, { initial: false, remerges });
}

/** A write that did not happen: the written fields keep their old shadow on the source side, so the change is tried again. */
function dropWrite(pair: PairPlan, unit: Unit, target: SideName): void {
  const from = other(target);
  const write = unit.writes[target]!;
  for (const key of write.keys) {
    const field = pair.fields.find((f) => f.key === key)!;
    delete unit.shadow[from][fieldEnd(field, from).remoteId];
  }
  if (write.create) for (const field of pair.fields) delete unit.shadow[from][fieldEnd(field, from).remoteId];
  unit.writes[target] = null;
  unit.kept[from] = true;
}

/**
 * The links' change times (`LinkRow.left_changed_at`): a side whose change did not reach the other one keeps the
 * time that change was seen (this round's observation, else the time stored before, else now); a side whose values
 * went through the merge with nothing kept, or whose copy was just created on the other side, has nothing pending
 * any more. A record that was not merged otherwise (filtered, one side only) keeps what it had. Called after the
 * writes (a write that failed is null by then). Returns the sides that had a pending change and have none now.
 */
function keepChangeTimes(unit: Unit, now: string): SideName[] {
  const settled: SideName[] = [];
  for (const side of SIDES) {
    const before = changedAtOf(unit.link, side);
    const time = unit.kept[side] ? (unit.at[side] ?? before ?? now) : unit.merged || unit.writes[other(side)] !== null ? null : before;
    if (before !== null && time === null) settled.push(side);
    if (side === 'left') unit.link.left_changed_at = time;
    else unit.link.right_changed_at = time;
  }
  return settled;
}

function failWrite(ctx: EngineContext, pair: PairPlan, unit: Unit, target: SideName, outcome: Extract<WriteResult, { ok: false }>, issues: RecordIssue[], result: ReconcileResult): void {
  const from = other(target);
  const error = outcome.error;
  if (error.kind === 'auth' || error.retryable) {
    // Not the record's fault: the whole batch is retried (the caller sees the thrown error).
    throw retryableWriteError(error, target);
  }
  result.failed += 1;
  const write = unit.writes[target]!;
  dropWrite(pair, unit, target);
  issues.push({
    recordId: unit.link.id,
    side: target,
    connector: ctx.sides[target].connector,
    cause: `write:${error.appCode ?? error.kind}`,
    message: `${write.create ? 'Creating' : 'Updating'} the record in ${sideEnd(pair, target).name} (${target}) was rejected: ${error.message}`,
    remediation: {
      explanation: `The ${target} app refused the ${write.create ? 'new record' : 'change'} Lockstep wrote for "${unit.link.name ?? remoteOf(unit.link, from) ?? unit.link.id}": ${error.message}${error.appCode ? ` (code ${error.appCode})` : ''}. The rest of the batch was written.`,
      suggested_action: `Fix the value in the ${from} record (or relax the constraint on the ${target} table "${sideEnd(pair, target).name}"); Lockstep writes it again when the record changes, at the next full scan, or when this issue is retried.`,
      links: [{ name: 'Record status', url: recordUrl(ctx, unit.link.id) }],
    },
    tableId: sideEnd(pair, target).id,
    tableName: sideEnd(pair, target).name,
    remoteId: remoteOf(unit.link, from),
    name: unit.link.name,
    recordUrl: recordUrl(ctx, unit.link.id),
  });
}

export { isConnectorError, isRetryableWriteError, retryableWriteError };
