/**
 * Record endpoints of the Airtable Web API, as documented:
 * - list records: https://airtable.com/developers/web/api/list-records (pages of at most 100, `offset`,
 *   `view`, `fields[]`, `filterByFormula`, `returnFieldsByFieldId`),
 * - get record: https://airtable.com/developers/web/api/get-record,
 * - create records: https://airtable.com/developers/web/api/create-records (at most 10 per request),
 * - update multiple records: https://airtable.com/developers/web/api/update-multiple-records (PATCH merges,
 *   PUT replaces; `performUpsert.fieldsToMergeOn`),
 * - delete multiple records: https://airtable.com/developers/web/api/delete-multiple-records (`records[]`).
 * A batch is all or nothing: one refused record fails the whole request.
 */
import { findField, recordJson, type SimBase, type SimRecord, type SimTable, simId } from './simulator-model';
import { acceptValue, SimError } from './simulator-values';

export const MAX_PAGE_SIZE = 100;
export const MAX_BATCH = 10;

/**
 * What record calls need from the simulator: its clock, the open iterations, and the payload log of the base's
 * webhooks (`committed` knows whether the API or a person outside made the change).
 */
export interface RecordWorld {
  now(): number;
  /** Open `list records` iterations by offset token. */
  iterators: Map<string, RecordIterator>;
  linkExists(base: SimBase, tableId: string, recordId: string): boolean;
  committed(base: SimBase, table: SimTable, change: Committed): void;
}

export interface Committed {
  created: SimRecord[];
  changed: SimRecord[];
  destroyed: string[];
}

export interface RecordIterator {
  tableId: string;
  ids: string[];
  position: number;
}

export function listRecords(world: RecordWorld, table: SimTable, query: URLSearchParams) {
  const pageSize = Number(query.get('pageSize') ?? MAX_PAGE_SIZE);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw new SimError(
      422,
      'INVALID_REQUEST_UNKNOWN',
      `Invalid pageSize: must be between 1 and ${MAX_PAGE_SIZE}`,
    );
  }
  const only = selectedFields(table, query.getAll('fields[]'));
  const byId = query.get('returnFieldsByFieldId') === 'true';
  const iterator = openIterator(world.iterators, table, query);
  const records: SimRecord[] = [];
  while (iterator.position < iterator.ids.length && records.length < pageSize) {
    const record = table.records.get(iterator.ids[iterator.position]!);
    iterator.position += 1;
    if (record) records.push(record);
  }
  let offset: string | undefined;
  if (iterator.position < iterator.ids.length) {
    offset = `itr${simId('').slice(0, 14)}/${iterator.ids[iterator.position]}`;
    world.iterators.set(offset, iterator);
  }
  return {
    records: records.map((record) => recordJson(table, record, byId, only)),
    ...(offset ? { offset } : {}),
  };
}

function openIterator(
  iterators: Map<string, RecordIterator>,
  table: SimTable,
  query: URLSearchParams,
): RecordIterator {
  const offset = query.get('offset');
  if (offset) {
    const iterator = iterators.get(offset);
    iterators.delete(offset);
    if (!iterator || iterator.tableId !== table.id) {
      throw new SimError(
        422,
        'LIST_RECORDS_ITERATOR_NOT_AVAILABLE',
        'The offset is not valid or has expired',
      );
    }
    return iterator;
  }
  const viewName = query.get('view');
  const view = viewName === null ? null : table.views.find((v) => v.id === viewName || v.name === viewName);
  if (viewName !== null && !view)
    throw new SimError(422, 'VIEW_NAME_NOT_FOUND', `Could not find view ${viewName}`);
  const matches = formulaFilter(table, query.get('filterByFormula'));
  const ids = [...table.records.values()]
    .filter((record) => (view?.filter ? view.filter(record) : true) && matches(record))
    .map((record) => record.id);
  const max = Number(query.get('maxRecords') ?? ids.length);
  return { tableId: table.id, ids: ids.slice(0, max), position: 0 };
}

function selectedFields(table: SimTable, names: string[]): Set<string> | undefined {
  if (names.length === 0) return undefined;
  return new Set(names.map((name) => fieldOf(table, name).id));
}

