/**
 * The mappings document (spec 2.8): its typed, normalised form and the structural parser for what a client
 * sends. Structure only; what the references mean is checked against the schema by `validateMappings`.
 */
import { allowedFieldDirections, Direction, DIRECTIONS, isDirection } from './directions';
import { pointer, sortIssues, ValidationIssue } from './issues';
import { SideName, SIDES } from './schema';

/**
 * `{ create: { name } }`: the service creates the table or field on that side, typed from its counterpart.
 */
export interface CreateReference {
  create: { name: string };
}

/**
 * A table or field reference: a prefixed id, a remote id or an exact name unique on that side; or a create.
 */
export type Reference = string | CreateReference;

export const RECORD_DELETE_BEHAVIORS = ['sync', 'do_nothing'] as const;
export type RecordDeleteBehavior = (typeof RECORD_DELETE_BEHAVIORS)[number];

/** Per-side settings of a table pair (wire: `left` / `right`). Defaults: `sync`, no view. */
export interface SideSettings {
  recordDeleteBehavior: RecordDeleteBehavior;
  /** A view value (spec 2.7 `views.options[].value`), or null for none. */
  view: string | null;
}

export interface FieldPair {
  leftField: Reference;
  rightField: Reference;
  /** null: the table pair's direction. */
  direction: Direction | null;
}

export interface TablePair {
  leftTable: Reference;
  rightTable: Reference;
  direction: Direction;
  left: SideSettings;
  right: SideSettings;
  fields: FieldPair[];
}

/** The normalised document. `filter` and `advanced_settings` are read-only and not part of it. */
export interface MappingsDocument {
  tables: TablePair[];
}

export type ParseMappingsResult =
  { ok: true; document: MappingsDocument } | { ok: false; issues: ValidationIssue[] };

export function isCreate(reference: Reference): reference is CreateReference {
  return typeof reference !== 'string';
}

export function tableReference(pair: TablePair, side: SideName): Reference {
  return side === 'left' ? pair.leftTable : pair.rightTable;
}

export function fieldReference(pair: FieldPair, side: SideName): Reference {
  return side === 'left' ? pair.leftField : pair.rightField;
}

/** The field pair's direction, or the table pair's when it has none. */
export function fieldPairDirection(table: TablePair, field: FieldPair): Direction {
  return field.direction ?? table.direction;
}

/** Paths (JSON pointers) of the parts of a document, as issues name them. */
export const mappingPaths = {
  table: (table: number) => pointer('tables', table),
  tableRef: (table: number, side: SideName) => pointer('tables', table, `${side}_table`),
  tableDirection: (table: number) => pointer('tables', table, 'direction'),
  settings: (table: number, side: SideName) => pointer('tables', table, side),
  view: (table: number, side: SideName) => pointer('tables', table, side, 'view'),
  fields: (table: number) => pointer('tables', table, 'fields'),
  field: (table: number, field: number) => pointer('tables', table, 'fields', field),
  fieldRef: (table: number, field: number, side: SideName) =>
    pointer('tables', table, 'fields', field, `${side}_field`),
  fieldDirection: (table: number, field: number) => pointer('tables', table, 'fields', field, 'direction'),
};

/** The document in its wire form (spec 2.8, snake_case), e.g. for a GET or for storage. */
export function mappingsToJson(document: MappingsDocument): { tables: Record<string, unknown>[] } {
  const settings = (value: SideSettings) => ({
    record_delete_behavior: value.recordDeleteBehavior,
    ...(value.view !== null ? { view: value.view } : {}),
  });
  return {
    tables: document.tables.map((pair) => ({
      left_table: pair.leftTable,
      right_table: pair.rightTable,
      direction: pair.direction,
      left: settings(pair.left),
      right: settings(pair.right),
      fields: pair.fields.map((field) => ({
        left_field: field.leftField,
        right_field: field.rightField,
        ...(field.direction !== null ? { direction: field.direction } : {}),
      })),
    })),
  };
}

// ---------------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string')
    return value === '' ? 'an empty string' : `"${value.length > 40 ? `${value.slice(0, 37)}...` : value}"`;
  return `a ${typeof value}`;
}

const DIRECTION_LIST = DIRECTIONS.join(', ');

class Parser {
  readonly issues: ValidationIssue[] = [];

  error(path: string, side: SideName | null, message: string): void {
    this.issues.push({ severity: 'error', code: 'invalid_mappings', path, side, message });
  }

