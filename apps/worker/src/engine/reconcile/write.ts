/**
 * Stage 4: the writes, per side: creates (with a create intent stored first), then updates, in batches. The
 * target's shadow is what it stored, never a separate read after the write (see `recordWritten`).
 */
import { setImmediate } from 'node:timers/promises';
import type { SideName, Values } from '@lockstep/domain';
import type { SourceRecord, WriteResult } from '@lockstep/connectors-core';
import { fieldEnd, sideEnd } from '../plan';
import { type OperationRow, remoteOf, saveCreateIntents, shadowOf } from '@lockstep/persistence';
import { retryableWriteError } from '../write-errors';
import { rejectedWriteIssue } from './issues';
import { operation } from './operations';
import { type Batch, type Edited, other, pick, SIDES, timed, type Unit, YIELD_EVERY } from './types';

export interface WriteOutcome {
  /** Writes that went through. */
  succeeded: { recordId: string; side: SideName }[];
  /** Conditional updates that found the target edited since it was read: nothing was written. */
  edited: Edited[];
}

/** What each write stored: the record the connector read back inside its own write transaction, if it did. */
type Written = { unit: Unit; stored: SourceRecord | null }[];

export async function write(batch: Batch): Promise<WriteOutcome> {
  const outcome: WriteOutcome = { succeeded: [], edited: [] };
  for (const target of SIDES) {
    const units = [...batch.units.values()];
    const creates = units.filter((unit) => unit.writes[target]?.create);
    const updates = units.filter((unit) => unit.writes[target] && !unit.writes[target]!.create);
    if (creates.length === 0 && updates.length === 0) continue;
    if (creates.length > 0) await saveIntents(batch, target, creates);
    const written: Written = [];
    await createAll(batch, target, creates, written);
    await updateAll(batch, target, updates, written, outcome.edited);
    await recordWritten(batch, target, written, outcome.succeeded);
  }
  return outcome;
}

/**
 * The create intent: links exist (with their service id) before the app sees the create. An initial sync's
 * new links need none: their service ids are derived, so a replay derives them again.
 */
async function saveIntents(batch: Batch, target: SideName, creates: Unit[]): Promise<void> {
  const { ctx, request } = batch;
  for (const unit of creates) unit.link.create_pending = target;
  const derived = request.kind === 'initial' && request.initialRun;
  const intents = creates.filter((unit) => !(unit.isNew && derived));
  if (intents.length > 0) {
    const rows = intents.map((unit) => ({ link: unit.link, isNew: unit.isNew }));
    await ctx.fenced((tx) => saveCreateIntents(tx, ctx.syncId, rows));
  }
  for (const unit of intents) unit.isNew = false;
}

async function createAll(batch: Batch, target: SideName, creates: Unit[], written: Written): Promise<void> {
  const { ctx, pair } = batch;
  const table = sideEnd(pair, target);
  for (let offset = 0; offset < creates.length; offset += ctx.writeBatch) {
    const slice = creates.slice(offset, offset + ctx.writeBatch);
    const records = slice.map((unit) => ({
      serviceId: unit.link.service_id,
      values: unit.writes[target]!.values,
    }));
    await ctx.assertCanWrite();
    const results = await timed(batch.request, 'write_target', () =>
      ctx.sides[target].use((connection) => connection.createRecords(table.remoteId, records)),
    );
    slice.forEach((unit, index) => {
      const outcome = results[index]!;
      unit.link.create_pending = null;
      if (outcome.ok) {
        if (target === 'left') unit.link.left_remote_id = outcome.remoteId;
        else unit.link.right_remote_id = outcome.remoteId;
        written.push({ unit, stored: outcome.record });
      } else failWrite(batch, unit, target, outcome);
    });
  }
}

async function updateAll(
  batch: Batch,
  target: SideName,
  updates: Unit[],
  written: Written,
  edited: Edited[],
): Promise<void> {
  const { ctx, pair } = batch;
  const table = sideEnd(pair, target);
  for (let offset = 0; offset < updates.length; offset += ctx.writeBatch) {
    const slice = updates.slice(offset, offset + ctx.writeBatch);
    const records = slice.map((unit) => ({
      remoteId: remoteOf(unit.link, target)!,
      values: unit.writes[target]!.values,
      expected: expectedOf(unit, target),
    }));
    await ctx.assertCanWrite();
    const results = await timed(batch.request, 'write_target', () =>
      ctx.sides[target].use((connection) => connection.updateRecords(table.remoteId, records)),
    );
    slice.forEach((unit, index) => {
      const outcome = results[index]!;
      if (outcome.ok) written.push({ unit, stored: outcome.record });
      else if (outcome.error.kind === 'changed') {
        // Edited on the target since it was read (stage 2 or the observation): nothing was written, and the
        // source keeps its pending change (its old shadow). The record is merged again once this commit is
        // in.
        dropWrite(batch, unit, target);
        edited.push({ unit, target, at: new Date().toISOString() });
      } else if (outcome.error.kind === 'not_found') {
        unit.writes[target] = null;
        batch.queue.push({ recordId: unit.link.id, type: 'verify_delete', side: target });
      } else failWrite(batch, unit, target, outcome);
    });
  }
}

