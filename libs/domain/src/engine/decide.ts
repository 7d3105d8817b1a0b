/**
 * What the engine does with one record pair it observed (engine design sections 3 and 7): the changes it
 * detected on each side, which side wins each field, what to write where, which shadows move, and which
 * values cannot be carried. No I/O: the worker reads the sides, the links and the relation targets, calls
 * `decideRecord`, then writes what it says and commits.
 */
import { otherSide, SIDES, type SideName } from '../mappings/schema';
import type { CanonicalValue } from '../types/type-class';
import { filterGate } from './filters';
import { canonicalEqual, type ConflictReason, type MergeSide, mergeRecord, type Values } from './merge';
import {
  carriesFrom,
  convertAcross,
  endOf,
  looseSame,
  type PairField,
  type PairRules,
  pairWritesInto,
  type RecordGate,
  recordGate,
  translateRelation,
} from './pair-rules';

/** One record pair as observed, keyed by field remote id on each side. */
export interface RecordState {
  /** Each side's values now (null: the side has no copy, or it was not observed or read). */
  current: Record<SideName, Values | null>;
  /** When each side's change happened, when known (a change log's commit time). */
  at: Record<SideName, string | null>;
  /** What each side last showed (the link's shadows; null: never synced). */
  shadows: Record<SideName, Values | null>;
  /** The time of each side's change that has not reached the other side yet (the link's `*_changed_at`). */
  changedAt: Record<SideName, string | null>;
  /** The link has a copy on the side (a remote id). */
  linked: Record<SideName, boolean>;
  deleted: Record<SideName, boolean>;
  /** The record is not re-created (a one-way destination's copy was deleted). */
  dead: boolean;
  /** The link was filtered or sync-disabled on either side before this change. */
  wasFiltered: boolean;
  /** A copy this sync created whose link never reached the store and whose source is gone. */
  orphan: boolean;
}

export interface DecideInput {
  pair: PairRules;
  record: RecordState;
  /**
   * An initial sync: existing records are not detected changes, and first-sight differences go to the
   * preferred side.
   */
  initial: boolean;
  /** The time of deciding: a pending change with no known time counts as made now. */
  now: string;
  /** Relation targets of a table pair seen from one side: remote id there -> remote id on the other side. */
  relationTargets(pairIndex: number, from: SideName): ReadonlyMap<string, string>;
}

export interface FieldChange {
  field: string;
  before: CanonicalValue;
  after: CanonicalValue;
}

/** An operation to record on a side (the worker adds the record's ids and names). */
export interface DecidedOperation {
  side: SideName;
  action: 'created' | 'updated';
  trigger: 'poll' | 'push';
  changes: FieldChange[];
  details: Record<string, unknown> | null;
}

/**
 * Values to write on a side (field remote id -> value), the field keys they carry, and whether it is a
 * create.
 */
export interface WritePlan {
  values: Values;
  keys: string[];
  create: boolean;
}

export interface RecordDecision {
  /** Shadow updates per side (field remote id -> value), applied after the writes. */
  shadow: Record<SideName, Values>;
  writes: Record<SideName, WritePlan | null>;
  /**
   * Conflicts decided, by the side whose write carries them (`to`: the losing side's copy; `field`: its
   * name).
   */
  conflicts: { to: SideName; field: string; winner: SideName; reason: ConflictReason }[];
  /** A relation value waits for its target's copy on the other side: the record is pushed again later. */
  deferred: boolean;
  /** Per side: a change of that side did not reach the other one; its shadow kept the old values for it. */
  kept: Record<SideName, boolean>;
  /** Both sides' values went through the field merge. */
  merged: boolean;
  /** The filter and sync-enabled field on the current values; null when they were not evaluated. */
  gate: RecordGate | null;
  operations: DecidedOperation[];
  /** Values that cannot be written to `to` (a conversion failed), in field order. */
  unconvertible: { key: string; to: SideName; reason: string }[];
}

type Across =
  { kind: 'ok'; value: CanonicalValue } | { kind: 'deferred' } | { kind: 'failed'; reason: string };

const RECOVERED = 'Written by this sync before a crash; its source record was gone when the sync resumed.';

