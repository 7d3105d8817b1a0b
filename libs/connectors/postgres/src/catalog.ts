/**
 * Discovery: what tables a schema has and what their columns are, from the system catalogs (not
 * information_schema, which hides columns of tables the role does not own and knows nothing of enums).
 * Catalog queries return one JSON document so they do not depend on the connection's raw-text type parsers.
 */
import type { BaseInfo, TableInfo } from '@lockstep/connectors-core';
import {
  columnKind,
  fieldInfo,
  SERVICE_ID_COLUMN,
  type ColumnKind,
  type ColumnMeta,
  type FieldContext,
} from './types';
import type { FieldInfo } from '@lockstep/connectors-core';

export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

export interface TableMeta {
  schema: string;
  name: string;
  /** r (table), p (partitioned), v (view), m (materialized view), f (foreign table). */
  relkind: string;
  isView: boolean;
  readOnly: boolean;
  primaryKey: string[];
  /** `lockstep_id` when the table has it with a unique index (or as its primary key). */
  serviceIdColumn: string | null;
  /** The column rows are addressed and paged by: the single-column primary key, else the service id. */
  keyColumn: string | null;
  hasCaptureTrigger: boolean;
  /**
   * Rows can be written with COPY FROM exactly as INSERT writes them: a table (plain or partitioned) without
   * row-level security (COPY FROM refuses it), INSERT rules (COPY ignores them) or BEFORE INSERT row
   * triggers (they may change the key, which a COPY does not read back).
   */
  copyable: boolean;
  columns: ColumnMeta[];
  kinds: Map<string, ColumnKind>;
  fields: FieldInfo[];
  /** `columns` and `fields` by name (= field remote id). */
  columnByName: Map<string, ColumnMeta>;
  fieldById: Map<string, FieldInfo>;
}

const TABLES_SQL = `
SELECT coalesce(json_agg(json_build_object(
  'name', c.relname,
  'relkind', c.relkind,
  'insert', has_table_privilege(c.oid, 'INSERT'),
  'update', has_table_privilege(c.oid, 'UPDATE'),
  'delete', has_table_privilege(c.oid, 'DELETE')
) ORDER BY c.relname), '[]')::text AS doc
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition`;

/** Schemas that are never offered as bases (besides `pg_*`). */
const EXCLUDED_SCHEMAS = ['information_schema', 'lockstep'];

const BASES_SQL = `
SELECT nspname AS name FROM pg_namespace
WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> ALL ($1::text[]) AND has_schema_privilege(oid, 'USAGE')
ORDER BY nspname`;

/** The schemas the role may use. */
export async function listBases(db: Queryable): Promise<BaseInfo[]> {
  const { rows } = await db.query(BASES_SQL, [EXCLUDED_SCHEMAS]);
  return rows.map((row) => ({ id: String(row['name']), name: String(row['name']) }));
}

export async function schemaExists(db: Queryable, schema: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return rows.length > 0;
}

export async function listTables(db: Queryable, schema: string): Promise<TableInfo[]> {
  const { rows } = await db.query(TABLES_SQL, [schema]);
  const tables = JSON.parse(String(rows[0]?.['doc'] ?? '[]')) as {
    name: string;
    relkind: string;
    insert: boolean;
    update: boolean;
    delete: boolean;
  }[];
  return tables.map((table) => ({
    remoteId: table.name,
    name: table.name,
    views: null,
    readOnly:
      table.relkind === 'v' || table.relkind === 'm' || !(table.insert && table.update && table.delete),
  }));
}