function fieldOf(table: SimTable, idOrName: string) {
  const field = findField(table, idOrName);
  if (!field) throw new SimError(422, 'UNKNOWN_FIELD_NAME', `Unknown field name: "${idOrName}"`);
  return field;
}

const TERM = /^\s*(?:RECORD_ID\(\)|\{([^}]+)\})\s*=\s*'((?:[^'\\]|\\.)*)'\s*$/;

/**
 * The subset of formulas the simulator evaluates: `OR(...)` / `AND(...)` of `{Field} = 'text'` and
 * `RECORD_ID() = 'rec...'` terms (what reading by id or by service id needs). Anything else is refused.
 */
function formulaFilter(table: SimTable, formula: string | null): (record: SimRecord) => boolean {
  if (!formula) return () => true;
  const grouped = /^\s*(OR|AND)\((.*)\)\s*$/s.exec(formula);
  const terms = (grouped ? splitTerms(grouped[2]!) : [formula]).map((term) => {
    const match = TERM.exec(term);
    if (!match)
      throw new SimError(
        422,
        'INVALID_FILTER_BY_FORMULA',
        `The formula for filtering records is invalid: ${formula}`,
      );
    const expected = match[2]!.replace(/\\(.)/g, '$1');
    if (match[1] === undefined) return (record: SimRecord) => record.id === expected;
    const field = fieldOf(table, match[1]);
    return (record: SimRecord) => String(record.fields[field.id] ?? '') === expected;
  });
  return grouped?.[1] === 'AND'
    ? (record) => terms.every((term) => term(record))
    : (record) => terms.some((term) => term(record));
}

function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '\\') i += 1;
    else if (text[i] === "'") quoted = !quoted;
    else if (text[i] === ',' && !quoted) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

export function getRecord(table: SimTable, recordId: string, query: URLSearchParams) {
  const record = table.records.get(recordId);
  if (!record) throw new SimError(404, 'MODEL_ID_NOT_FOUND', `Could not find a record with id ${recordId}`);
  return recordJson(table, record, query.get('returnFieldsByFieldId') === 'true');
}

interface WriteBody {
  records?: { id?: string; fields?: Record<string, unknown> }[];
  fields?: Record<string, unknown>;
  typecast?: boolean;
  returnFieldsByFieldId?: boolean;
  performUpsert?: { fieldsToMergeOn?: string[] };
}

function batchOf(body: WriteBody): { id?: string; fields?: Record<string, unknown> }[] {
  const records = body.records ?? (body.fields ? [{ fields: body.fields }] : null);
  if (!Array.isArray(records) || records.length === 0) {
    throw new SimError(
      422,
      'INVALID_REQUEST_MISSING_FIELDS',
      'Could not find field "records" in the request body',
    );
  }
  if (records.length > MAX_BATCH) {
    throw new SimError(422, 'INVALID_RECORDS', `You can write at most ${MAX_BATCH} records in one request`);
  }
  return records;
}

/** Field id -> stored value for the fields a request names (by name or id); empty values map to undefined. */
function values(
  world: RecordWorld,
  base: SimBase,
  table: SimTable,
  fields: Record<string, unknown>,
  typecast: boolean,
) {
  const result: Record<string, unknown> = {};
  const context = {
    typecast,
    linkExists: (tableId: string, id: string) => world.linkExists(base, tableId, id),
  };
  for (const [name, value] of Object.entries(fields ?? {})) {
    const field = fieldOf(table, name);
    result[field.id] = acceptValue(field, value, context);
  }
  return result;
}

function apply(record: SimRecord, changes: Record<string, unknown>, now: string, replace: boolean): void {
  if (replace) record.fields = {};
  for (const [id, value] of Object.entries(changes)) {
    if (value === undefined) delete record.fields[id];
    else record.fields[id] = value;
  }
  record.modifiedTime = now;
}

function newRecord(table: SimTable, now: string): SimRecord {
  const record: SimRecord = { id: simId('rec'), createdTime: now, modifiedTime: now, fields: {} };
  const auto = table.fields.find((field) => field.type === 'autoNumber');
  if (auto) record.fields[auto.id] = table.nextAutoNumber++;
  return record;
}