  reference(raw: unknown, path: string, side: SideName, what: 'table' | 'field'): Reference | null {
    const expected =
      `expected the ${side} ${what}: a non-empty string (id, remote id or name) or {"create": {"name": ` +
      `"..."}}`;
    if (raw === undefined || raw === null) {
      this.error(path, side, `required: ${expected}`);
      return null;
    }
    if (typeof raw === 'string') {
      if (raw.trim() !== '') return raw;
      this.error(path, side, `${expected}, got ${describeValue(raw)}`);
      return null;
    }
    if (!isObject(raw) || !('create' in raw)) {
      this.error(path, side, `${expected}, got ${describeValue(raw)}`);
      return null;
    }
    const create = raw['create'];
    if (!isObject(create)) {
      this.error(`${path}/create`, side, `expected an object {"name": "..."}, got ${describeValue(create)}`);
      return null;
    }
    const name = create['name'];
    if (typeof name !== 'string' || name.trim() === '') {
      this.error(
        `${path}/create/name`,
        side,
        `${name === undefined ? 'required: ' : ''}expected the name of the ${what} to create (a ` +
          `non-empty string)${name === undefined ? '' : `, got ${describeValue(name)}`}`,
      );
      return null;
    }
    return { create: { name } };
  }

  direction(raw: unknown, path: string, required: boolean): Direction | null | undefined {
    if (raw === undefined || raw === null) {
      if (required) this.error(path, null, `required: expected one of ${DIRECTION_LIST}`);
      return required ? undefined : null;
    }
    if (isDirection(raw)) return raw;
    if (raw === 'invalid')
      this.error(
        path,
        null,
        `"invalid" is only shown on a read; a PUT must send a real direction: expected one of ` +
          `${DIRECTION_LIST}`,
      );
    else this.error(path, null, `expected one of ${DIRECTION_LIST}, got ${describeValue(raw)}`);
    return undefined;
  }

  settings(pair: Json, index: number, side: SideName): SideSettings {
    const settings: SideSettings = { recordDeleteBehavior: 'sync', view: null };
    const raw = pair[side];
    const path = mappingPaths.settings(index, side);
    let view: string | null = null;
    if (raw !== undefined && raw !== null) {
      if (!isObject(raw))
        this.error(
          path,
          side,
          `expected an object {"record_delete_behavior", "view"}, got ${describeValue(raw)}`,
        );
      else {
        const behavior = raw['record_delete_behavior'];
        if (behavior !== undefined && behavior !== null) {
          if ((RECORD_DELETE_BEHAVIORS as readonly unknown[]).includes(behavior))
            settings.recordDeleteBehavior = behavior as RecordDeleteBehavior;
          else
            this.error(
              `${path}/record_delete_behavior`,
              side,
              `expected one of ${RECORD_DELETE_BEHAVIORS.join(', ')}, got ${describeValue(behavior)}`,
            );
        }
        view = this.view(raw['view'], `${path}/view`, side);
      }
    }
    const aliasPath = pointer('tables', index, `${side}_view`);
    const alias = this.view(pair[`${side}_view`], aliasPath, side);
    if (alias !== null && view !== null && alias !== view)
      this.error(
        aliasPath,
        side,
        `${side}_view "${alias}" and ${side}.view "${view}" differ; send the view once (${side}.view)`,
      );
    settings.view = view ?? alias;
    return settings;
  }

  view(raw: unknown, path: string, side: SideName): string | null {
    if (raw === undefined || raw === null) return null;
    if (typeof raw === 'string' && raw !== '') return raw;
    this.error(path, side, `expected a view value (a non-empty string), got ${describeValue(raw)}`);
    return null;
  }