// Domains are followed to their base type (recursively) for the column and for an array's element.
const TABLE_SQL = `
WITH rel AS (
  SELECT c.oid, c.relkind, c.relrowsecurity FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
),
pk AS (
  SELECT coalesce(json_agg(a.attname ORDER BY array_position(i.indkey::int2[], a.attnum)), '[]') AS cols
  FROM rel JOIN pg_index i ON i.indrelid = rel.oid AND i.indisprimary
  JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum = ANY (i.indkey)
),
cols AS (
  SELECT a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.atthasdef, a.attidentity,
         a.attgenerated,
         pg_get_expr(d.adbin, d.adrelid) AS default_expr,
         (WITH RECURSIVE chain AS (
            SELECT t.oid, t.typbasetype, t.typtype, 0 AS depth FROM pg_type t WHERE t.oid = a.atttypid
            UNION ALL
            SELECT b.oid, b.typbasetype, b.typtype, chain.depth + 1
              FROM pg_type b JOIN chain ON b.oid = chain.typbasetype
            WHERE chain.typtype = 'd')
          SELECT oid FROM chain ORDER BY depth DESC LIMIT 1) AS base_oid
  FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
),
typed AS (
  SELECT cols.*, bt.typname AS base_name, bt.typtype AS base_typtype, bt.typcategory AS base_category,
         bt.typelem,
         (WITH RECURSIVE chain AS (
            SELECT t.oid, t.typbasetype, t.typtype, 0 AS depth FROM pg_type t WHERE t.oid = bt.typelem
            UNION ALL
            SELECT b.oid, b.typbasetype, b.typtype, chain.depth + 1
              FROM pg_type b JOIN chain ON b.oid = chain.typbasetype
            WHERE chain.typtype = 'd')
          SELECT oid FROM chain ORDER BY depth DESC LIMIT 1) AS elem_oid
  FROM cols JOIN pg_type bt ON bt.oid = cols.base_oid
),
fks AS (
  SELECT a.attname AS col, tn.nspname AS target_schema, tc.relname AS target_table,
         ta.attname AS target_column
  FROM rel JOIN pg_constraint k ON k.conrelid = rel.oid AND k.contype = 'f' AND array_length(k.conkey, 1) = 1
  JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum = k.conkey[1]
  JOIN pg_class tc ON tc.oid = k.confrelid JOIN pg_namespace tn ON tn.oid = tc.relnamespace
  JOIN pg_attribute ta ON ta.attrelid = k.confrelid AND ta.attnum = k.confkey[1]
  WHERE EXISTS (SELECT 1 FROM pg_index ti WHERE ti.indrelid = k.confrelid AND ti.indisprimary
                AND ti.indnatts = 1 AND ti.indkey[0] = k.confkey[1])
)
SELECT json_build_object(
  'relkind', rel.relkind,
  'insert', has_table_privilege(rel.oid, 'INSERT'),
  'update', has_table_privilege(rel.oid, 'UPDATE'),
  'delete', has_table_privilege(rel.oid, 'DELETE'),
  'primaryKey', (SELECT cols FROM pk),
  'serviceIdUnique', EXISTS (
    SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum = i.indkey[0]
    WHERE i.indrelid = rel.oid AND i.indisunique AND i.indnatts = 1 AND i.indpred IS NULL
      AND a.attname = '${SERVICE_ID_COLUMN}'),
  'uniqueColumns', (SELECT coalesce(json_agg(a.attname), '[]')
    FROM pg_index i JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum = i.indkey[0]
    WHERE i.indrelid = rel.oid AND i.indisunique AND NOT i.indisprimary AND i.indnatts = 1
      AND i.indpred IS NULL AND i.indexprs IS NULL),
  'captureTrigger', (SELECT count(*) FROM pg_trigger
                      WHERE tgrelid = rel.oid
                        AND tgname IN ('lockstep_capture_ins', 'lockstep_capture_upd',
                                       'lockstep_capture_del')) = 3
    OR EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel.oid AND tgname = 'lockstep_capture_row'),
  -- tgtype bits: 1 row, 2 before, 4 insert.
  'copyable', rel.relkind IN ('r', 'p') AND NOT rel.relrowsecurity
    AND NOT EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = rel.oid AND r.ev_type = '3')
    AND NOT EXISTS (SELECT 1 FROM pg_trigger t
                     WHERE t.tgrelid = rel.oid AND NOT t.tgisinternal AND t.tgtype & 7 = 7),
  'columns', (SELECT coalesce(json_agg(json_build_object(
      'name', typed.attname,
      'type', format_type(typed.atttypid, typed.atttypmod),
      -- format_type(bpchar, NULL) is "character", which is char(1): a cast to it would truncate.
      'castType', CASE typed.atttypid
                    WHEN 'bpchar'::regtype THEN 'bpchar'
                    WHEN '_bpchar'::regtype THEN 'bpchar[]'
                    ELSE format_type(typed.atttypid, NULL)
                  END,
      'notNull', typed.attnotnull,
      'hasDefault', typed.atthasdef,
      'defaultExpr', typed.default_expr,
      'identity', typed.attidentity,
      'generated', typed.attgenerated,
      'baseName', typed.base_name,
      'baseTyptype', typed.base_typtype,
      'baseCategory', typed.base_category,
      'baseEnum', (SELECT json_agg(e.enumlabel ORDER BY e.enumsortorder)
                     FROM pg_enum e WHERE e.enumtypid = typed.base_oid),
      'elemName', et.typname,
      'elemTyptype', et.typtype,
      'elemEnum', (SELECT json_agg(e.enumlabel ORDER BY e.enumsortorder)
                     FROM pg_enum e WHERE e.enumtypid = typed.elem_oid),
      'relation', (SELECT json_build_object('targetSchema', fks.target_schema,
                                            'targetTable', fks.target_table,
                                            'targetColumn', fks.target_column)
                     FROM fks WHERE fks.col = typed.attname LIMIT 1)
    ) ORDER BY typed.attnum), '[]')
    FROM typed LEFT JOIN pg_type et ON et.oid = typed.elem_oid AND typed.base_category = 'A')
)::text AS doc
FROM rel`;

