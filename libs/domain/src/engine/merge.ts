/**
 * Field-level three-way merge (engine design section 3). For each mapped field pair, each side's current
 * value is compared with that side's own shadow (what it last showed), never with the other side's value: a
 * side that stores a value differently (rounding, trimming) then never looks changed because of our writes.
 */
import type { CanonicalValue } from '../types/type-class';
import type { SideName } from '../mappings/schema';

export type Values = Record<string, CanonicalValue>;

export interface MergeFieldSpec {
  /** Stable key of the field pair (the engine uses the pair's index). */
  key: string;
  /** The field pair may write left's value into right. */
  leftToRight: boolean;
  /** The field pair may write right's value into left. */
  rightToLeft: boolean;
}

export interface MergeSide {
  /** The side's values now, keyed by field key; null when the side has no copy. */
  current: Values | null;
  /** The values the side last showed (null: never synced, first sight). */
  shadow: Values | null;
  /**
   * When the side's change happened: the app's commit or modified time, else when Lockstep observed it. Null
   * when unknown (initial sync).
   */
  changedAt: string | null;
}

export type ConflictReason = 'later_change' | 'preferred_side' | 'direction';

export type FieldOutcome =
  | { key: string; outcome: 'unchanged' }
  /**
   * Both sides now agree (changed to equal values, or first sight and equal), or both changed on a pair that
   * carries neither way: update both shadows, write nothing.
   */
  | { key: string; outcome: 'converged' }
  /** Write `from`'s value into `to`. `conflict` is set when both sides had changed to different values. */
  | {
      key: string;
      outcome: 'push';
      from: SideName;
      to: SideName;
      conflict: { winner: SideName; reason: ConflictReason } | null;
    }
  /** `side` changed but the field pair does not carry its changes: its shadow takes the value, no write. */
  | { key: string; outcome: 'held'; side: SideName };

export interface MergeInput {
  fields: MergeFieldSpec[];
  left: MergeSide;
  right: MergeSide;
  /** The side that wins ties (the table pair's preferred side, or the side chosen at start). */
  preferred: SideName;
  /**
   * True when left's value and right's value mean the same (after conversion between the two field types).
   */
  sameValue(key: string, leftValue: CanonicalValue, rightValue: CanonicalValue): boolean;
}

/** Deep equality of canonical values (objects compare by keys, not key order). */
export function canonicalEqual(a: CanonicalValue | undefined, b: CanonicalValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => canonicalEqual(item, b[index]));
  }
  const left = a as Record<string, CanonicalValue>;
  const right = b as Record<string, CanonicalValue>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every(
    (key) => Object.prototype.hasOwnProperty.call(right, key) && canonicalEqual(left[key], right[key]),
  );
}

function hasShadow(side: MergeSide, key: string): boolean {
  return side.shadow !== null && Object.prototype.hasOwnProperty.call(side.shadow, key);
}

/**
 * A side changed a field when it has a copy and its value differs from its shadow (or it has no shadow yet).
 */
export function sideChanged(side: MergeSide, key: string): boolean {
  if (!side.current) return false;
  if (!side.shadow || !hasShadow(side, key)) return true;
  return !canonicalEqual(side.current[key] ?? null, side.shadow[key] ?? null);
}

function later(left: string | null, right: string | null): SideName | null {
  if (left === null || right === null) return null;
  const a = Date.parse(left);
  const b = Date.parse(right);
  if (Number.isNaN(a) || Number.isNaN(b) || a === b) return null;
  return a > b ? 'left' : 'right';
}

function other(side: SideName): SideName {
  return side === 'left' ? 'right' : 'left';
}

/** Decides, field by field, what to write for one record present on both sides. */
export function mergeRecord(input: MergeInput): FieldOutcome[] {
  const { left, right } = input;
  return input.fields.map((field): FieldOutcome => {
    const key = field.key;
    if (!left.current || !right.current) return { key, outcome: 'unchanged' };
    const leftChanged = sideChanged(left, key);
    const rightChanged = sideChanged(right, key);
    if (!leftChanged && !rightChanged) return { key, outcome: 'unchanged' };
    const leftValue = left.current[key] ?? null;
    const rightValue = right.current[key] ?? null;
    if (input.sameValue(key, leftValue, rightValue)) return { key, outcome: 'converged' };
    const carries = (from: SideName) => (from === 'left' ? field.leftToRight : field.rightToLeft);
    if (leftChanged !== rightChanged) {
      const from: SideName = leftChanged ? 'left' : 'right';
      return carries(from)
        ? { key, outcome: 'push', from, to: other(from), conflict: null }
        : { key, outcome: 'held', side: from };
    }
    // Both changed to different values: a conflict.
    let winner: SideName;
    let reason: ConflictReason;
    if (field.leftToRight !== field.rightToLeft) {
      winner = field.leftToRight ? 'left' : 'right';
      reason = 'direction';
    } else if (!field.leftToRight) {
      // Neither way is carried: both shadows take their side's value.
      return { key, outcome: 'converged' };
    } else {
      // First sight of the field (a side has no shadow for it: matched at initial sync, or a newly mapped
      // field pair) has no "later change" to compare: the preferred side wins (design section 6).
      const firstSight = !hasShadow(left, key) || !hasShadow(right, key);
      const newer = firstSight ? null : later(left.changedAt, right.changedAt);
      winner = newer ?? input.preferred;
      reason = newer ? 'later_change' : 'preferred_side';
    }
    return { key, outcome: 'push', from: winner, to: other(winner), conflict: { winner, reason } };
  });
}
