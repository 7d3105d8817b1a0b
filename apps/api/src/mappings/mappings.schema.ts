import type { ConnectorCatalog } from '../connectors/connector-catalog';
import type {
  MappingsSchema,
  SchemaField,
  SchemaTable,
  SideName,
  SideSchema,
  TypeClass,
} from '@lockstep/domain';
import type { SyncFieldEntity, SyncSideEntity } from '@lockstep/persistence';
import type { SchemaTable as CachedTable } from '../schema/schema.service';

/** The domain's view of a side's cached schema (orphaned rows included, so references still resolve). */
export function toSideSchema(
  side: SideName,
  entity: SyncSideEntity,
  tables: CachedTable[],
  catalog: ConnectorCatalog,
): SideSchema {
  const capabilities = catalog.find(entity.connector)?.capabilities;
  return {
    side,
    connector: entity.connector,
    capabilities: {
      createTables: capabilities?.createTables ?? false,
      createFields: capabilities?.createFields ?? false,
      views: capabilities?.views ?? false,
      createRelations: capabilities?.createRelations ?? false,
    },
    tables: tables.map(toSchemaTable),
  };
}

export function toSchemaTable(table: CachedTable): SchemaTable {
  return {
    id: table.id,
    remoteId: table.remoteId,
    name: table.name,
    views: table.views,
    readOnly: table.readOnly,
    orphaned: table.orphaned,
    fields: table.fields === null ? null : table.fields.map(toSchemaField),
  };
}

export function toSchemaField(field: SyncFieldEntity): SchemaField {
  return {
    id: field.id,
    remoteId: field.remoteId,
    name: field.name,
    type: field.type,
    typeClass: field.typeClass as TypeClass,
    read: field.read,
    write: field.write,
    required: field.required,
    primary: field.isPrimary,
    typeDetails: field.typeDetails,
    orphaned: field.orphaned,
  };
}

/** Lookups by prefixed id over both sides. */
export class SchemaIndex {
  private readonly tables = new Map<string, SchemaTable>();
  private readonly fields = new Map<string, SchemaField>();

  constructor(readonly schema: MappingsSchema) {
    for (const side of [schema.left, schema.right]) {
      for (const table of side.tables) {
        this.tables.set(table.id, table);
        for (const field of table.fields ?? []) this.fields.set(field.id, field);
      }
    }
  }

  table(id: string): SchemaTable | null {
    return this.tables.get(id) ?? null;
  }

  field(id: string): SchemaField | null {
    return this.fields.get(id) ?? null;
  }
}
