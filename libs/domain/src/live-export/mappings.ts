/**
 * The live export mappings document and its validation (spec 2.15, 4.8, 7.2). Pure: the caller loads the
 * source schema, the destination's existing tables and the last saved plan, and passes them in.
 *
 * Document (JSON, snake_case):
 *
 *     { "tables": [ { "source_table": "customers", // remote id, or an exact name unique in the source
 *                     "destination_table": "crm_customers", // optional: defaults to the source table's name
 *                     "fields": [ { "source_field": "email", // remote id, or an exact unique name
 *                                   "destination_field": "email_address", // optional: the source field's
 *                                   name "primary": false } ] } ] } // optional, default false
 *
 * Every destination table and column is created by the export (typed from the source); a document never
 * points at an existing destination column. Stored and returned resolved: remote ids, every name filled in.
 *
 * Rules (issue code, path):
 * - `unknown_source_table` (`tables[i]`): no source table has that remote id or that unique exact name.
 * - `duplicate_source_table` (`tables[i]`): the same source table is mapped by an earlier entry.
 * - `duplicate_destination_table` (`tables[i]`): two entries would write the same destination table.
 * - `empty_table_mapping` (`tables[i]`): `fields` is empty.
 * - `unknown_source_field` (`tables[i].fields[j]`): not an exportable field of that table (link fields,
 *   fields of unsupported types and unreadable fields are never exportable).
 * - `duplicate_field_name` (`tables[i].fields[j]`): two fields of the table would create the same column
 *   (names compare case-insensitively, as MySQL does), or the column is one of the hidden
 *   `lockstep_source_id` / `lockstep_row_hash`.
 * - `multiple_primary_fields` (`tables[i]`): more than one `primary: true`.
 * - `existing_field_not_supported` (`tables[i].fields[j]`): the destination table already has a column of
 *   that name that the export did not create (a column of the last saved plan for this table is the export's
 *   own).
 * - `applied_table_not_editable` (`tables[i]`): the entry changes a table the last save created in the
 *   current location: it renames the destination table, or drops, renames or re-points one of its columns.
 *   Adding fields is allowed (save adds the columns); leaving the table out of the document is allowed (the
 *   export stops writing it; the table stays). A destination table of the saved plan cannot be taken over by
 *   another source table either.
 */
import type { TypeClass } from '../types/type-class';
import type { LiveExportPlan, LiveExportPlanTable } from './plan';

export const LIVE_EXPORT_HIDDEN_COLUMNS = ['lockstep_source_id', 'lockstep_row_hash'] as const;
export const MAX_EXPORT_TABLES = 200;
export const MAX_EXPORT_FIELDS = 1000;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export interface LiveExportFieldMapping {
  source_field: string;
  destination_field: string;
  primary: boolean;
}

export interface LiveExportTableMapping {
  source_table: string;
  destination_table: string;
  fields: LiveExportFieldMapping[];
}

export interface LiveExportMappingsDocument {
  tables: LiveExportTableMapping[];
}

/** The document as sent: names optional. */
export interface LiveExportMappingsInput {
  tables: Array<{
    source_table: string;
    destination_table?: string;
    fields: Array<{ source_field: string; destination_field?: string; primary: boolean }>;
  }>;
}

/** Faults of a mappings document itself: a save that finds one is refused with it (400). */
export const LIVE_EXPORT_MAPPING_FAULTS = [
  'unknown_source_table',
  'unknown_source_field',
  'duplicate_source_table',
  'duplicate_destination_table',
  'duplicate_field_name',
  'multiple_primary_fields',
  'empty_table_mapping',
  'existing_field_not_supported',
  'applied_table_not_editable',
] as const;

/**
 * Every code a live export validation issue carries: the document's faults, or why it could not be checked.
 */
export const LIVE_EXPORT_ISSUE_CODES = [...LIVE_EXPORT_MAPPING_FAULTS, 'auth_required', 'internal'] as const;

export type LiveExportIssueCode = (typeof LIVE_EXPORT_ISSUE_CODES)[number];

export interface LiveExportIssue {
  code: LiveExportIssueCode;
  message: string;
  /** `tables[0]`, `tables[0].fields[2]`, or null for the whole export. */
  path: string | null;
}