function emptyDecision(): RecordDecision {
  return {
    shadow: { left: {}, right: {} },
    writes: { left: null, right: null },
    conflicts: [],
    deferred: false,
    kept: { left: false, right: false },
    merged: false,
    gate: null,
    operations: [],
    unconvertible: [],
  };
}

function valueOf(values: Values, field: PairField, side: SideName): CanonicalValue {
  return values[endOf(field, side).remoteId] ?? null;
}

function across(input: DecideInput, field: PairField, from: SideName, value: CanonicalValue): Across {
  if (field.relationPair !== null) {
    const translated = translateRelation(input.relationTargets(field.relationPair, from), value);
    return translated === undefined ? { kind: 'deferred' } : { kind: 'ok', value: translated };
  }
  const converted = convertAcross(field, from, value);
  return converted.ok ? { kind: 'ok', value: converted.value } : { kind: 'failed', reason: converted.reason };
}

/** Decides what to do with one observed record pair (see the module comment). */
export function decideRecord(input: DecideInput): RecordDecision {
  const { pair, record } = input;
  const decision = emptyDecision();
  const present = SIDES.filter((side) => record.current[side] !== null);
  if (present.length === 0) return decision;
  if (record.orphan) {
    recoverOrphan(pair, record, present[0]!, decision);
    return decision;
  }
  // Filters: a record failing them syncs in neither direction; the change that makes it fail still syncs.
  const shadows = record.shadows;
  const before = shadows.left || shadows.right ? recordGate(pair, shadows).passes : null;
  decision.gate = recordGate(pair, record.current);
  const gate = filterGate(record.wasFiltered ? false : before, decision.gate.passes);
  if (!input.initial) for (const side of present) detectChange(pair, record, side, decision);
  // Filtered out: nothing is written and shadows stay, so the record syncs once it passes again.
  if (!gate.sync) return decision;
  if (present.length === 2) mergeBoth(input, decision);
  else createOnOther(input, present[0]!, decision);
  return decision;
}

/** Our own copy, written before a crash: its create is recorded now, and nothing is written. */
function recoverOrphan(pair: PairRules, record: RecordState, side: SideName, decision: RecordDecision): void {
  const current = record.current[side]!;
  for (const field of pair.fields)
    decision.shadow[side][endOf(field, side).remoteId] = valueOf(current, field, side);
  const changes = pair.fields.map((field) => ({
    field: endOf(field, side).name,
    before: null,
    after: valueOf(current, field, side),
  }));
  const details = { recovered: true, reason: RECOVERED };
  decision.operations.push({ side, action: 'created', trigger: 'push', changes, details });
}

/** A change seen on a side against its shadow (a side never synced shows every field as created). */
function detectChange(pair: PairRules, record: RecordState, side: SideName, decision: RecordDecision): void {
  const current = record.current[side]!;
  const shadow = record.shadows[side];
  const changes: FieldChange[] = [];
  for (const field of pair.fields) {
    const end = endOf(field, side);
    const after = current[end.remoteId] ?? null;
    const was = shadow ? (shadow[end.remoteId] ?? null) : null;
    if (!shadow || !canonicalEqual(after, was)) changes.push({ field: end.name, before: was, after });
  }
  if (changes.length === 0 && shadow) return;
  decision.operations.push({
    side,
    action: shadow ? 'updated' : 'created',
    trigger: 'poll',
    changes,
    details: null,
  });
}

/** A side's values and shadow by field key, for the three-way merge. */
function mergeSide(input: DecideInput, side: SideName): MergeSide {
  const { pair, record } = input;
  const current = record.current[side]!;
  const shadow = record.shadows[side];
  const keyed: Values = {};
  const keyedShadow: Values | null = shadow ? {} : null;
  for (const field of pair.fields) {
    const end = endOf(field, side);
    keyed[field.key] = current[end.remoteId] ?? null;
    if (keyedShadow && shadow && Object.prototype.hasOwnProperty.call(shadow, end.remoteId))
      keyedShadow[field.key] = shadow[end.remoteId] ?? null;
  }
  // A change seen before and still pending (its write was refused or dropped) counts at the time it was seen.
  const changedAt = input.initial ? null : (record.at[side] ?? record.changedAt[side] ?? input.now);
  return { current: keyed, shadow: keyedShadow, changedAt };
}

