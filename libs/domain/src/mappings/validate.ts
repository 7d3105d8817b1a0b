/**
 * Semantic validation of a well-formed mappings document against both sides' schemas (spec 4.4 validate,
 * codes of spec 7.3). Pure: the service builds the schema model from its cache and calls this for validate,
 * PUT and activation alike.
 */
import { conversionFor, FieldTypeInfo } from '../conversion';
import {
  Direction,
  oneWayDirections,
  OneWayDirection,
  sourceSide,
  targetSide,
  writesSide,
} from './directions';
import { MappingsDocument, mappingPaths } from './document';
import { pointer, sortIssues, ValidationCode, ValidationIssue, ValidationSeverity } from './issues';
import { resolveMappings, ResolvedField, ResolvedTable, ResolvedTablePair, tableOf } from './resolve';
import { MappingsSchema, otherSide, SchemaField, SideName, SIDES } from './schema';

/**
 * The type a created field gets: its counterpart's class and details. A relation's target is the other
 * side's table, so it is dropped, unless `linkTarget` gives this side's table that target is mapped to: a
 * connector that creates links (Airtable) then makes the field a link to it; others ignore `target_table`.
 */
export function createdFieldType(
  counterpart: FieldTypeInfo,
  linkTarget: string | null = null,
): FieldTypeInfo {
  if (counterpart.typeDetails === null) return { typeClass: counterpart.typeClass, typeDetails: null };
  const { target_table: _table, target_field: _field, ...details } = counterpart.typeDetails;
  const link = counterpart.typeClass === 'relation' && linkTarget !== null;
  return {
    typeClass: counterpart.typeClass,
    typeDetails: link ? { ...details, target_table: linkTarget } : details,
  };
}

/**
 * What a side of a field pair is, for direction and type checks: an existing (or adopted) field or a create.
 */
interface FieldEnd {
  name: string;
  info: FieldTypeInfo;
  read: boolean;
  write: boolean;
  /** The schema field when it exists (resolved or adopted). */
  field: SchemaField | null;
}

function fieldEnd(resolved: ResolvedField, counterpart: ResolvedField): FieldEnd | null {
  if (resolved.kind === 'existing')
    return {
      name: resolved.field.name,
      info: resolved.field,
      read: resolved.field.read,
      write: resolved.field.write,
      field: resolved.field,
    };
  if (resolved.kind !== 'create') return null;
  if (resolved.adopts)
    return {
      name: resolved.name,
      info: resolved.adopts,
      read: resolved.adopts.read,
      write: resolved.adopts.write,
      field: resolved.adopts,
    };
  // Nothing to check when the counterpart is unresolved or unsupported (that create is create_unsupported).
  if (
    counterpart.kind !== 'existing' ||
    counterpart.field.typeClass === 'unsupported' ||
    counterpart.field.typeClass === 'relation'
  )
    return null;
  return {
    name: resolved.name,
    info: createdFieldType(counterpart.field),
    read: true,
    write: true,
    field: null,
  };
}

function identity(resolved: ResolvedTable | ResolvedField): string | null {
  switch (resolved.kind) {
    case 'existing':
      return 'table' in resolved ? resolved.table.id : resolved.field.id;
    case 'create':
      return resolved.adopts ? resolved.adopts.id : `create:${resolved.name}`;
    default:
      return null;
  }
}

function quote(resolved: ResolvedTable | ResolvedField): string {
  if (resolved.kind === 'existing')
    return `"${'table' in resolved ? resolved.table.name : resolved.field.name}"`;
  if (resolved.kind === 'create') return `"${resolved.name}" (created)`;
  return '(unresolved)';
}

class Issues {
  readonly list: ValidationIssue[] = [];

  add(
    severity: ValidationSeverity,
    code: ValidationCode,
    path: string,
    side: SideName | null,
    message: string,
  ): void {
    this.list.push({ severity, code, path, side, message });
  }
}