/**
 * An update is conditional on the target still holding the values this reconcile saw there for the fields it
 * writes: an edit made on the target between that read and the write is then not overwritten (see
 * `dropWrite`).
 */
function expectedOf(unit: Unit, target: SideName): Values | undefined {
  const current = unit.current[target];
  if (!current) return undefined;
  const expected: Values = {};
  for (const remoteId of Object.keys(unit.writes[target]!.values))
    expected[remoteId] = current[remoteId] ?? null;
  return expected;
}

/**
 * Only a create that left mapped fields unwritten (the app fills them in) is read back, for those fields: a
 * separate read-back after the write would race with the app (an edit made there in between would land in the
 * shadow and never reach the other side).
 */
async function readFillIns(
  batch: Batch,
  target: SideName,
  written: Written,
): Promise<Map<string, SourceRecord>> {
  const { ctx, pair, fields } = batch;
  const fillIns = written.filter(
    ({ unit, stored }) =>
      stored === null &&
      unit.writes[target]!.create &&
      fields[target].some(
        (field) => !Object.prototype.hasOwnProperty.call(unit.writes[target]!.values, field),
      ),
  );
  const readBack = new Map<string, SourceRecord>();
  const readIds = fillIns.map(({ unit }) => remoteOf(unit.link, target)!);
  const table = sideEnd(pair, target).remoteId;
  for (let offset = 0; offset < readIds.length; offset += 1000) {
    const ids = readIds.slice(offset, offset + 1000);
    const found = await ctx.sides[target].use((connection) => connection.readByIds(table, ids));
    for (const record of found) readBack.set(record.remoteId, record);
  }
  return readBack;
}

/**
 * The target's shadow is what it stored: the record a connector read back inside its write transaction, else
 * what was sent (with the fields a create left to the app read back); each write is recorded as an operation.
 */
async function recordWritten(
  batch: Batch,
  target: SideName,
  written: Written,
  succeeded: WriteOutcome['succeeded'],
): Promise<void> {
  const { pair, fields, result } = batch;
  const readBack = await readFillIns(batch, target, written);
  let recorded = 0;
  for (const { unit, stored } of written) {
    if (++recorded % YIELD_EVERY === 0) await setImmediate();
    const write = unit.writes[target]!;
    const filled = readBack.get(remoteOf(unit.link, target)!);
    const values = stored
      ? pick(stored.values, fields[target])
      : filled
        ? { ...pick(filled.values, fields[target]), ...write.values }
        : { ...write.values };
    const before = shadowOf(unit.link, target);
    const changes: OperationRow['field_changes'] = [];
    if (write.create) {
      Object.assign(unit.shadow[target], values);
      unit.current[target] = values;
      for (const field of pair.fields) {
        const end = fieldEnd(field, target);
        if (Object.prototype.hasOwnProperty.call(write.values, end.remoteId))
          changes.push({ field: end.name, before: null, after: values[end.remoteId] ?? null });
      }
      result.created[target] += 1;
    } else {
      // What the target shows now counts for the flags (an update that turns the sync-enabled field off on
      // the other side).
      unit.current[target] = { ...(unit.current[target] ?? {}), ...pick(values, Object.keys(write.values)) };
      for (const remoteId of Object.keys(write.values)) {
        unit.shadow[target][remoteId] = values[remoteId] ?? null;
        const end = pair.fields.map((field) => fieldEnd(field, target)).find((f) => f.remoteId === remoteId);
        changes.push({
          field: end?.name ?? remoteId,
          before: before?.[remoteId] ?? null,
          after: values[remoteId] ?? null,
        });
      }
      result.updated[target] += 1;
    }
    succeeded.push({ recordId: unit.link.id, side: target });
    const action = write.create ? 'created' : 'updated';
    unit.ops.push(
      operation(pair, unit.link, target, values, action, 'push', changes, conflictDetails(unit, target)),
    );
  }
}

/** A write's operation details: the conflicts it carries to `target`, or null. */
function conflictDetails(unit: Unit, target: SideName): Record<string, unknown> | null {
  if (unit.conflicts.length === 0) return null;
  const conflicts = unit.conflicts
    .filter((conflict) => conflict.to === target)
    .map(({ field, winner, reason }) => ({ field, winner, reason }));
  return conflicts.length > 0 ? { conflicts } : null;
}

/**
 * A write that did not happen: the written fields keep their old shadow on the source side, so the change is
 * tried again.
 */
function dropWrite(batch: Batch, unit: Unit, target: SideName): void {
  const { pair } = batch;
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
 * A write the app refused: an issue for the record; an outage or a rejected credential fails the whole call.
 */
function failWrite(
  batch: Batch,
  unit: Unit,
  target: SideName,
  outcome: Extract<WriteResult, { ok: false }>,
): void {
  const error = outcome.error;
  if (error.kind === 'auth' || error.retryable) {
    // Not the record's fault: the whole batch is retried (the caller sees the thrown error).
    throw retryableWriteError(error, target);
  }
  batch.result.failed += 1;
  const create = unit.writes[target]!.create;
  dropWrite(batch, unit, target);
  batch.issues.push(rejectedWriteIssue(batch.ctx, batch.pair, unit, target, create, outcome));
}
