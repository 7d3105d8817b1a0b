/**
 * MySQL / MariaDB column types -> Lockstep's canonical type classes (libs/domain type-class.ts): classifying
 * a column from information_schema. The other parts are pure too: decode.ts (driver value -> canonical),
 * encode.ts (canonical -> driver parameter), native-types.ts (the native type of a field Lockstep creates).
 * The README has the mapping as a table.
 */
import type { TypeClass } from '@lockstep/domain';
import { isTypeClass } from '@lockstep/domain';

/** How a column's values are stored, which decides the value conversion both ways. */
export type Storage =
  | 'text'
  | 'integer'
  | 'bit_integer'
  | 'decimal'
  | 'float'
  | 'bool_int'
  | 'bool_bit'
  | 'date'
  | 'time'
  | 'datetime'
  | 'timestamp'
  | 'datetime_utc'
  | 'uuid'
  | 'json'
  | 'enum'
  | 'set'
  | 'json_multi_select'
  | 'json_array'
  | 'interval'
  | 'unsupported';

/** One column as information_schema describes it (plus the few joins the connector makes). */
export interface ColumnDescription {
  name: string;
  /** information_schema DATA_TYPE, lower case (`varchar`, `int`, `longtext`, `enum`...). */
  dataType: string;
  /** information_schema COLUMN_TYPE, lower case (`varchar(40)`, `tinyint(1)`, `enum('a','b')`...). */
  columnType: string;
  nullable: boolean;
  /** The column has a default (any default, NULL included, as MariaDB reports it). */
  hasDefault: boolean;
  autoIncrement: boolean;
  generated: boolean;
  comment: string;
  charMaxLength: number | null;
  numericPrecision: number | null;
  numericScale: number | null;
  /** Part of the primary key. */
  primary: boolean;
  /**
   * The column alone is a unique key other than the primary key (listed as `type_details.unique`, so a person
   * is offered it as a match field). Optional: absent = false.
   */
  unique?: boolean;
  /** MariaDB: a `json_valid(column)` CHECK constraint, which is what its JSON type is. */
  jsonCheck: boolean;
  /** Single-column foreign key to the single-column primary key of this table, in the same database. */
  references: string | null;
  /** The table is a view (every column read-only). */
  inView: boolean;
}

export interface ClassifiedColumn {
  name: string;
  /** The connector's own type name shown to people (`varchar(40)`, `enum`, `json`...). */
  type: string;
  typeClass: TypeClass;
  storage: Storage;
  read: boolean;
  write: boolean;
  required: boolean;
  primary: boolean;
  typeDetails: Record<string, unknown> | null;
}

/** Marker in a column comment that says which class a column Lockstep created stands for. */
const MARKER = /\blockstep:([a-z_]+)(?::([a-z_]+))?/;

const TEXT_TYPES = new Set([
  'char',
  'varchar',
  'tinytext',
  'text',
  'mediumtext',
  'longtext',
  'inet4',
  'inet6',
]);
const INTEGER_TYPES = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint', 'year']);
const FLOAT_TYPES = new Set(['float', 'double', 'real', 'double precision']);

/** Parses the quoted options of `enum('a','b')` / `set('a','b')` (quotes doubled, backslashes escaped). */
export function parseOptions(columnType: string): string[] {
  const open = columnType.indexOf('(');
  const options: string[] = [];
  if (open < 0) return options;
  let i = open + 1;
  while (i < columnType.length) {
    const ch = columnType[i];
    if (ch === "'") {
      let value = '';
      i += 1;
      while (i < columnType.length) {
        const c = columnType[i];
        if (c === "'" && columnType[i + 1] === "'") {
          value += "'";
          i += 2;
        } else if (c === '\\' && i + 1 < columnType.length) {
          value += columnType[i + 1];
          i += 2;
        } else if (c === "'") {
          i += 1;
          break;
        } else {
          value += c;
          i += 1;
        }
      }
      options.push(value);
    } else if (ch === ')') {
      break;
    } else {
      i += 1;
    }
  }
  return options;
}

