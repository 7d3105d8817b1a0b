/**
 * The engine's view of a sync's mappings: per table pair, the two tables, the field pairs with the ways
 * each may carry values and the converters between the two field types, the filter, the sync-enabled
 * field, delete behaviours and the match field. Built from the stored mappings and the schema cache.
 */
import type { DataSource } from 'typeorm';
import type { FieldInfo } from '@lockstep/connectors-core';
import {
  conversionFor,
  type Conversion,
  type Direction,
  type FieldPair,
  fieldPairDirection,
  findSyncEnabledField,
  type FilterGroup,
  type FilterCondition,
  oneWayDirections,
  parseFilter,
  parseMappings,
  type RecordDeleteBehavior,
  type SideName,
  type SyncEnabledField,
  type TablePair,
  type TypeClass,
} from '@lockstep/domain';
import {
  planSchema,
  type PlanFieldRow,
  type PlanTableRow,
  type StartOptions,
  type SyncEntity,
} from '@lockstep/persistence';

export interface FieldEnd {
  id: string;
  remoteId: string;
  name: string;
  typeClass: TypeClass;
  typeDetails: Record<string, unknown> | null;
  read: boolean;
  write: boolean;
  primary: boolean;
}

export interface FieldPlan {
  /** Index of the field pair in the table pair (the merge key). */
  key: string;
  left: FieldEnd;
  right: FieldEnd;
  leftToRight: boolean;
  rightToLeft: boolean;
  /** left value -> right's type, and back. */
  toRight: Conversion;
  toLeft: Conversion;
  /** For relation fields: the index of the table pair holding the targets. */
  relationPair: number | null;
}

export interface TableEnd {
  id: string;
  remoteId: string;
  name: string;
  readOnly: boolean;
  deleteBehavior: RecordDeleteBehavior;
  /** The mapped view (spec 2.8): only its records are read on this side; null for the whole table. */
  view: string | null;
}

export interface PairPlan {
  index: number;
  direction: Direction;
  left: TableEnd;
  right: TableEnd;
  fields: FieldPlan[];
  filter: FilterGroup | null;
  filterError: string | null;
  syncEnabled: SyncEnabledField | null;
  /** Field pair used to match existing records at initial sync (null: none usable; everything is created). */
  match: FieldPlan | null;
  /** Side whose values win first-sight differences and ties. */
  preferred: SideName;
}

export interface SyncPlan {
  revision: number;
  pairs: PairPlan[];
  /** Pair indexes ordered so that relation targets come first. */
  order: number[];
}

const MATCHABLE: TypeClass[] = [
  'text',
  'integer',
  'decimal',
  'uuid',
  'date',
  'datetime',
  'timestamp',
  'select',
  'boolean',
  'time',
];

export async function buildPlan(db: DataSource, sync: SyncEntity): Promise<SyncPlan> {
  const parsed = parseMappings(sync.mappings);
  if (!parsed.ok) throw new Error(`stored mappings of ${sync.id} do not parse`);
  const { tables, fields } = await planSchema(db, sync.id);
  const tableById = new Map(tables.map((table) => [table.id, table]));
  const fieldById = new Map(fields.map((field) => [field.id, field]));
  const stored = sync.mappings.tables as Record<string, unknown>[];
  const options: StartOptions = sync.startOptions ?? {};
  const pairs: PairPlan[] = parsed.document.tables.map((pair, index) => {
    const left = tableEnd(pair, 'left', index, tableById);
    const right = tableEnd(pair, 'right', index, tableById);
    const fieldPlans: FieldPlan[] = [];
    pair.fields.forEach((fieldPair, fieldIndex) => {
      const plan = fieldPlan(pair, fieldPair, String(fieldIndex), { left, right }, fieldById);
      if (plan) fieldPlans.push(plan);
    });
    const storedPair = stored[index] ?? {};
    const filter = parseFilter(storedPair['filter'] ?? null);
    return {
      index,
      direction: pair.direction,
      left,
      right,
      fields: fieldPlans,
      filter: filter.ok ? filter.filter : null,
      filterError: filter.ok ? null : filter.reason,
      syncEnabled: findSyncEnabledField(storedPair['advanced_settings'] ?? null),
      match: null,
      preferred: options.prefer ?? 'left',
    };
  });
  linkRelations(pairs);
  for (const pair of pairs) pair.match = chooseMatch(pair, options);
  return { revision: sync.mappingsRevision, pairs, order: dependencyOrder(pairs) };
}

/** One side's table of a pair, from the schema cache (a pair whose table is not there cannot be planned). */
function tableEnd(
  pair: TablePair,
  side: SideName,
  index: number,
  tableById: Map<string, PlanTableRow>,
): TableEnd {
  const ref = side === 'left' ? pair.leftTable : pair.rightTable;
  const table = typeof ref === 'string' ? tableById.get(ref) : undefined;
  if (!table)
    throw new Error(`table pair ${index}: ${side} table ${JSON.stringify(ref)} is not in the schema cache`);
  return {
    id: table.id,
    remoteId: table.remote_id,
    name: table.name,
    readOnly: table.read_only,
    deleteBehavior: pair[side].recordDeleteBehavior,
    view: pair[side].view,
  };
}

function fieldEndOf(field: PlanFieldRow): FieldEnd {
  return {
    id: field.id,
    remoteId: field.remote_id,
    name: field.name,
    typeClass: field.type_class,
    typeDetails: field.type_details,
    read: field.read,
    write: field.write,
    primary: field.is_primary,
  };
}

