/**
 * Reference resolution (spec 2.1 / 2.8): a string reference resolves on its own side only, in this order:
 * 1. the prefixed id (`table_...` / `field_...`) of an object on that side;
 * 2. an exact remote id;
 * 3. an exact name, when exactly one object on that side has it.
 * At each step a live object wins over an orphaned one with the same id or name; an orphaned object still
 * resolves when nothing live matches (and is then reported as orphaned). A prefixed id of the other side is
 * `unknown_*` with a message saying which side it belongs to.
 */
import { Direction } from './directions';
import {
  FieldPair,
  fieldPairDirection,
  isCreate,
  MappingsDocument,
  mappingPaths,
  Reference,
  TablePair,
} from './document';
import { ValidationIssue } from './issues';
import { MappingsSchema, otherSide, SchemaField, SchemaTable, SideName, SideSchema } from './schema';

export type MatchedBy = 'id' | 'remote_id' | 'name';

export type TableResolution =
  | { ok: true; table: SchemaTable; matchedBy: MatchedBy }
  | { ok: false; code: 'unknown_table' | 'table_ambiguous'; message: string };

export type FieldResolution =
  | { ok: true; field: SchemaField; matchedBy: MatchedBy }
  | { ok: false; code: 'unknown_field'; message: string };

interface Named {
  id: string;
  remoteId: string;
  name: string;
  orphaned: boolean;
}

/** Among several matches, the live ones; all of them when none is live. */
function preferLive<T extends Named>(matches: T[]): T[] {
  const live = matches.filter((item) => !item.orphaned);
  return live.length > 0 ? live : matches;
}

type Match<T> = { found: T; matchedBy: MatchedBy } | { ambiguous: T[] } | null;

function match<T extends Named>(reference: string, items: T[]): Match<T> {
  for (const [matchedBy, key] of [
    ['id', 'id'],
    ['remote_id', 'remoteId'],
    ['name', 'name'],
  ] as const) {
    const candidates = preferLive(items.filter((item) => item[key] === reference));
    if (candidates.length === 1) return { found: candidates[0] as T, matchedBy };
    if (candidates.length > 1) {
      if (matchedBy === 'name') return { ambiguous: candidates };
      return { found: candidates[0] as T, matchedBy };
    }
  }
  return null;
}

export function resolveTableReference(
  reference: string,
  side: SideSchema,
  other?: SideSchema | null,
): TableResolution {
  const result = match(reference, side.tables);
  if (result && 'found' in result) return { ok: true, table: result.found, matchedBy: result.matchedBy };
  if (result)
    return {
      ok: false,
      code: 'table_ambiguous',
      message: `${result.ambiguous.length} ${side.side} tables are named "${reference}" (${result.ambiguous
        .map((table) => table.id)
        .join(', ')}); reference one by its prefixed id or remote id`,
    };
  const elsewhere = other?.tables.find((table) => table.id === reference);
  if (other && elsewhere)
    return {
      ok: false,
      code: 'unknown_table',
      message:
        `"${reference}" is a ${other.side} table ("${elsewhere.name}"); the ${side.side} table must be ` +
        `a ${side.side} table`,
    };
  return {
    ok: false,
    code: 'unknown_table',
    message: `no ${side.side} table has the id, remote id or name "${reference}"`,
  };
}

