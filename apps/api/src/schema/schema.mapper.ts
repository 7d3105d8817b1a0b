import type { FieldDto, FieldListDto, SchemaLoadingDto, TableDto, TableListDto } from '@lockstep/contracts';
import type { SyncFieldEntity, SyncTableEntity } from '@lockstep/persistence';
import type { SyncLinks } from '../syncs/sync-links';

export const SCHEMA_LOADING: SchemaLoadingDto = { loading: true };

export const isSchemaLoading = (value: object): value is SchemaLoadingDto =>
  (value as Partial<SchemaLoadingDto>).loading === true;

export function toTableDto(table: SyncTableEntity, links: SyncLinks): TableDto {
  return {
    id: table.id,
    remote_id: table.remoteId,
    name: table.name,
    fields_fetched_at: table.fieldsFetchedAt?.toISOString() ?? null,
    views: table.views
      ? {
          required: table.views.required,
          options: table.views.options.map((o) => ({ value: o.value, name: o.name })),
        }
      : null,
    read_only: table.readOnly,
    fields_url: links.fields(table.syncId, table.id),
  };
}

export function toTableListDto(
  side: 'left' | 'right',
  fetchedAt: Date,
  tables: SyncTableEntity[],
  links: SyncLinks,
): TableListDto {
  return {
    fetched_at: fetchedAt.toISOString(),
    side,
    data: tables.map((t) => toTableDto(t, links)),
    has_more: false,
    next_cursor: null,
  };
}

export function toFieldDto(field: SyncFieldEntity): FieldDto {
  return {
    id: field.id,
    remote_id: field.remoteId,
    name: field.name,
    type: field.type,
    read: field.read,
    write: field.write,
    required: field.required,
    primary: field.isPrimary,
    type_details: field.typeDetails && Object.keys(field.typeDetails).length > 0 ? field.typeDetails : null,
  };
}

export function toFieldListDto(
  table: SyncTableEntity,
  fetchedAt: Date,
  fields: SyncFieldEntity[],
): FieldListDto {
  return {
    fetched_at: fetchedAt.toISOString(),
    table: { id: table.id, remote_id: table.remoteId, name: table.name, side: table.side },
    data: fields.map(toFieldDto),
    has_more: false,
    next_cursor: null,
  };
}