function baseClass(column: ColumnDescription): {
  typeClass: TypeClass;
  storage: Storage;
  type: string;
  details: Record<string, unknown>;
} {
  const { dataType, columnType } = column;
  const marker = MARKER.exec(column.comment);
  const markedAs = marker?.[1];
  // MariaDB's JSON is LONGTEXT with a json_valid() check; MySQL's is its own type.
  if ((dataType === 'longtext' && column.jsonCheck) || dataType === 'json') {
    if (markedAs === 'multi_select')
      return {
        typeClass: 'multi_select',
        storage: 'json_multi_select',
        type: 'json',
        details: { allows_multiple_values: true },
      };
    if (markedAs === 'array') return jsonArray(marker?.[2]);
    return { typeClass: 'json', storage: 'json', type: 'json', details: {} };
  }
  if (dataType === 'uuid') return { typeClass: 'uuid', storage: 'uuid', type: columnType, details: {} };
  if (dataType === 'char' && markedAs === 'uuid')
    return { typeClass: 'uuid', storage: 'uuid', type: columnType, details: {} };
  if (dataType === 'varchar' && markedAs === 'interval')
    return { typeClass: 'interval', storage: 'interval', type: columnType, details: {} };
  if (TEXT_TYPES.has(dataType)) {
    const details: Record<string, unknown> = {};
    if ((dataType === 'char' || dataType === 'varchar') && column.charMaxLength !== null)
      details.max_length = column.charMaxLength;
    return { typeClass: 'text', storage: 'text', type: columnType, details };
  }
  if (dataType === 'tinyint' && /^tinyint\(1\)/.test(columnType))
    return { typeClass: 'boolean', storage: 'bool_int', type: columnType, details: {} };
  if (dataType === 'bit') {
    if (/^bit\(1\)/.test(columnType))
      return { typeClass: 'boolean', storage: 'bool_bit', type: columnType, details: {} };
    return { typeClass: 'integer', storage: 'bit_integer', type: columnType, details: {} };
  }
  if (INTEGER_TYPES.has(dataType))
    return { typeClass: 'integer', storage: 'integer', type: columnType, details: {} };
  if (dataType === 'decimal' || dataType === 'numeric') {
    const details: Record<string, unknown> = {};
    if (column.numericPrecision !== null) details.precision = column.numericPrecision;
    if (column.numericScale !== null) details.scale = column.numericScale;
    return { typeClass: 'decimal', storage: 'decimal', type: columnType, details };
  }
  if (FLOAT_TYPES.has(dataType))
    return { typeClass: 'float', storage: 'float', type: columnType, details: {} };
  if (dataType === 'date') return { typeClass: 'date', storage: 'date', type: columnType, details: {} };
  if (dataType === 'time') return { typeClass: 'time', storage: 'time', type: columnType, details: {} };
  if (dataType === 'datetime') {
    if (markedAs === 'timestamp')
      return { typeClass: 'timestamp', storage: 'datetime_utc', type: columnType, details: {} };
    return { typeClass: 'datetime', storage: 'datetime', type: columnType, details: {} };
  }
  if (dataType === 'timestamp')
    return { typeClass: 'timestamp', storage: 'timestamp', type: columnType, details: {} };
  if (dataType === 'enum')
    return {
      typeClass: 'select',
      storage: 'enum',
      type: 'enum',
      details: { options: parseOptions(columnType) },
    };
  if (dataType === 'set') {
    return {
      typeClass: 'multi_select',
      storage: 'set',
      type: 'set',
      details: { options: parseOptions(columnType), allows_multiple_values: true },
    };
  }
  // binary, varbinary, blobs, geometry types, vector, anything newer: listed, never read or written.
  return { typeClass: 'unsupported', storage: 'unsupported', type: columnType, details: {} };
}

function jsonArray(element: string | undefined): {
  typeClass: TypeClass;
  storage: Storage;
  type: string;
  details: Record<string, unknown>;
} {
  const elementClass = element && isTypeClass(element) ? element : 'json';
  return {
    typeClass: 'array',
    storage: 'json_array',
    type: 'json',
    details: { element_class: elementClass, allows_multiple_values: true },
  };
}

export function classifyColumn(column: ColumnDescription): ClassifiedColumn {
  const base = baseClass(column);
  let { typeClass } = base;
  const details = { ...base.details };
  // A single-column foreign key to another table's primary key is a relation; its value stays the key's text.
  if (column.references !== null && typeClass !== 'unsupported') {
    typeClass = 'relation';
    details.target_table = column.references;
    details.allows_multiple_values = false;
  }
  const supported = typeClass !== 'unsupported';
  if (column.generated || column.autoIncrement) details.generated = true;
  if (column.unique && !column.primary) details.unique = true;
  const write = supported && !column.inView && !column.generated && !column.autoIncrement;
  return {
    name: column.name,
    type: base.type,
    typeClass,
    storage: base.storage,
    read: supported,
    write,
    required: write && !column.nullable && !column.hasDefault,
    primary: column.primary,
    typeDetails: Object.keys(details).length > 0 ? details : null,
  };
}