export function resolveFieldReference(
  reference: string,
  table: SchemaTable,
  side: SideSchema,
  other?: SideSchema | null,
): FieldResolution {
  const fields = table.fields ?? [];
  const result = match(reference, fields);
  if (result && 'found' in result) return { ok: true, field: result.found, matchedBy: result.matchedBy };
  if (result)
    return {
      ok: false,
      code: 'unknown_field',
      message:
        `the name "${reference}" is ambiguous: ${result.ambiguous.length} fields of the ${side.side} ` +
        `table "${table.name}" have it (${result.ambiguous.map((field) => field.id).join(', ')}); ` +
        `reference one by its prefixed id or remote id`,
    };
  const sibling = side.tables.find(
    (candidate) => candidate !== table && candidate.fields?.some((field) => field.id === reference),
  );
  if (sibling)
    return {
      ok: false,
      code: 'unknown_field',
      message:
        `"${reference}" is a field of the ${side.side} table "${sibling.name}", ` + `not of "${table.name}"`,
    };
  const elsewhere = other?.tables.find((candidate) =>
    candidate.fields?.some((field) => field.id === reference),
  );
  if (other && elsewhere)
    return {
      ok: false,
      code: 'unknown_field',
      message:
        `"${reference}" is a ${other.side} field (of table "${elsewhere.name}"); the ${side.side} field ` +
        `must be a field of the ${side.side} table "${table.name}"`,
    };
  const unfetched = table.fields === null ? ' (its fields have not been fetched)' : '';
  return {
    ok: false,
    code: 'unknown_field',
    message:
      `the ${side.side} table "${table.name}" has no field with the id, remote id or name ` +
      `"${reference}"${unfetched}`,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Whole documents

export type ResolvedTable =
  | { kind: 'existing'; table: SchemaTable; matchedBy: MatchedBy }
  /** `adopts`: the table of that exact name that already exists on the side (the create will adopt it). */
  | { kind: 'create'; name: string; adopts: SchemaTable | null }
  | { kind: 'unresolved' };

export type ResolvedField =
  | { kind: 'existing'; field: SchemaField; matchedBy: MatchedBy }
  /** `adopts`: the field of that exact name that already exists in the (resolved or adopted) table. */
  | { kind: 'create'; name: string; adopts: SchemaField | null }
  | { kind: 'unresolved' };

export interface ResolvedFieldPair {
  index: number;
  pair: FieldPair;
  /** The field pair's direction, or the table's when it has none. */
  direction: Direction;
  left: ResolvedField;
  right: ResolvedField;
}

export interface ResolvedTablePair {
  index: number;
  pair: TablePair;
  left: ResolvedTable;
  right: ResolvedTable;
  fields: ResolvedFieldPair[];
}

export interface ResolvedMappings {
  tables: ResolvedTablePair[];
  /** `unknown_table`, `table_ambiguous`, `unknown_field` found while resolving. */
  issues: ValidationIssue[];
}

function findByName<T extends Named>(items: T[], name: string): T | null {
  return preferLive(items.filter((item) => item.name === name))[0] ?? null;
}

/** The existing table a side's fields live in: the resolved table, or the one a create adopts. */
export function tableOf(resolved: ResolvedTable): SchemaTable | null {
  if (resolved.kind === 'existing') return resolved.table;
  if (resolved.kind === 'create') return resolved.adopts;
  return null;
}

/**
 * Resolve every reference of a document against both sides' schemas. Field references are resolved only on
 * tables that resolved; an unresolved table reports once, not once per field.
 */
export function resolveMappings(document: MappingsDocument, schema: MappingsSchema): ResolvedMappings {
  const issues: ValidationIssue[] = [];
  const tables = document.tables.map((pair, index): ResolvedTablePair => {
    const resolveTable = (side: SideName, reference: Reference): ResolvedTable => {
      const sideSchema = schema[side];
      if (isCreate(reference))
        return {
          kind: 'create',
          name: reference.create.name,
          adopts: findByName(sideSchema.tables, reference.create.name),
        };
      const result = resolveTableReference(reference, sideSchema, schema[otherSide(side)]);
      if (result.ok) return { kind: 'existing', table: result.table, matchedBy: result.matchedBy };
      issues.push({
        severity: 'error',
        code: result.code,
        path: mappingPaths.tableRef(index, side),
        side,
        message: result.message,
      });
      return { kind: 'unresolved' };
    };
    const left = resolveTable('left', pair.leftTable);
    const right = resolveTable('right', pair.rightTable);
    const sides = { left, right };
    const fields = pair.fields.map((field, fieldIndex): ResolvedFieldPair => {
      const resolveField = (side: SideName, reference: Reference): ResolvedField => {
        const table = sides[side];
        if (isCreate(reference)) {
          const home = tableOf(table);
          return {
            kind: 'create',
            name: reference.create.name,
            adopts: home ? findByName(home.fields ?? [], reference.create.name) : null,
          };
        }
        if (table.kind !== 'existing') return { kind: 'unresolved' };
        const result = resolveFieldReference(reference, table.table, schema[side], schema[otherSide(side)]);
        if (result.ok) return { kind: 'existing', field: result.field, matchedBy: result.matchedBy };
        issues.push({
          severity: 'error',
          code: result.code,
          path: mappingPaths.fieldRef(index, fieldIndex, side),
          side,
          message: result.message,
        });
        return { kind: 'unresolved' };
      };
      return {
        index: fieldIndex,
        pair: field,
        direction: fieldPairDirection(pair, field),
        left: resolveField('left', field.leftField),
        right: resolveField('right', field.rightField),
      };
    });
    return { index, pair, left, right, fields };
  });
  return { tables, issues };
}
