/**
 * The NocoDB field a created field gets, picked from the counterpart's canonical class and `type_details`:
 * a `numeric(10,2)` becomes a Decimal with precision 2, an enum a SingleSelect with its options. Classes
 * NocoDB has no field for are `unsupported`. A foreign key is created as text holding the target's id (record
 * links are not created from a counterpart yet: `createRelations` is false).
 */
import { ConnectorError, type FieldSpec } from '@lockstep/connectors-core';
import type { ColumnBody } from './sql';

/** Digits after the point NocoDB's Decimal shows at most (`meta.precision`). */
const MAX_PRECISION = 8;
const LONG_TEXT_SOURCES = new Set(['LongText', 'multilineText', 'richText']);

/** NocoDB's select options (`colOptions.options`); a comma would split a MultiSelect value, so none holds one. */
function selectOptions(spec: FieldSpec): { options: { title: string }[] } {
  const options = spec.typeDetails?.options;
  const names = Array.isArray(options) ? [...new Set(options.map(String))] : [];
  for (const name of names) {
    if (name.includes(','))
      throw new ConnectorError(
        'invalid_data',
        `Option "${name}" of "${spec.name}": NocoDB options cannot hold commas`,
      );
  }
  return { options: names.map((title) => ({ title })) };
}

function precision(spec: FieldSpec): number {
  const scale = spec.typeDetails?.scale;
  const digits = typeof scale === 'number' && Number.isInteger(scale) && scale >= 0 ? scale : 2;
  return Math.min(digits, MAX_PRECISION);
}

export function nativeField(spec: FieldSpec): ColumnBody {
  const title = spec.name;
  switch (spec.typeClass) {
    case 'text':
      return { title, uidt: LONG_TEXT_SOURCES.has(spec.sourceType ?? '') ? 'LongText' : 'SingleLineText' };
    case 'uuid':
    case 'relation':
      return { title, uidt: 'SingleLineText' };
    case 'time':
      return { title, uidt: 'Time' };
    case 'json':
      return { title, uidt: 'JSON' };
    case 'integer':
      return { title, uidt: 'Number' };
    case 'decimal':
      return { title, uidt: 'Decimal', meta: { precision: precision(spec) } };
    case 'float':
      return { title, uidt: 'Decimal', meta: { precision: MAX_PRECISION } };
    case 'boolean':
      return { title, uidt: 'Checkbox' };
    case 'date':
      return { title, uidt: 'Date', meta: { date_format: 'YYYY-MM-DD' } };
    case 'datetime':
    case 'timestamp':
      return { title, uidt: 'DateTime' };
    case 'interval':
      // Format 1 is h:mm:ss (format 0, h:mm, keeps no seconds).
      return { title, uidt: 'Duration', meta: { duration: 1 } };
    case 'select':
      return { title, uidt: 'SingleSelect', colOptions: selectOptions(spec) };
    case 'multi_select':
      return { title, uidt: 'MultiSelect', colOptions: selectOptions(spec) };
    default:
      throw new ConnectorError('unsupported', `NocoDB has no field type for "${spec.typeClass}" values`);
  }
}

/** NocoDB's names: not empty, no control characters, at most 255 characters (refused before any request). */
export function checkName(name: string, what: 'Table' | 'Field'): void {
  // eslint-disable-next-line no-control-regex
  if (name.trim() === '' || /[\u0000-\u001f]/.test(name) || name.length > 255) {
    throw new ConnectorError(
      'invalid_data',
      `${what} name ${JSON.stringify(name.slice(0, 40))} is empty, too long or has control characters`,
    );
  }
}
