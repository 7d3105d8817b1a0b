import { conversionFor } from '../conversion';
import { SchemaField, SchemaTable, SideName } from './schema';

export const DIRECTIONS = ['left_to_right', 'right_to_left', 'two_way'] as const;

/** The direction of a table pair or field pair. */
export type Direction = (typeof DIRECTIONS)[number];

/** One way of a pair: the side read and the side written. */
export type OneWayDirection = 'left_to_right' | 'right_to_left';

export function isDirection(value: unknown): value is Direction {
  return typeof value === 'string' && (DIRECTIONS as readonly string[]).includes(value);
}

/** The one-way directions a direction is made of (`two_way` = both). */
export function oneWayDirections(direction: Direction): OneWayDirection[] {
  return direction === 'two_way' ? ['left_to_right', 'right_to_left'] : [direction];
}

export function sourceSide(direction: OneWayDirection): SideName {
  return direction === 'left_to_right' ? 'left' : 'right';
}

export function targetSide(direction: OneWayDirection): SideName {
  return direction === 'left_to_right' ? 'right' : 'left';
}

/** True when a pair in `direction` writes into `side`. */
export function writesSide(direction: Direction, side: SideName): boolean {
  return oneWayDirections(direction).some((way) => targetSide(way) === side);
}

/**
 * The field directions a table direction allows: a one-way table allows only its own way, two_way all three.
 */
export function allowedFieldDirections(tableDirection: Direction): Direction[] {
  return tableDirection === 'two_way' ? [...DIRECTIONS] : [tableDirection];
}

export function isFieldDirectionAllowed(tableDirection: Direction, fieldDirection: Direction): boolean {
  return allowedFieldDirections(tableDirection).includes(fieldDirection);
}

/** Direction from a set of one-way directions (null when empty). */
export function directionOf(ways: OneWayDirection[]): Direction | null {
  const left = ways.includes('left_to_right');
  const right = ways.includes('right_to_left');
  if (left && right) return 'two_way';
  if (left) return 'left_to_right';
  if (right) return 'right_to_left';
  return null;
}

export interface FieldDirectionInput {
  /** The field pair's stored direction, or the table pair's when the field pair has none. */
  direction: Direction;
  /** The field on each side as the schema has it now; null when it is gone from the schema. */
  left: SchemaField | null;
  right: SchemaField | null;
  /** The tables the fields belong to (a read-only table cannot be written). */
  leftTable?: SchemaTable | null;
  rightTable?: SchemaTable | null;
}

export interface EffectiveFieldDirection {
  /** The pair's direction, or `invalid` when schema drift disabled every way it had (what GET shows). */
  direction: Direction | 'invalid';
  /** The ways that still work, in order: the engine syncs these. */
  allowed: OneWayDirection[];
  /** The ways the pair has that no longer work, with the reason. */
  disabled: { direction: OneWayDirection; reason: string }[];
}

function fieldOn(input: FieldDirectionInput, side: SideName): SchemaField | null {
  return side === 'left' ? input.left : input.right;
}

function tableOn(input: FieldDirectionInput, side: SideName): SchemaTable | null {
  return (side === 'left' ? input.leftTable : input.rightTable) ?? null;
}

/** Why one way of a field pair cannot run with the current schema, or null when it can. */
export function oneWayProblem(input: FieldDirectionInput, way: OneWayDirection): string | null {
  const from = sourceSide(way);
  const to = targetSide(way);
  const source = fieldOn(input, from);
  const target = fieldOn(input, to);
  const gone = ([from, to] as const)
    .map((side) => {
      const field = fieldOn(input, side);
      if (!field) return `the ${side} field no longer exists`;
      return field.orphaned ? `the ${side} field "${field.name}" no longer exists in the app` : null;
    })
    .filter((problem): problem is string => problem !== null);
  if (gone.length || !source || !target) return gone.join('; ');
  if (!source.read) return `the ${from} field "${source.name}" cannot be read`;
  const targetTable = tableOn(input, to);
  if (targetTable?.readOnly) return `the ${to} table "${targetTable.name}" is read-only`;
  if (!target.write) return `the ${to} field "${target.name}" is read-only`;
  const conversion = conversionFor(source, target);
  if (conversion.kind === 'incompatible')
    return `${source.typeClass} -> ${target.typeClass}: ${conversion.reason}`;
  return null;
}

/**
 * The directions a stored field pair can still sync with the current schema. When drift (an orphaned or
 * deleted field, a field no longer readable or writable, types that no longer convert) disabled every way
 * the pair had, `direction` is `invalid`; otherwise it is the pair's direction unchanged and `allowed` lists
 * the ways that still run.
 */
export function effectiveFieldDirection(input: FieldDirectionInput): EffectiveFieldDirection {
  const allowed: OneWayDirection[] = [];
  const disabled: { direction: OneWayDirection; reason: string }[] = [];
  for (const way of oneWayDirections(input.direction)) {
    const problem = oneWayProblem(input, way);
    if (problem === null) allowed.push(way);
    else disabled.push({ direction: way, reason: problem });
  }
  return { direction: allowed.length ? input.direction : 'invalid', allowed, disabled };
}