function checkTables(pair: ResolvedTablePair, schema: MappingsSchema, issues: Issues): void {
  for (const side of SIDES) {
    const resolved = pair[side];
    const path = mappingPaths.tableRef(pair.index, side);
    const view = pair.pair[side].view;
    const viewPath = mappingPaths.view(pair.index, side);
    if (resolved.kind === 'existing') {
      const table = resolved.table;
      if (table.orphaned) issues.add('error', 'orphaned_table', path, side, gone(side, 'table', table.name));
      if (table.readOnly && writesSide(pair.pair.direction, side))
        issues.add(
          'error',
          'incompatible_field_types',
          path,
          side,
          `the ${side} table "${table.name}" is read-only (a database view) and cannot be written; ` +
            `the pair syncs ${pair.pair.direction}`,
        );
      if (table.views === null) {
        if (view !== null)
          issues.add(
            'error',
            'view_not_supported',
            viewPath,
            side,
            `the ${side} table "${table.name}" has no views; omit view`,
          );
      } else {
        const offered =
          table.views.options.map((option) => `"${option.value}" (${option.name})`).join(', ') || 'none';
        if (view === null && table.views.required)
          issues.add(
            'error',
            'view_required',
            viewPath,
            side,
            `the ${side} table "${table.name}" is synced through a view; choose one of: ${offered}`,
          );
        if (view !== null && !table.views.options.some((option) => option.value === view))
          issues.add(
            'error',
            'view_not_found',
            viewPath,
            side,
            `the ${side} table "${table.name}" offers no view "${view}"; choose one of: ${offered}`,
          );
      }
    } else if (resolved.kind === 'create') {
      const sideSchema = schema[side];
      if (!sideSchema.capabilities.createTables)
        issues.add(
          'error',
          'create_unsupported',
          path,
          side,
          `the ${side} connector (${sideSchema.connector}) cannot create tables`,
        );
      if (resolved.adopts)
        issues.add(
          'warning',
          'create_name_collision',
          path,
          side,
          `a ${side} table named "${resolved.name}" already exists (${resolved.adopts.id}); the ` +
            `create will adopt it`,
        );
      if (view !== null)
        issues.add(
          'error',
          'view_not_supported',
          viewPath,
          side,
          `the ${side} table "${resolved.name}" is created by this document and has no views yet; omit view`,
        );
    }
  }
}

function checkDuplicateTables(pairs: ResolvedTablePair[], issues: Issues): void {
  for (const side of SIDES) {
    const seen = new Map<string, number>();
    for (const pair of pairs) {
      const key = identity(pair[side]);
      if (key === null) continue;
      const first = seen.get(key);
      if (first === undefined) seen.set(key, pair.index);
      else
        issues.add(
          'error',
          'invalid_mappings',
          mappingPaths.tableRef(pair.index, side),
          side,
          `the ${side} table ${quote(pair[side])} is already mapped by ${mappingPaths.table(first)}; ` +
            `a table can be in one pair per side`,
        );
    }
  }
}

function checkFields(pair: ResolvedTablePair, schema: MappingsSchema, issues: Issues): void {
  const tableDirection = pair.pair.direction;
  const written: Record<SideName, Map<string, string>> = { left: new Map(), right: new Map() };
  for (const fieldPair of pair.fields) {
    const fieldPath = mappingPaths.field(pair.index, fieldPair.index);
    const ends = {
      left: fieldEnd(fieldPair.left, fieldPair.right),
      right: fieldEnd(fieldPair.right, fieldPair.left),
    };
    for (const side of SIDES) checkFieldEnd(pair, fieldPair, side, schema, issues);
    const anyOrphan = SIDES.some((side) => ends[side]?.field?.orphaned);
    for (const way of oneWayDirections(fieldPair.direction)) {
      const from = sourceSide(way);
      const to = targetSide(way);
      const source = ends[from];
      const target = ends[to];
      // A second field pair writing the same target field in the same direction.
      const key = identity(fieldPair[to]);
      if (key !== null) {
        const first = written[to].get(key);
        if (first !== undefined)
          issues.add(
            'error',
            'invalid_mappings',
            mappingPaths.fieldRef(pair.index, fieldPair.index, to),
            to,
            `the ${to} field ${quote(fieldPair[to])} is already written by ${first} (${way}); a field ` +
              `can be written by one field pair`,
          );
        else written[to].set(key, fieldPath);
      }
      if (anyOrphan) continue;
      if (source && !source.read)
        issues.add(
          'error',
          'incompatible_field_types',
          mappingPaths.fieldRef(pair.index, fieldPair.index, from),
          from,
          `the ${from} field "${source.name}" cannot be read, so the pair cannot sync ${way}`,
        );
      const tableReadOnly = pair[to].kind === 'existing' && tableOf(pair[to])?.readOnly === true;
      if (target && !target.write && !tableReadOnly)
        issues.add(
          'error',
          'incompatible_field_types',
          mappingPaths.fieldRef(pair.index, fieldPair.index, to),
          to,
          `the ${to} field "${target.name}" is read-only, so the pair cannot sync ${way}`,
        );
      if (source && target) checkConversion(source, target, way, fieldPath, issues);
    }
  }
  checkRequired(pair, tableDirection, issues);
}