  fieldPair(
    raw: unknown,
    table: number,
    index: number,
    context: { direction: Direction | undefined; creates: Record<SideName, boolean> },
  ): FieldPair | null {
    const path = mappingPaths.field(table, index);
    if (!isObject(raw)) {
      this.error(
        path,
        null,
        `expected a field pair {"left_field", "right_field", "direction"?}, got ${describeValue(raw)}`,
      );
      return null;
    }
    const leftField = this.reference(
      raw['left_field'],
      mappingPaths.fieldRef(table, index, 'left'),
      'left',
      'field',
    );
    const rightField = this.reference(
      raw['right_field'],
      mappingPaths.fieldRef(table, index, 'right'),
      'right',
      'field',
    );
    const direction = this.direction(raw['direction'], mappingPaths.fieldDirection(table, index), false);
    if (leftField !== null && rightField !== null && isCreate(leftField) && isCreate(rightField))
      this.error(path, null, 'only one side of a field pair may be a create');
    for (const side of SIDES) {
      const reference = side === 'left' ? leftField : rightField;
      if (context.creates[side] && typeof reference === 'string')
        this.error(
          mappingPaths.fieldRef(table, index, side),
          side,
          `the ${side} table is created by this document, so its fields must be creates too ` +
            `({"create": {"name": "..."}}); "${reference}" cannot resolve on a table that does not ` +
            `exist yet`,
        );
    }
    if (direction && context.direction && !allowedFieldDirections(context.direction).includes(direction))
      this.error(
        mappingPaths.fieldDirection(table, index),
        null,
        `the table pair syncs ${context.direction}, so a field pair cannot sync ${direction}: ` +
          `expected ${allowedFieldDirections(context.direction).join(' or ')}`,
      );
    if (leftField === null || rightField === null || direction === undefined) return null;
    return { leftField, rightField, direction };
  }

  tablePair(raw: unknown, index: number): TablePair | null {
    const path = mappingPaths.table(index);
    if (!isObject(raw)) {
      this.error(
        path,
        null,
        `expected a table pair {"left_table", "right_table", "direction", "fields", ...}, got ` +
          `${describeValue(raw)}`,
      );
      return null;
    }
    const leftTable = this.reference(
      raw['left_table'],
      mappingPaths.tableRef(index, 'left'),
      'left',
      'table',
    );
    const rightTable = this.reference(
      raw['right_table'],
      mappingPaths.tableRef(index, 'right'),
      'right',
      'table',
    );
    if (leftTable !== null && rightTable !== null && isCreate(leftTable) && isCreate(rightTable))
      this.error(path, null, 'only one side of a table pair may be a create');
    const direction = this.direction(raw['direction'], mappingPaths.tableDirection(index), true) ?? undefined;
    const left = this.settings(raw, index, 'left');
    const right = this.settings(raw, index, 'right');
    const rawFields = raw['fields'];
    const fields: FieldPair[] = [];
    let fieldsOk = true;
    if (!Array.isArray(rawFields)) {
      this.error(
        mappingPaths.fields(index),
        null,
        `${rawFields === undefined ? 'required: ' : ''}expected an array of field ` +
          `pairs${rawFields === undefined ? '' : `, got ${describeValue(rawFields)}`}`,
      );
      fieldsOk = false;
    } else {
      const creates = {
        left: leftTable !== null && isCreate(leftTable),
        right: rightTable !== null && isCreate(rightTable),
      };
      rawFields.forEach((rawField, fieldIndex) => {
        const field = this.fieldPair(rawField, index, fieldIndex, { direction, creates });
        if (field) fields.push(field);
        else fieldsOk = false;
      });
    }
    if (leftTable === null || rightTable === null || direction === undefined || !fieldsOk) return null;
    return { leftTable, rightTable, direction, left, right, fields };
  }
}

/**
 * Structural check and normalisation of a mappings document sent by a client. Every structural fault is
 * reported (code `invalid_mappings`, severity `error`, `path` a JSON pointer), not just the first. Unknown
 * keys and the read-only `filter` / `advanced_settings` are ignored. `left_view` / `right_view` at table-pair
 * level are accepted as aliases of `left.view` / `right.view`.
 */
export function parseMappings(input: unknown): ParseMappingsResult {
  const parser = new Parser();
  if (!isObject(input)) {
    parser.error('', null, `expected a mappings document {"tables": [...]}, got ${describeValue(input)}`);
    return { ok: false, issues: parser.issues };
  }
  const rawTables = input['tables'];
  if (!Array.isArray(rawTables)) {
    parser.error(
      '/tables',
      null,
      `${rawTables === undefined ? 'required: ' : ''}expected an array of table ` +
        `pairs${rawTables === undefined ? '' : `, got ${describeValue(rawTables)}`}`,
    );
    return { ok: false, issues: parser.issues };
  }
  const tables = rawTables.map((raw, index) => parser.tablePair(raw, index));
  if (parser.issues.length > 0) return { ok: false, issues: sortIssues(parser.issues) };
  return { ok: true, document: { tables: tables.filter((pair): pair is TablePair => pair !== null) } };
}