export interface StructuralProblem {
  path: string;
  message: string;
}

type InputTable = LiveExportMappingsInput['tables'][number];
type InputField = InputTable['fields'][number];

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads a raw mappings document part by part, collecting every structural problem on the way. */
class StructureReader {
  readonly problems: StructuralProblem[] = [];

  unknownKeys(value: Record<string, unknown>, allowed: string[], path: string): void {
    for (const key of Object.keys(value))
      if (!allowed.includes(key))
        this.problems.push({
          path: `${path}.${key}`,
          message: `${path} has no property "${key}"; allowed: ${allowed.join(', ')}`,
        });
  }

  text(value: unknown, path: string, required: boolean): string | undefined {
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || value.trim() === '' || value.length > 1024) {
      this.problems.push({ path, message: `${path} must be a non-empty string` });
      return undefined;
    }
    return value;
  }

  name(value: unknown, path: string): string | undefined {
    const result = this.text(value, path, false);
    if (result !== undefined && !IDENTIFIER.test(result)) {
      this.problems.push({
        path,
        message:
          `${path} "${result}" must start with a letter or underscore and hold only letters, digits and ` +
          `underscores (at most 63)`,
      });
      return undefined;
    }
    return result;
  }

  /** One table entry; undefined when it is not an object, has no fields array or no source table. */
  table(table: unknown, path: string): InputTable | undefined {
    if (!isObject(table)) {
      this.problems.push({ path, message: `${path} must be an object` });
      return undefined;
    }
    this.unknownKeys(table, ['source_table', 'destination_table', 'fields'], path);
    const sourceTable = this.text(table['source_table'], `${path}.source_table`, true);
    const destinationTable = this.name(table['destination_table'], `${path}.destination_table`);
    const rawFields = table['fields'];
    if (!Array.isArray(rawFields)) {
      this.problems.push({ path: `${path}.fields`, message: `${path}.fields must be an array` });
      return undefined;
    }
    if (rawFields.length > MAX_EXPORT_FIELDS)
      this.problems.push({
        path: `${path}.fields`,
        message: `At most ${MAX_EXPORT_FIELDS} fields per table`,
      });
    const fields: InputField[] = [];
    rawFields.slice(0, MAX_EXPORT_FIELDS).forEach((field, j) => {
      const read = this.field(field, `${path}.fields[${j}]`);
      if (read) fields.push(read);
    });
    if (sourceTable === undefined) return undefined;
    return {
      source_table: sourceTable,
      ...(destinationTable !== undefined ? { destination_table: destinationTable } : {}),
      fields,
    };
  }

  /** One field entry; undefined when it is not an object or has no source field. */
  field(field: unknown, fieldPath: string): InputField | undefined {
    if (!isObject(field)) {
      this.problems.push({ path: fieldPath, message: `${fieldPath} must be an object` });
      return undefined;
    }
    this.unknownKeys(field, ['source_field', 'destination_field', 'primary'], fieldPath);
    const sourceField = this.text(field['source_field'], `${fieldPath}.source_field`, true);
    const destinationField = this.name(field['destination_field'], `${fieldPath}.destination_field`);
    const primary = field['primary'];
    if (primary !== undefined && typeof primary !== 'boolean')
      this.problems.push({ path: `${fieldPath}.primary`, message: `${fieldPath}.primary must be a boolean` });
    if (sourceField === undefined) return undefined;
    return {
      source_field: sourceField,
      ...(destinationField !== undefined ? { destination_field: destinationField } : {}),
      primary: primary === true,
    };
  }
}

/**
 * Structure only (types, unknown keys, identifier shape, limits); references are checked by
 * `validateLiveExportMappings`.
 */