interface TableDoc {
  relkind: string;
  insert: boolean;
  update: boolean;
  delete: boolean;
  primaryKey: string[];
  serviceIdUnique: boolean;
  /** Columns that alone are a unique index (not the primary key, not partial, not an expression). */
  uniqueColumns: string[];
  captureTrigger: boolean;
  copyable: boolean;
  columns: ColumnMeta[];
}

/** Reads one table's metadata, or null when it does not exist. */
export async function loadTable(db: Queryable, schema: string, name: string): Promise<TableMeta | null> {
  const { rows } = await db.query(TABLE_SQL, [schema, name]);
  if (rows.length === 0) return null;
  const doc = JSON.parse(String(rows[0]!['doc'])) as TableDoc;
  const isView = doc.relkind === 'v' || doc.relkind === 'm';
  const readOnly = isView || !(doc.insert && doc.update && doc.delete);
  const names = doc.columns.map((column) => column.name);
  const serviceIdColumn =
    names.includes(SERVICE_ID_COLUMN) &&
    (doc.serviceIdUnique || (doc.primaryKey.length === 1 && doc.primaryKey[0] === SERVICE_ID_COLUMN))
      ? SERVICE_ID_COLUMN
      : null;
  let keyColumn: string | null = null;
  if (doc.primaryKey.length === 1) keyColumn = doc.primaryKey[0]!;
  else if (serviceIdColumn) keyColumn = serviceIdColumn;
  else if (isView)
    keyColumn = ['id', SERVICE_ID_COLUMN].find((column) => names.includes(column)) ?? names[0] ?? null;
  const context: FieldContext = {
    readOnly,
    primaryKey: doc.primaryKey,
    serviceIdColumn,
    uniqueColumns: doc.uniqueColumns,
  };
  const fields = doc.columns.map((column) => fieldInfo(column, context));
  return {
    schema,
    name,
    relkind: doc.relkind,
    isView,
    readOnly,
    primaryKey: doc.primaryKey,
    serviceIdColumn,
    keyColumn,
    hasCaptureTrigger: doc.captureTrigger,
    copyable: doc.copyable,
    columns: doc.columns,
    kinds: new Map(doc.columns.map((column) => [column.name, columnKind(column)])),
    fields,
    columnByName: new Map(doc.columns.map((column) => [column.name, column])),
    fieldById: new Map(fields.map((field) => [field.remoteId, field])),
  };
}