/** Both sides have a copy: the field-level three-way merge decides per field. */
function mergeBoth(input: DecideInput, decision: RecordDecision): void {
  const { pair, record } = input;
  const fieldOf = (key: string): PairField => pair.fields.find((field) => field.key === key)!;
  decision.merged = true;
  const outcomes = mergeRecord({
    fields: pair.fields.map((field) => ({
      key: field.key,
      leftToRight: field.leftToRight,
      rightToLeft: field.rightToLeft,
    })),
    left: mergeSide(input, 'left'),
    right: mergeSide(input, 'right'),
    preferred: pair.preferred,
    sameValue: (key, leftValue, rightValue) => {
      const converted = across(input, fieldOf(key), 'left', leftValue);
      if (converted.kind !== 'ok') return false;
      return canonicalEqual(converted.value, rightValue) || looseSame(converted.value, rightValue);
    },
  });
  for (const outcome of outcomes) {
    const field = fieldOf(outcome.key);
    if (outcome.outcome === 'unchanged') continue;
    if (outcome.outcome === 'converged') {
      for (const s of SIDES)
        decision.shadow[s][endOf(field, s).remoteId] = valueOf(record.current[s]!, field, s);
      continue;
    }
    if (outcome.outcome === 'held') {
      const s = outcome.side;
      decision.shadow[s][endOf(field, s).remoteId] = valueOf(record.current[s]!, field, s);
      continue;
    }
    pushField(input, field, outcome.from, outcome.conflict, decision);
  }
}

/** Carries one field's value from `from` to the other side (or keeps the change pending when it cannot). */
function pushField(
  input: DecideInput,
  field: PairField,
  from: SideName,
  conflict: { winner: SideName; reason: ConflictReason } | null,
  decision: RecordDecision,
): void {
  const to = otherSide(from);
  const value = valueOf(input.record.current[from]!, field, from);
  const converted = across(input, field, from, value);
  if (converted.kind === 'deferred') {
    decision.deferred = true;
    decision.kept[from] = true;
    return;
  }
  if (converted.kind === 'failed') {
    decision.unconvertible.push({ key: field.key, to, reason: converted.reason });
    decision.kept[from] = true;
    return;
  }
  decision.shadow[from][endOf(field, from).remoteId] = value;
  const write = (decision.writes[to] ??= { values: {}, keys: [], create: false });
  write.values[endOf(field, to).remoteId] = converted.value;
  write.keys.push(field.key);
  if (conflict) decision.conflicts.push({ to, field: endOf(field, to).name, ...conflict });
}

/** One side has a copy: create it on the other side when the pair writes there. */
function createOnOther(input: DecideInput, from: SideName, decision: RecordDecision): void {
  const { pair, record } = input;
  const to = otherSide(from);
  const current = record.current[from]!;
  for (const field of pair.fields)
    decision.shadow[from][endOf(field, from).remoteId] = valueOf(current, field, from);
  const blocked = record.dead || record.deleted[to] || record.linked[to] || !pairWritesInto(pair, to);
  if (blocked) return;
  const values: Values = {};
  let unconvertible = false;
  for (const field of pair.fields) {
    if (!carriesFrom(field, from)) continue;
    const converted = across(input, field, from, valueOf(current, field, from));
    if (converted.kind === 'deferred') {
      // The target record is not on the other side yet: the link is written in a second pass.
      decision.deferred = true;
      delete decision.shadow[from][endOf(field, from).remoteId];
      continue;
    }
    if (converted.kind === 'failed') {
      decision.unconvertible.push({ key: field.key, to, reason: converted.reason });
      unconvertible = true;
      continue;
    }
    values[endOf(field, to).remoteId] = converted.value;
  }
  if (unconvertible) {
    // A copy without one of its values would be wrong (or refused): no create until the record is fixed.
    decision.shadow[from] = {};
    return;
  }
  decision.writes[to] = { values, keys: [], create: true };
}