/** Why an orphaned table or field is an error, and what to do. */
function gone(side: SideName, what: 'table' | 'field', name: string): string {
  return (
    `the ${side} ${what} "${name}" no longer exists in the app; refresh the schema (refresh=true) and ` +
    `map another ${what}`
  );
}

/** One side of a field pair: an orphaned field, or a create the connector or the other field refuses. */
function checkFieldEnd(
  pair: ResolvedTablePair,
  fieldPair: ResolvedTablePair['fields'][number],
  side: SideName,
  schema: MappingsSchema,
  issues: Issues,
): void {
  const resolved = fieldPair[side];
  const path = mappingPaths.fieldRef(pair.index, fieldPair.index, side);
  if (resolved.kind === 'existing' && resolved.field.orphaned)
    issues.add('error', 'orphaned_field', path, side, gone(side, 'field', resolved.field.name));
  if (resolved.kind === 'create') {
    const sideSchema = schema[side];
    const table = pair[side];
    if (table.kind === 'existing' && !sideSchema.capabilities.createFields)
      issues.add(
        'error',
        'create_unsupported',
        path,
        side,
        `the ${side} connector (${sideSchema.connector}) cannot create fields`,
      );
    const counterpart = fieldPair[otherSide(side)];
    if (counterpart.kind === 'existing' && counterpart.field.typeClass === 'unsupported')
      issues.add(
        'error',
        'create_unsupported',
        path,
        side,
        `cannot create a field typed from the ${otherSide(side)} field ` +
          `"${counterpart.field.name}": its type (${counterpart.field.type}) is not supported`,
      );
    if (resolved.adopts) {
      const home = tableOf(table);
      issues.add(
        'warning',
        'create_name_collision',
        path,
        side,
        `the ${side} table "${home?.name ?? ''}" already has a field named "${resolved.name}" ` +
          `(${resolved.adopts.id}); the create will adopt it`,
      );
    }
  }
}

/**
 * A field created from a relation field (checkRelationCreates) is a link only where the connector creates
 * links and the relation's target table is mapped to a table of this side that exists, or that an earlier
 * table pair creates (creates run in pair order, so a later one has no id yet).
 */
function checkRelationCreates(pairs: ResolvedTablePair[], schema: MappingsSchema, issues: Issues): void {
  for (const side of SIDES) {
    const other = otherSide(side);
    const reachable = new Set<string>();
    for (const pair of pairs) {
      const there = tableOf(pair[other]);
      if (there && tableOf(pair[side])) reachable.add(there.remoteId);
    }
    for (const pair of pairs) {
      for (const fieldPair of pair.fields) {
        const [resolved, counterpart] = [fieldPair[side], fieldPair[other]];
        if (resolved.kind !== 'create' || resolved.adopts || counterpart.kind !== 'existing') continue;
        const target = relationTarget(counterpart);
        if (counterpart.field.typeClass !== 'relation') continue;
        if (schema[side].capabilities.createRelations && target !== null && reachable.has(target)) continue;
        const how = schema[side].capabilities.createRelations
          ? `map its target table to a ${side} table in an earlier table pair, or create the link in the app`
          : 'create the column with its foreign key in the app, refresh the schema, then map it';
        issues.add(
          'error',
          'create_unsupported',
          mappingPaths.fieldRef(pair.index, fieldPair.index, side),
          side,
          `cannot create a linked-record field from the ${other} field "${counterpart.field.name}": ${how}`,
        );
      }
      const there = tableOf(pair[other]);
      if (there && pair[side].kind === 'create') reachable.add(there.remoteId);
    }
  }
}

function checkConversion(
  source: FieldEnd,
  target: FieldEnd,
  way: OneWayDirection,
  path: string,
  issues: Issues,
): void {
  const conversion = conversionFor(source.info, target.info);
  const classes = `${source.info.typeClass} -> ${target.info.typeClass}`;
  const fields = `"${source.name}" (${sourceSide(way)}) -> "${target.name}" (${targetSide(way)})`;
  if (conversion.kind === 'incompatible')
    issues.add(
      'error',
      'incompatible_field_types',
      path,
      targetSide(way),
      `${fields} cannot sync ${way}: ${classes} is incompatible (${conversion.reason})`,
    );
  else if (conversion.kind === 'lossy')
    issues.add(
      'warning',
      'incompatible_field_types',
      path,
      targetSide(way),
      `${fields} may lose information when syncing ${way}: ` +
        `${classes}${conversion.reason ? ` (${conversion.reason})` : ''}`,
    );
}

