/**
 * A table pair as the engine's decisions see it: the field pairs with the ways they carry values and the
 * converters between their types, the filter, the sync-enabled field, the preferred side and whether each
 * table may be written. The worker's plan (`PairPlan` in apps/worker) has this shape and more.
 */
import type { Conversion } from '../conversion/conversion';
import { type Direction, oneWayDirections } from '../mappings/directions';
import { otherSide, type SideName } from '../mappings/schema';
import type { CanonicalValue, TypeClass } from '../types/type-class';
import {
  type FieldLookup,
  type FilterGroup,
  passesFilter,
  type SyncEnabledField,
  syncEnabled,
} from './filters';
import type { Values } from './merge';

export interface PairFieldEnd {
  id: string;
  remoteId: string;
  name: string;
  typeClass: TypeClass;
}

export interface PairField {
  /** The merge key of the field pair (its index in the table pair). */
  key: string;
  left: PairFieldEnd;
  right: PairFieldEnd;
  leftToRight: boolean;
  rightToLeft: boolean;
  /** left value -> right's type, and back. */
  toRight: Conversion;
  toLeft: Conversion;
  /** For relation fields: the index of the table pair holding the targets (values go through its links). */
  relationPair: number | null;
}

export interface PairRules {
  direction: Direction;
  left: { readOnly: boolean };
  right: { readOnly: boolean };
  fields: PairField[];
  filter: FilterGroup | null;
  syncEnabled: SyncEnabledField | null;
  /** Side whose values win first-sight differences and ties. */
  preferred: SideName;
}

export function endOf(field: PairField, side: SideName): PairFieldEnd {
  return side === 'left' ? field.left : field.right;
}

/** Whether the field pair carries values from `from` to the other side. */
export function carriesFrom(field: PairField, from: SideName): boolean {
  return from === 'left' ? field.leftToRight : field.rightToLeft;
}

/** Converts a value read on `from` into the other side's field type. */
export function convertAcross(
  field: PairField,
  from: SideName,
  value: CanonicalValue,
): { ok: true; value: CanonicalValue } | { ok: false; reason: string } {
  if (value === null) return { ok: true, value: null };
  const conversion = from === 'left' ? field.toRight : field.toLeft;
  if (conversion.kind === 'incompatible') return { ok: false, reason: conversion.reason };
  return conversion.convert(value);
}

/** Pair-level: may records be created on `side` (the pair writes into it and the table is not read-only)? */
export function pairWritesInto(pair: PairRules, side: SideName): boolean {
  const ways = oneWayDirections(pair.direction);
  return side === 'right'
    ? ways.includes('left_to_right') && !pair.right.readOnly
    : ways.includes('right_to_left') && !pair.left.readOnly;
}

/**
 * A relation value translated through the target pair's links (`targets`: remote id on the source side ->
 * remote id on the other side), or undefined while a target has no copy there yet.
 */
export function translateRelation(
  targets: ReadonlyMap<string, string>,
  value: CanonicalValue,
): CanonicalValue | undefined {
  if (value === null) return null;
  if (Array.isArray(value)) {
    const out: string[] = [];
    for (const item of value) {
      const mapped = targets.get(String(item));
      if (mapped === undefined) return undefined;
      out.push(mapped);
    }
    return out;
  }
  const mapped = targets.get(String(value));
  if (mapped === undefined) return undefined;
  // Keep the target side's own representation (numbers stay numbers where the source had one).
  return typeof value === 'number' && /^-?\d+$/.test(mapped) ? Number(mapped) : mapped;
}

/** Numbers and their decimal text compare equal (a decimal column read as "12.50" vs 12.5). */
export function looseSame(a: CanonicalValue, b: CanonicalValue): boolean {
  if (typeof a === 'number' && typeof b === 'string') return b.trim() !== '' && Number(b) === a;
  if (typeof a === 'string' && typeof b === 'number') return a.trim() !== '' && Number(a) === b;
  if (
    typeof a === 'string' &&
    typeof b === 'string' &&
    /^-?\d+(\.\d+)?$/.test(a) &&
    /^-?\d+(\.\d+)?$/.test(b)
  )
    return Number(a) === Number(b);
  return false;
}

export interface RecordGate {
  passes: boolean;
  filtered: boolean;
  disabled: boolean;
}

/**
 * The filter and the sync-enabled field evaluated on a record's values by field remote id. A field is named
 * by its remote id, id or name; a side without a copy reads it through the mapping from the other side.
 */
export function recordGate(pair: PairRules, values: Record<SideName, Values | null>): RecordGate {
  const lookup: FieldLookup = (side, ref) => {
    const own = values[side];
    const field = pair.fields.find((candidate) => {
      const end = endOf(candidate, side);
      return end.remoteId === ref || end.id === ref || end.name === ref;
    });
    const remoteId = field ? endOf(field, side).remoteId : ref;
    if (own) return own[remoteId] ?? null;
    const theirs = values[otherSide(side)];
    if (field && theirs) {
      const converted = convertAcross(
        field,
        otherSide(side),
        theirs[endOf(field, otherSide(side)).remoteId] ?? null,
      );
      return converted.ok ? converted.value : null;
    }
    return null;
  };
  const filtered = !passesFilter(pair.filter, lookup);
  const disabled = !syncEnabled(pair.syncEnabled, lookup);
  return { passes: !filtered && !disabled, filtered, disabled };
}