export function createRecords(world: RecordWorld, base: SimBase, table: SimTable, body: WriteBody) {
  const batch = batchOf(body);
  const prepared = batch.map((item) => values(world, base, table, item.fields ?? {}, Boolean(body.typecast)));
  const now = new Date(world.now()).toISOString();
  const created = prepared.map((changes) => {
    const record = newRecord(table, now);
    apply(record, changes, now, false);
    table.records.set(record.id, record);
    return record;
  });
  world.committed(base, table, { created, changed: [], destroyed: [] });
  const json = created.map((record) => recordJson(table, record, Boolean(body.returnFieldsByFieldId)));
  return body.records ? { records: json } : json[0];
}

export function updateRecords(
  world: RecordWorld,
  base: SimBase,
  table: SimTable,
  body: WriteBody,
  replace: boolean,
) {
  const batch = batchOf(body);
  const mergeOn = body.performUpsert?.fieldsToMergeOn?.map((name) => fieldOf(table, name).id) ?? null;
  const plan = batch.map((item) => {
    const changes = values(world, base, table, item.fields ?? {}, Boolean(body.typecast));
    const target = item.id
      ? table.records.get(item.id)
      : mergeOn
        ? upsertTarget(table, mergeOn, changes)
        : undefined;
    if (item.id && !target)
      throw new SimError(404, 'MODEL_ID_NOT_FOUND', `Could not find a record with id ${item.id}`);
    if (!item.id && !mergeOn) throw new SimError(422, 'INVALID_RECORDS', 'A record to update needs an id');
    return { target, changes };
  });
  const now = new Date(world.now()).toISOString();
  const change: Committed = { created: [], changed: [], destroyed: [] };
  const records = plan.map(({ target, changes }) => {
    const record = target ?? newRecord(table, now);
    apply(record, changes, now, replace && Boolean(target));
    if (target) change.changed.push(record);
    else {
      table.records.set(record.id, record);
      change.created.push(record);
    }
    return record;
  });
  world.committed(base, table, change);
  const byId = Boolean(body.returnFieldsByFieldId);
  return {
    records: records.map((record) => recordJson(table, record, byId)),
    ...(mergeOn
      ? { createdRecords: change.created.map((r) => r.id), updatedRecords: change.changed.map((r) => r.id) }
      : {}),
  };
}

function upsertTarget(
  table: SimTable,
  mergeOn: string[],
  changes: Record<string, unknown>,
): SimRecord | undefined {
  // Compared without serialising each record (a text merge field, the usual case, compares as a string):
  // serialising every record of the table for every record of every batch made a 5,000-record initial sync
  // spend more CPU in the simulator than the rate limit leaves between two requests.
  const wanted = mergeOn.map((id) => changes[id] ?? null);
  const same = (value: unknown, expected: unknown): boolean =>
    value === expected ||
    (typeof value === 'object' &&
      typeof expected === 'object' &&
      JSON.stringify(value) === JSON.stringify(expected));
  const matches: SimRecord[] = [];
  for (const record of table.records.values())
    if (mergeOn.every((id, i) => same(record.fields[id] ?? null, wanted[i]))) matches.push(record);
  if (matches.length > 1) {
    throw new SimError(
      422,
      'INVALID_VALUE_FOR_COLUMN',
      'More than one record matches the fields to merge on',
    );
  }
  return matches[0];
}

export function deleteRecords(world: RecordWorld, base: SimBase, table: SimTable, query: URLSearchParams) {
  const ids = query.getAll('records[]');
  if (ids.length === 0 || ids.length > MAX_BATCH) {
    throw new SimError(422, 'INVALID_RECORDS', `Give between 1 and ${MAX_BATCH} records[] to delete`);
  }
  for (const id of ids) {
    if (!table.records.has(id))
      throw new SimError(404, 'MODEL_ID_NOT_FOUND', `Could not find a record with id ${id}`);
  }
  for (const id of ids) table.records.delete(id);
  world.committed(base, table, { created: [], changed: [], destroyed: ids });
  return { records: ids.map((id) => ({ id, deleted: true })) };
}