/**
 * A field pair with the ways it carries values: a way needs the mapping's direction, a readable source, a
 * writable target on a writable table, and a conversion between the two types. Null when either field is
 * not in the schema cache.
 */
function fieldPlan(
  pair: TablePair,
  fieldPair: FieldPair,
  key: string,
  tables: { left: TableEnd; right: TableEnd },
  fieldById: Map<string, PlanFieldRow>,
): FieldPlan | null {
  const l = typeof fieldPair.leftField === 'string' ? fieldById.get(fieldPair.leftField) : undefined;
  const r = typeof fieldPair.rightField === 'string' ? fieldById.get(fieldPair.rightField) : undefined;
  if (!l || !r) return null;
  const left = fieldEndOf(l);
  const right = fieldEndOf(r);
  const ways = oneWayDirections(fieldPairDirection(pair, fieldPair));
  const toRight = conversionFor(
    { typeClass: left.typeClass, typeDetails: left.typeDetails },
    { typeClass: right.typeClass, typeDetails: right.typeDetails },
  );
  const toLeft = conversionFor(
    { typeClass: right.typeClass, typeDetails: right.typeDetails },
    { typeClass: left.typeClass, typeDetails: left.typeDetails },
  );
  return {
    key,
    left,
    right,
    leftToRight:
      ways.includes('left_to_right') &&
      left.read &&
      right.write &&
      !tables.right.readOnly &&
      toRight.kind !== 'incompatible',
    rightToLeft:
      ways.includes('right_to_left') &&
      right.read &&
      left.write &&
      !tables.left.readOnly &&
      toLeft.kind !== 'incompatible',
    toRight,
    toLeft,
    relationPair: null,
  };
}

/**
 * One side's field types as the app has them now (read again for a push a person asked for, who may have
 * widened the field an issue was about): that side's field ends of the pair take the fresh type details,
 * and their conversions follow. In place, so later batches of this plan use them too. A field whose type
 * class changed, a relation (its details name stored tables), or a change that would leave a carried way
 * with no conversion keeps its planned end: those need the mappings reviewed. The store's schema cache is
 * not written (it is refreshed while the sync is off, spec 3.1).
 */
export function refreshFieldTypes(pair: PairPlan, side: SideName, fresh: FieldInfo[]): void {
  const byRemoteId = new Map(fresh.map((field) => [field.remoteId, field]));
  for (const field of pair.fields) {
    const end = field[side];
    const now = byRemoteId.get(end.remoteId);
    if (!now || now.typeClass !== end.typeClass || end.typeClass === 'relation') continue;
    const typeDetails = now.typeDetails ?? null;
    const left = side === 'left' ? { ...field.left, typeDetails } : field.left;
    const right = side === 'right' ? { ...field.right, typeDetails } : field.right;
    const toRight = conversionFor(left, right);
    const toLeft = conversionFor(right, left);
    if (field.leftToRight && toRight.kind === 'incompatible') continue;
    if (field.rightToLeft && toLeft.kind === 'incompatible') continue;
    Object.assign(field, { left, right, toRight, toLeft });
  }
}

/**
 * Relation targets: the pair whose left table is the left field's target table. A relation field pair whose
 * target table is in no pair carries nothing.
 */
function linkRelations(pairs: PairPlan[]): void {
  for (const pair of pairs) {
    for (const field of pair.fields) {
      if (field.left.typeClass !== 'relation' || field.right.typeClass !== 'relation') continue;
      const target = field.left.typeDetails?.['target_table'];
      const found = pairs.find((candidate) => candidate.left.remoteId === target);
      field.relationPair = found ? found.index : null;
      if (!found) {
        field.leftToRight = false;
        field.rightToLeft = false;
      }
    }
  }
}

/** The match field chosen at start, else a matchable field pair, primary fields first. */
function chooseMatch(pair: PairPlan, options: StartOptions): FieldPlan | null {
  const chosen = options.match?.find((match) => match.tablePair === pair.index);
  if (chosen) {
    const found = pair.fields.find(
      (field) =>
        (field.left.id === chosen.leftField ||
          field.left.remoteId === chosen.leftField ||
          field.left.name === chosen.leftField) &&
        (field.right.id === chosen.rightField ||
          field.right.remoteId === chosen.rightField ||
          field.right.name === chosen.rightField),
    );
    if (found) return found;
  }
  const candidates = pair.fields.filter(
    (field) =>
      MATCHABLE.includes(field.left.typeClass) &&
      MATCHABLE.includes(field.right.typeClass) &&
      field.toLeft.kind !== 'incompatible',
  );
  return candidates.find((field) => field.left.primary && field.right.primary) ?? null;
}

function dependencyOrder(pairs: PairPlan[]): number[] {
  const order: number[] = [];
  const visiting = new Set<number>();
  const visit = (index: number) => {
    if (order.includes(index) || visiting.has(index)) return;
    visiting.add(index);
    for (const field of pairs[index]!.fields)
      if (field.relationPair !== null && field.relationPair !== index) visit(field.relationPair);
    visiting.delete(index);
    order.push(index);
  };
  pairs.forEach((pair) => visit(pair.index));
  return order;
}

export function sideEnd(pair: PairPlan, side: SideName): TableEnd {
  return side === 'left' ? pair.left : pair.right;
}

export function fieldEnd(field: FieldPlan, side: SideName): FieldEnd {
  return side === 'left' ? field.left : field.right;
}

export type { FilterCondition };
