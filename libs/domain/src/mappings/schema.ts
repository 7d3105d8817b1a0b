import { TypeClass } from '../types/type-class';

/**
 * The schema model mapping validation runs against: what the service holds in its schema cache for each side
 * (spec 2.7), in domain terms. Prefixed ids (`table_...`, `field_...`) are the service's; remote ids are the
 * app's.
 */
export type SideName = 'left' | 'right';

export const SIDES: readonly SideName[] = ['left', 'right'];

export function otherSide(side: SideName): SideName {
  return side === 'left' ? 'right' : 'left';
}

/** A field as the app describes it: what a connector reports (its `FieldInfo`) and the schema cache keeps. */
export interface RemoteField {
  remoteId: string;
  name: string;
  /** The connector's own type name (`varchar(40)`, `timestamp with time zone`, `enum`...). */
  type: string;
  typeClass: TypeClass;
  read: boolean;
  write: boolean;
  required: boolean;
  primary: boolean;
  /**
   * Spec 2.7 `type_details` (snake_case keys), or null: `display_name`, `allows_multiple_values`, and for
   * the engine `options` (select / multi_select), `element_class` (array), `target_table` (relation),
   * `precision`/`scale`/`max_length` where the type has them.
   */
  typeDetails: Record<string, unknown> | null;
}

export interface SchemaField extends RemoteField {
  /** `field_...` */
  id: string;
  /** The app no longer has this field (kept so references still resolve and can be reported). */
  orphaned: boolean;
}

export interface SchemaTable {
  /** `table_...` */
  id: string;
  remoteId: string;
  name: string;
  /** null when the connector has no views. */
  views: { required: boolean; options: { value: string; name: string }[] } | null;
  /** The table cannot be written (a database view). */
  readOnly: boolean;
  orphaned: boolean;
  /** null = the table's fields were never fetched. */
  fields: SchemaField[] | null;
}

export interface SideSchema {
  side: SideName;
  /** Connector type slug. */
  connector: string;
  /** `createRelations`: a created field typed from a relation becomes a link (ConnectorCapabilities). */
  capabilities: { createTables: boolean; createFields: boolean; views: boolean; createRelations?: boolean };
  tables: SchemaTable[];
}

/** Both sides' schemas. */
export interface MappingsSchema {
  left: SideSchema;
  right: SideSchema;
}
