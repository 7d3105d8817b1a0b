/**
 * Stage 3: per unit, the pure decision (`decideRecord` in libs/domain: merge, writes, shadows, conflicts),
 * applied to the unit: operations named after the record, issues for values that cannot be converted, and the
 * link's filter and sync-enabled flags.
 */
import { setImmediate } from 'node:timers/promises';
import { decideRecord, type RecordGate, recordGate, type Values } from '@lockstep/domain';
import type { PairPlan } from '../plan';
import { changedAtOf, deletedOn, remoteOf } from '@lockstep/persistence';
import { conversionIssue } from './issues';
import { operation } from './operations';
import { Relations } from './relations';
import { type Batch, SIDES, type Unit, YIELD_EVERY } from './types';

export async function decide(batch: Batch): Promise<void> {
  const relations = new Relations(batch.ctx);
  await relations.preload(batch.pair, [...batch.units.values()]);
  batch.now = new Date().toISOString();
  let done = 0;
  for (const unit of batch.units.values()) {
    decideUnit(batch, unit, relations);
    if (++done % YIELD_EVERY === 0) await setImmediate();
  }
}

function decideUnit(batch: Batch, unit: Unit, relations: Relations): void {
  const { ctx, pair } = batch;
  const link = unit.link;
  const decision = decideRecord({
    pair,
    record: {
      current: unit.current,
      at: unit.at,
      shadows: { left: link.left_shadow as Values | null, right: link.right_shadow as Values | null },
      changedAt: { left: changedAtOf(link, 'left'), right: changedAtOf(link, 'right') },
      linked: { left: remoteOf(link, 'left') !== null, right: remoteOf(link, 'right') !== null },
      deleted: { left: deletedOn(link, 'left'), right: deletedOn(link, 'right') },
      dead: link.dead,
      wasFiltered:
        link.left_filtered || link.right_filtered || link.left_sync_disabled || link.right_sync_disabled,
      orphan: unit.orphan,
    },
    initial: batch.request.kind === 'initial',
    now: batch.now,
    relationTargets: (pairIndex, from) => relations.targets(pairIndex, from),
  });
  if (decision.gate) applyGate(unit, decision.gate);
  for (const op of decision.operations)
    unit.ops.push(
      operation(pair, link, op.side, unit.current[op.side], op.action, op.trigger, op.changes, op.details),
    );
  for (const { key, to, reason } of decision.unconvertible) {
    const field = pair.fields.find((candidate) => candidate.key === key)!;
    batch.issues.push(conversionIssue(ctx, pair, unit, field, to, reason));
  }
  unit.shadow = decision.shadow;
  unit.writes = decision.writes;
  unit.conflicts = decision.conflicts;
  unit.deferred = decision.deferred;
  unit.kept = decision.kept;
  unit.merged = decision.merged;
}

/** The link's filter and sync-enabled flags, set on each side that has a copy. */
function applyGate(unit: Unit, gate: RecordGate): void {
  const link = unit.link;
  for (const side of SIDES) {
    const has = remoteOf(link, side) !== null || unit.current[side] !== null;
    if (side === 'left') {
      link.left_filtered = has && gate.filtered;
      link.left_sync_disabled = has && gate.disabled;
    } else {
      link.right_filtered = has && gate.filtered;
      link.right_sync_disabled = has && gate.disabled;
    }
  }
}

/** The flags again from the record's current values (a write can change whether it passes). */
export function setFlags(pair: PairPlan, unit: Unit): void {
  applyGate(unit, recordGate(pair, unit.current));
}