function checkRequired(pair: ResolvedTablePair, tableDirection: Direction, issues: Issues): void {
  for (const side of SIDES) {
    const resolved = pair[side];
    if (resolved.kind !== 'existing' || !writesSide(tableDirection, side)) continue;
    const written = new Set<string>();
    for (const fieldPair of pair.fields) {
      const end = fieldPair[side];
      if (end.kind === 'existing' && writesSide(fieldPair.direction, side)) written.add(end.field.id);
    }
    for (const field of resolved.table.fields ?? []) {
      if (!field.required || !field.write || field.orphaned || written.has(field.id)) continue;
      issues.add(
        'error',
        'required_field_unmapped',
        mappingPaths.fields(pair.index),
        side,
        `the ${side} table "${resolved.table.name}" requires the field "${field.name}" (${field.id}), ` +
          `but no field pair writes it (${otherSide(side)}_to_${side}); records created there would ` +
          `fail`,
      );
    }
  }
}

function relationTarget(resolved: ResolvedField): string | null {
  if (resolved.kind !== 'existing' || resolved.field.typeClass !== 'relation') return null;
  const target = resolved.field.typeDetails?.['target_table'];
  return typeof target === 'string' && target !== '' ? target : null;
}

function checkForeignKeys(pairs: ResolvedTablePair[], issues: Issues): void {
  const mapped: Record<SideName, Set<string>> = { left: new Set(), right: new Set() };
  const mappedTogether = new Set<string>();
  for (const pair of pairs) {
    const left = tableOf(pair.left);
    const right = tableOf(pair.right);
    if (left) mapped.left.add(left.remoteId);
    if (right) mapped.right.add(right.remoteId);
    if (left && right) mappedTogether.add(JSON.stringify([left.remoteId, right.remoteId]));
  }
  for (const pair of pairs) {
    for (const fieldPair of pair.fields) {
      const targets = { left: relationTarget(fieldPair.left), right: relationTarget(fieldPair.right) };
      for (const side of SIDES) {
        const target = targets[side];
        if (target !== null && !mapped[side].has(target))
          issues.add(
            'error',
            'foreign_key_target_unmapped',
            mappingPaths.fieldRef(pair.index, fieldPair.index, side),
            side,
            `the ${side} field ${quote(fieldPair[side])} links to the ${side} table "${target}", ` +
              `which is not in the mappings; map that table too`,
          );
      }
      if (
        targets.left !== null &&
        targets.right !== null &&
        mapped.left.has(targets.left) &&
        mapped.right.has(targets.right) &&
        !mappedTogether.has(JSON.stringify([targets.left, targets.right]))
      )
        issues.add(
          'error',
          'foreign_key_target_mismatch',
          mappingPaths.field(pair.index, fieldPair.index),
          null,
          `the left field links to "${targets.left}" and the right field to "${targets.right}", but ` +
            `those tables are not mapped to each other`,
        );
    }
  }
}

/**
 * Every spec 7.3 issue of a well-formed document against the current schemas, sorted by path. Errors block
 * starting the sync (and some refuse a PUT, see `putBlockingIssues`); warnings never block.
 */
export function validateMappings(document: MappingsDocument, schema: MappingsSchema): ValidationIssue[] {
  const resolved = resolveMappings(document, schema);
  const issues = new Issues();
  issues.list.push(...resolved.issues);
  // A sync with nothing mapped cannot start: reported here so validation and starting agree.
  if (document.tables.length === 0) {
    const message =
      'Nothing is mapped yet: PUT a mappings document with at least one table pair before the sync ' +
      'can start.';
    issues.add('error', 'nothing_mapped', pointer('tables'), null, message);
  }
  checkDuplicateTables(resolved.tables, issues);
  for (const pair of resolved.tables) {
    checkTables(pair, schema, issues);
    checkFields(pair, schema, issues);
  }
  checkRelationCreates(resolved.tables, schema, issues);
  checkForeignKeys(resolved.tables, issues);
  return sortIssues(issues.list);
}
