/**
 * Metadata endpoints of the Airtable Web API, as documented:
 * - get user info (whoami): https://airtable.com/developers/web/api/get-user-id-scopes,
 * - list bases: https://airtable.com/developers/web/api/list-bases (paged by `offset`),
 * - get base schema: https://airtable.com/developers/web/api/get-base-schema,
 * - create table: https://airtable.com/developers/web/api/create-table (the first field is the primary one),
 * - create field: https://airtable.com/developers/web/api/create-field (options a type requires, see
 *   https://airtable.com/developers/web/api/field-model; computed types cannot be created).
 */
import { fieldJson, type SimBase, type SimField, type SimTable, simId, tableJson } from './simulator-model';
import { COMPUTED_TYPES, SimError } from './simulator-values';

export function listBases(bases: SimBase[], query: URLSearchParams, pageSize: number) {
  const start = query.get('offset') ? Number(query.get('offset')!.replace(/^itr/, '')) : 0;
  if (!Number.isInteger(start) || start < 0)
    throw new SimError(422, 'INVALID_OFFSET_VALUE', 'The offset is not valid');
  const page = bases
    .slice(start, start + pageSize)
    .map((base) => ({ id: base.id, name: base.name, permissionLevel: 'create' }));
  const next = start + pageSize < bases.length ? `itr${start + pageSize}` : undefined;
  return { bases: page, ...(next ? { offset: next } : {}) };
}

export function baseSchema(base: SimBase) {
  return { tables: base.tables.map(tableJson) };
}

/** Options each type needs on creation (the field model's "field options" marked required for writes). */
const REQUIRED_OPTIONS: Record<string, string[]> = {
  number: ['precision'],
  percent: ['precision'],
  currency: ['precision', 'symbol'],
  singleSelect: ['choices'],
  multipleSelects: ['choices'],
  date: ['dateFormat'],
  dateTime: ['dateFormat', 'timeFormat', 'timeZone'],
  checkbox: ['icon', 'color'],
  rating: ['max', 'icon', 'color'],
  duration: ['durationFormat'],
  multipleRecordLinks: ['linkedTableId'],
};

const CREATABLE = new Set([
  ...Object.keys(REQUIRED_OPTIONS),
  'singleLineText',
  'multilineText',
  'richText',
  'email',
  'url',
  'phoneNumber',
  'multipleAttachments',
  'singleCollaborator',
  'multipleCollaborators',
  'barcode',
]);

const PRIMARY_REFUSED = new Set([
  'multipleRecordLinks',
  'multipleAttachments',
  'checkbox',
  'singleSelect',
  'multipleSelects',
  'rating',
]);

interface FieldBody {
  name?: unknown;
  type?: unknown;
  description?: unknown;
  options?: Record<string, unknown>;
}

function newField(base: SimBase, table: { fields: SimField[] }, body: FieldBody): SimField {
  const name = typeof body.name === 'string' ? body.name.trim() : '';
  if (name === '' || table.fields.some((field) => field.name.toLowerCase() === name.toLowerCase())) {
    throw new SimError(422, 'DUPLICATE_OR_EMPTY_FIELD_NAME', `Field name "${name}" is empty or already used`);
  }
  const type = String(body.type ?? '');
  if (!CREATABLE.has(type) || COMPUTED_TYPES.has(type)) {
    throw new SimError(
      422,
      'INVALID_FIELD_TYPE',
      `Fields of type "${type}" cannot be created through the API`,
    );
  }
  const missing = (REQUIRED_OPTIONS[type] ?? []).filter((option) => body.options?.[option] === undefined);
  if (missing.length > 0) {
    throw new SimError(
      422,
      'INVALID_FIELD_TYPE_OPTIONS_FOR_CREATE',
      `Field "${name}" of type ${type} needs options: ${missing.join(', ')}`,
    );
  }
  const options = body.options ? { ...body.options } : undefined;
  if (options && Array.isArray(options.choices)) {
    options.choices = (options.choices as { name: string; color?: string }[]).map((choice) => ({
      id: simId('sel'),
      ...choice,
    }));
  }
  if (type === 'multipleRecordLinks' && !base.tables.some((other) => other.id === options?.linkedTableId)) {
    throw new SimError(
      422,
      'INVALID_FIELD_TYPE_OPTIONS_FOR_CREATE',
      `Linked table ${String(options?.linkedTableId)} does not exist`,
    );
  }
  const description = typeof body.description === 'string' ? body.description : undefined;
  return {
    id: simId('fld'),
    name,
    type,
    ...(options ? { options } : {}),
    ...(description ? { description } : {}),
  };
}

export function createTable(
  base: SimBase,
  body: { name?: unknown; description?: unknown; fields?: FieldBody[] },
) {
  const name = typeof body.name === 'string' ? body.name.trim() : '';
  if (name === '' || base.tables.some((table) => table.name.toLowerCase() === name.toLowerCase())) {
    throw new SimError(422, 'DUPLICATE_TABLE_NAME', `Table name "${name}" is empty or already used`);
  }
  if (!Array.isArray(body.fields) || body.fields.length === 0) {
    throw new SimError(422, 'INVALID_REQUEST_MISSING_FIELDS', 'A table needs at least one field');
  }
  const draft = { fields: [] as SimField[] };
  for (const spec of body.fields) draft.fields.push(newField(base, draft, spec));
  if (PRIMARY_REFUSED.has(draft.fields[0]!.type)) {
    throw new SimError(
      422,
      'INVALID_FIELD_TYPE',
      `A field of type ${draft.fields[0]!.type} cannot be the primary field`,
    );
  }
  const table: SimTable = {
    id: simId('tbl'),
    name,
    ...(typeof body.description === 'string' ? { description: body.description } : {}),
    primaryFieldId: draft.fields[0]!.id,
    fields: draft.fields,
    views: [{ id: simId('viw'), name: 'Grid view', type: 'grid' }],
    records: new Map(),
    nextAutoNumber: 1,
  };
  base.tables.push(table);
  for (const field of table.fields) addInverseLink(base, table, field);
  return tableJson(table);
}

export function createField(base: SimBase, table: SimTable, body: FieldBody) {
  const field = newField(base, table, body);
  table.fields.push(field);
  addInverseLink(base, table, field);
  return fieldJson(field);
}

/** A link field gets its inverse in the linked table, as in Airtable (its cells are not kept in step here). */
function addInverseLink(base: SimBase, table: SimTable, field: SimField): void {
  if (field.type !== 'multipleRecordLinks') return;
  const target = base.tables.find((other) => other.id === field.options?.linkedTableId);
  if (!target || target === table) return;
  const inverse: SimField = {
    id: simId('fld'),
    name: uniqueName(target, table.name),
    type: 'multipleRecordLinks',
    options: { linkedTableId: table.id, inverseLinkFieldId: field.id },
  };
  field.options = { ...field.options, inverseLinkFieldId: inverse.id };
  target.fields.push(inverse);
}

function uniqueName(table: SimTable, wanted: string): string {
  let name = wanted;
  for (let n = 2; table.fields.some((field) => field.name === name); n += 1) name = `${wanted} ${n}`;
  return name;
}