export function parseLiveExportMappings(
  raw: unknown,
): { ok: true; document: LiveExportMappingsInput } | { ok: false; problems: StructuralProblem[] } {
  const reader = new StructureReader();
  const problems = reader.problems;
  if (!isObject(raw))
    return {
      ok: false,
      problems: [{ path: '', message: 'The mappings document must be a JSON object `{tables: [...]}`' }],
    };
  reader.unknownKeys(raw, ['tables'], '');
  if (!Array.isArray(raw['tables']))
    return { ok: false, problems: [...problems, { path: 'tables', message: 'tables must be an array' }] };
  const rawTables = raw['tables'] as unknown[];
  if (rawTables.length > MAX_EXPORT_TABLES)
    problems.push({ path: 'tables', message: `At most ${MAX_EXPORT_TABLES} tables per live export` });
  const tables: InputTable[] = [];
  rawTables.slice(0, MAX_EXPORT_TABLES).forEach((table, i) => {
    const read = reader.table(table, `tables[${i}]`);
    if (read) tables.push(read);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, document: { tables } };
}

/** A default destination name from a source name: letters, digits and underscores, at most 63 characters. */
export function exportDefaultName(sourceName: string): string {
  let name = sourceName
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (name === '') name = 'column';
  if (/^[0-9]/.test(name)) name = `_${name}`;
  return name.slice(0, 63);
}

export interface ExportSourceTable {
  remoteId: string;
  name: string;
}

export interface ExportSourceField {
  remoteId: string;
  name: string;
  type: string;
  typeClass: TypeClass;
  read: boolean;
  typeDetails: Record<string, unknown> | null;
}

/** Link fields, fields of unsupported types and unreadable fields are never offered or exported. */
export function isExportableField(field: Pick<ExportSourceField, 'typeClass' | 'read'>): boolean {
  return field.read && field.typeClass !== 'relation' && field.typeClass !== 'unsupported';
}

export interface LiveExportValidationContext {
  sourceTables: ExportSourceTable[];
  /**
   * Fields of each source table the document references (by remote id); a table missing here has no
   * exportable fields known.
   */
  sourceFields: ReadonlyMap<string, ExportSourceField[]>;
  /**
   * The destination tables that exist now in the location, by the name the document uses, with their column
   * names; null when the destination cannot be inspected yet (no location chosen), which skips
   * `existing_field_not_supported` (save always inspects).
   */
  destinationTables: ReadonlyMap<string, { columns: string[] }> | null;
  /** The last saved plan when its location is the current one (its tables exist in the destination). */
  applied: LiveExportPlan | null;
}

export interface LiveExportValidation {
  /**
   * The resolved document (remote ids, names filled in); references that did not resolve are kept as sent.
   */
  document: LiveExportMappingsDocument;
  issues: LiveExportIssue[];
}

function resolve<T extends { remoteId: string; name: string }>(
  items: readonly T[],
  reference: string,
): T | 'ambiguous' | undefined {
  const byId = items.find((item) => item.remoteId === reference);
  if (byId) return byId;
  const byName = items.filter((item) => item.name === reference);
  if (byName.length > 1) return 'ambiguous';
  return byName[0];
}

/** Checks every reference and rule of the module comment; never throws on a structurally valid document. */
export function validateLiveExportMappings(
  input: LiveExportMappingsInput,
  context: LiveExportValidationContext,
): LiveExportValidation {
  const issues: LiveExportIssue[] = [];
  const tables: LiveExportTableMapping[] = [];
  const seenSources = new Map<string, number>();
  const seenDestinations = new Map<string, number>();
  const appliedBySource = new Map((context.applied?.tables ?? []).map((table) => [table.sourceTable, table]));
  const appliedByDestination = new Map(
    (context.applied?.tables ?? []).map((table) => [table.destinationTable.toLowerCase(), table]),
  );

  input.tables.forEach((entry, i) => {
    const path = `tables[${i}]`;
    const source = resolve(context.sourceTables, entry.source_table);
    if (source === undefined || source === 'ambiguous') {
      issues.push({
        code: 'unknown_source_table',
        message:
          source === 'ambiguous'
            ? `${path}.source_table "${entry.source_table}" matches several source tables by name; use ` +
              `the remote_id.`
            : `${path}.source_table "${entry.source_table}" is not a table of the source (use a ` +
              `remote_id or exact name from the source tables listing).`,
        path,
      });
      tables.push(asSent(entry));
      return;
    }
    const destinationTable = entry.destination_table ?? exportDefaultName(source.name);
    const earlier = seenSources.get(source.remoteId);
    if (earlier !== undefined) {
      issues.push({
        code: 'duplicate_source_table',
        message: `${path} maps source table "${source.name}" again (already mapped by tables[${earlier}]).`,
        path,
      });
    } else {
      seenSources.set(source.remoteId, i);
    }
    const earlierDestination = seenDestinations.get(destinationTable.toLowerCase());
    if (earlierDestination !== undefined) {
      issues.push({
        code: 'duplicate_destination_table',
        message:
          `${path} writes destination table "${destinationTable}", which tables[${earlierDestination}] ` +
          `already writes.`,
        path,
      });
    } else {
      seenDestinations.set(destinationTable.toLowerCase(), i);
    }
    if (entry.fields.length === 0)
      issues.push({
        code: 'empty_table_mapping',
        message: `${path} maps no fields; map at least one or leave the table out.`,
        path,
      });

    const available = (context.sourceFields.get(source.remoteId) ?? []).filter(isExportableField);
    const fields = checkFields(entry, path, source, available, issues);

    const ownColumns = checkApplied(
      { path, source, destinationTable, fields },
      { bySource: appliedBySource, byDestination: appliedByDestination },
      issues,
    );

    checkExistingColumns(path, destinationTable, fields, ownColumns, context, issues);
    tables.push({ source_table: source.remoteId, destination_table: destinationTable, fields });
  });
  return { document: { tables }, issues };
}

/** A table entry whose source table did not resolve: kept as sent, default names filled in. */
function asSent(entry: LiveExportMappingsInput['tables'][number]): LiveExportTableMapping {
  return {
    source_table: entry.source_table,
    destination_table: entry.destination_table ?? exportDefaultName(entry.source_table),
    fields: entry.fields.map((f) => ({
      source_field: f.source_field,
      destination_field: f.destination_field ?? exportDefaultName(f.source_field),
      primary: f.primary,
    })),
  };
}

/**
 * The entry's fields resolved against the source table's exportable fields: unknown fields, column names
 * that clash (with each other or the hidden columns) and more than one primary field are issues.
 */
function checkFields(
  entry: LiveExportMappingsInput['tables'][number],
  path: string,
  source: ExportSourceTable,
  available: ExportSourceField[],
  issues: LiveExportIssue[],
): LiveExportFieldMapping[] {
  const columns = new Map<string, number>();
  const fields: LiveExportFieldMapping[] = [];
  let primaries = 0;
  entry.fields.forEach((field, j) => {
    const fieldPath = `${path}.fields[${j}]`;
    const resolved = resolve(available, field.source_field);
    if (field.primary) primaries += 1;
    if (resolved === undefined || resolved === 'ambiguous') {
      issues.push({
        code: 'unknown_source_field',
        message:
          resolved === 'ambiguous'
            ? `${fieldPath}.source_field "${field.source_field}" matches several fields of ` +
              `"${source.name}" by name; use the remote_id.`
            : `${fieldPath}.source_field "${field.source_field}" is not an exportable field of ` +
              `"${source.name}" (link fields and fields of unsupported types are never offered).`,
        path: fieldPath,
      });
      fields.push({
        source_field: field.source_field,
        destination_field: field.destination_field ?? exportDefaultName(field.source_field),
        primary: field.primary,
      });
      return;
    }
    const column = field.destination_field ?? exportDefaultName(resolved.name);
    fields.push({ source_field: resolved.remoteId, destination_field: column, primary: field.primary });
    const key = column.toLowerCase();
    if ((LIVE_EXPORT_HIDDEN_COLUMNS as readonly string[]).includes(key)) {
      issues.push({
        code: 'duplicate_field_name',
        message:
          `${fieldPath} would create column "${column}", which is one of the export's hidden columns ` +
          `(${LIVE_EXPORT_HIDDEN_COLUMNS.join(', ')}); pick another destination_field.`,
        path: fieldPath,
      });
    } else if (columns.has(key)) {
      issues.push({
        code: 'duplicate_field_name',
        message:
          `${fieldPath} would create column "${column}", which ${path}.fields[${columns.get(key)}] ` +
          `already creates (names compare case-insensitively).`,
        path: fieldPath,
      });
    } else {
      columns.set(key, j);
    }
  });
  if (primaries > 1)
    issues.push({
      code: 'multiple_primary_fields',
      message: `${path} marks ${primaries} fields as primary; at most one may be.`,
      path,
    });
  return fields;
}

/**
 * Tables the last save created in this location may only gain fields: no rename, no dropped or repointed
 * column; and no other source table may write one. Returns the columns the export owns in the table.
 */
function checkApplied(
  entry: {
    path: string;
    source: ExportSourceTable;
    destinationTable: string;
    fields: LiveExportFieldMapping[];
  },
  applied: {
    bySource: ReadonlyMap<string, LiveExportPlanTable>;
    byDestination: ReadonlyMap<string, LiveExportPlanTable>;
  },
  issues: LiveExportIssue[],
): Set<string> {
  const { path, source, destinationTable, fields } = entry;
  const saved = applied.bySource.get(source.remoteId);
  const ownColumns = new Set<string>();
  if (saved) {
    const problems: string[] = [];
    if (saved.destinationTable.toLowerCase() !== destinationTable.toLowerCase())
      problems.push(`renames destination table "${saved.destinationTable}" to "${destinationTable}"`);
    for (const column of saved.columns) {
      ownColumns.add(column.column.toLowerCase());
      const now = fields.find(
        (field) => field.destination_field.toLowerCase() === column.column.toLowerCase(),
      );
      if (!now) problems.push(`drops or renames column "${column.column}"`);
      else if (now.source_field !== column.sourceField)
        problems.push(
          `points column "${column.column}" at source field "${now.source_field}" instead of ` +
            `"${column.sourceField}"`,
        );
    }
    if (problems.length > 0) {
      issues.push({
        code: 'applied_table_not_editable',
        message:
          `${path} ${problems.join('; ')}, but a save already created "${saved.destinationTable}" ` +
          `in the destination. Fields may only be added; keep the saved ones, or export into a new ` +
          `destination_table.`,
        path,
      });
    }
  } else {
    const taken = applied.byDestination.get(destinationTable.toLowerCase());
    if (taken && taken.sourceTable !== source.remoteId) {
      issues.push({
        code: 'applied_table_not_editable',
        message:
          `${path} writes destination table "${destinationTable}", which a save already created for ` +
          `source table "${taken.sourceTable}"; pick another destination_table.`,
        path,
      });
    }
  }
  return ownColumns;
}

/** Columns that exist in the destination without being the export's own are refused. */
function checkExistingColumns(
  path: string,
  destinationTable: string,
  fields: LiveExportFieldMapping[],
  ownColumns: Set<string>,
  context: LiveExportValidationContext,
  issues: LiveExportIssue[],
): void {
  const existing = context.destinationTables?.get(destinationTable);
  if (existing) {
    const present = new Set(existing.columns.map((column) => column.toLowerCase()));
    fields.forEach((field, j) => {
      const key = field.destination_field.toLowerCase();
      if (present.has(key) && !ownColumns.has(key)) {
        issues.push({
          code: 'existing_field_not_supported',
          message:
            `${path}.fields[${j}] maps onto column "${field.destination_field}", which already exists ` +
            `in destination table "${destinationTable}"; a live export only writes columns it ` +
            `creates: pick a new destination_field.`,
          path: `${path}.fields[${j}]`,
        });
      }
    });
  }
}

/** The plan a save provisions and runs execute, from a document that validated without issues. */
export function buildLiveExportPlan(
  document: LiveExportMappingsDocument,
  context: Pick<LiveExportValidationContext, 'sourceFields'>,
  sides: {
    source: { connector: string; base: string | null };
    destination: { connector: string; location: string };
  },
): LiveExportPlan {
  return {
    source: { ...sides.source },
    destination: { ...sides.destination },
    tables: document.tables.map((table) => {
      const fields = context.sourceFields.get(table.source_table) ?? [];
      return {
        sourceTable: table.source_table,
        destinationTable: table.destination_table,
        columns: table.fields.map((mapping) => {
          const field = fields.find((candidate) => candidate.remoteId === mapping.source_field);
          if (!field)
            throw new Error(`source field ${mapping.source_field} of ${table.source_table} is not known`);
          return {
            sourceField: field.remoteId,
            column: mapping.destination_field,
            typeClass: field.typeClass,
            sourceType: field.type,
            typeDetails: field.typeDetails,
            primary: mapping.primary,
          };
        }),
      };
    }),
  };
}
