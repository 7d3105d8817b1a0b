/**
 * Written values checked per field type as the field model describes them
 * (https://airtable.com/developers/web/api/field-model), with the error bodies of
 * https://airtable.com/developers/web/api/errors: a refused value is 422 `INVALID_VALUE_FOR_COLUMN`, an
 * unknown field `UNKNOWN_FIELD_NAME`, a select option that does not exist `INVALID_MULTIPLE_CHOICE_OPTIONS`
 * (unless `typecast` adds it), a link to a record that does not exist `ROW_DOES_NOT_EXIST`.
 */
import { type SimField, simId } from './simulator-model';

/** Field types whose values Airtable computes: a write to one is refused. */
export const COMPUTED_TYPES: ReadonlySet<string> = new Set([
  'formula',
  'rollup',
  'count',
  'multipleLookupValues',
  'createdTime',
  'lastModifiedTime',
  'createdBy',
  'lastModifiedBy',
  'autoNumber',
  'button',
]);

const TEXT_TYPES = new Set(['singleLineText', 'multilineText', 'richText', 'email', 'url', 'phoneNumber']);
const NUMBER_TYPES = new Set(['number', 'percent', 'currency', 'rating', 'duration']);

/** An error the simulator answers with `{ error: { type, message } }`. */
export class SimError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ValueContext {
  typecast: boolean;
  /** True when a record id exists in the linked table. */
  linkExists(tableId: string, recordId: string): boolean;
}

function refuse(field: SimField, why = 'cannot accept the provided value'): SimError {
  return new SimError(422, 'INVALID_VALUE_FOR_COLUMN', `Field "${field.name}" ${why}`);
}

/** The value as stored, or undefined for an empty one (the API then omits the field). */
export function acceptValue(field: SimField, value: unknown, context: ValueContext): unknown {
  if (COMPUTED_TYPES.has(field.type))
    throw refuse(field, 'cannot accept a value because the field is computed');
  if (value === null || value === undefined || value === '' || value === false) return undefined;
  if (Array.isArray(value) && value.length === 0) return undefined;
  if (TEXT_TYPES.has(field.type)) return text(field, value);
  if (NUMBER_TYPES.has(field.type)) return number(field, value, context.typecast);
  switch (field.type) {
    case 'checkbox':
      if (value !== true) throw refuse(field);
      return true;
    case 'date':
      if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) throw refuse(field);
      return value;
    case 'dateTime':
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) throw refuse(field);
      return new Date(value).toISOString();
    case 'singleSelect':
      return choice(field, value, context.typecast);
    case 'multipleSelects':
      if (!Array.isArray(value)) throw refuse(field);
      return value.map((item) => choice(field, item, context.typecast));
    case 'multipleRecordLinks':
      return links(field, value, context);
    case 'multipleAttachments':
      return attachments(field, value);
    case 'singleCollaborator':
    case 'multipleCollaborators':
      return collaborators(field, value);
    case 'barcode':
      if (typeof value !== 'object' || typeof (value as { text?: unknown }).text !== 'string')
        throw refuse(field);
      return value;
    default:
      throw refuse(field, `has type "${field.type}", which the simulator does not write`);
  }
}

function text(field: SimField, value: unknown): string {
  if (typeof value !== 'string') throw refuse(field);
  return value;
}

function number(field: SimField, value: unknown, typecast: boolean): number {
  const parsed = typeof value === 'string' && typecast ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isFinite(parsed)) throw refuse(field);
  return parsed;
}

function choice(field: SimField, value: unknown, typecast: boolean): string {
  if (typeof value !== 'string') throw refuse(field);
  const choices = (field.options?.choices ?? []) as { id: string; name: string; color?: string }[];
  if (choices.some((option) => option.name === value)) return value;
  if (!typecast) {
    throw new SimError(
      422,
      'INVALID_MULTIPLE_CHOICE_OPTIONS',
      `Insufficient permissions to create new select option ""${value}""`,
    );
  }
  field.options = { ...field.options, choices: [...choices, { id: simId('sel'), name: value }] };
  return value;
}

function links(field: SimField, value: unknown, context: ValueContext): string[] {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw refuse(field);
  const target = String(field.options?.linkedTableId ?? '');
  for (const id of value as string[]) {
    if (!context.linkExists(target, id))
      throw new SimError(422, 'ROW_DOES_NOT_EXIST', `Record ID ${id} does not exist`);
  }
  return value as string[];
}

function attachments(field: SimField, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw refuse(field);
  return value.map((item: { id?: unknown; url?: unknown; filename?: unknown }) => {
    if (
      typeof item !== 'object' ||
      item === null ||
      (typeof item.url !== 'string' && typeof item.id !== 'string')
    )
      throw refuse(field);
    const url = String(item.url ?? '');
    const filename = typeof item.filename === 'string' ? item.filename : (url.split('/').pop() ?? 'file');
    return {
      id: typeof item.id === 'string' ? item.id : simId('att'),
      url,
      filename,
      size: 0,
      type: 'application/octet-stream',
    };
  });
}

function collaborators(field: SimField, value: unknown): unknown {
  const list = field.type === 'singleCollaborator' ? [value] : value;
  if (!Array.isArray(list)) throw refuse(field);
  const users = list.map((item: { id?: unknown; email?: unknown }) => {
    if (
      typeof item !== 'object' ||
      item === null ||
      (typeof item.id !== 'string' && typeof item.email !== 'string')
    )
      throw refuse(field);
    const email = typeof item.email === 'string' ? item.email : `${String(item.id)}@example.invalid`;
    return { id: typeof item.id === 'string' ? item.id : simId('usr'), email, name: email.split('@')[0] };
  });
  return field.type === 'singleCollaborator' ? users[0] : users;
}
