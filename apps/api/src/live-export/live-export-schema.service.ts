import { Injectable } from '@nestjs/common';
import {
  DomainError,
  ErrorCode,
  type LocationListDto,
  type SourceFieldListDto,
  type SourceTableListDto,
} from '@lockstep/contracts';
import { exportDefaultName, isExportableField } from '@lockstep/domain';
import type { LiveExportEntity } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { LiveExportAccess, LiveExportLinks, type LiveExportSide } from './live-export-access';
import { LiveExportConnections } from './live-export-connections';

/**
 * Source tables and fields, destination locations: read live from the apps (nothing cached). Link fields,
 * unreadable fields and fields of unsupported types are never offered (they cannot be exported).
 */
@Injectable()
export class LiveExportSchemaService {
  constructor(
    private readonly access: LiveExportAccess,
    private readonly connections: LiveExportConnections,
    private readonly catalog: ConnectorCatalog,
    private readonly links: LiveExportLinks,
  ) {}

  async tables(auth: AuthContext, id: string): Promise<SourceTableListDto> {
    const { entity } = await this.access.load(auth, id, 'read');
    this.requireConnected(entity, 'source');
    const tables = await this.connections.withSource(entity, (connection) => connection.listTables());
    return {
      data: tables.map((table) => ({
        remote_id: table.remoteId,
        name: table.name,
        fields_url: this.links.sourceFields(entity.id, table.remoteId),
      })),
      has_more: false,
      next_cursor: null,
    };
  }

  async fields(auth: AuthContext, id: string, table: string): Promise<SourceFieldListDto> {
    const { entity } = await this.access.load(auth, id, 'read');
    this.requireConnected(entity, 'source');
    const { remoteId, fields } = await this.connections.withSource(entity, async (connection) => {
      const tables = await connection.listTables();
      const byId = tables.find((candidate) => candidate.remoteId === table);
      const byName = tables.filter((candidate) => candidate.name === table);
      const found = byId ?? (byName.length === 1 ? byName[0] : undefined);
      if (!found)
        throw new DomainError(
          ErrorCode.NotFound,
          `The source has no table ` +
            `"${table}"${byName.length > 1 ? ' (the name matches several; use the remote_id)' : ''}.`,
          { table },
        );
      return { remoteId: found.remoteId, fields: await connection.listFields(found.remoteId) };
    });
    return {
      table: remoteId,
      data: fields.filter(isExportableField).map((field) => ({
        remote_id: field.remoteId,
        name: field.name,
        type: field.type,
        type_class: field.typeClass,
        primary: field.primary,
        required: field.required,
        type_details: field.typeDetails,
        default_destination_field: exportDefaultName(field.name),
      })),
      has_more: false,
      next_cursor: null,
    };
  }

  async locations(auth: AuthContext, id: string): Promise<LocationListDto> {
    const { entity } = await this.access.load(auth, id, 'read');
    this.requireConnected(entity, 'destination');
    const locations = await this.connections.withDestination(
      entity,
      (connection) => connection.listBases(),
      null,
    );
    return {
      data: locations.map((location) => ({ id: location.id, name: location.name })),
      has_more: false,
      next_cursor: null,
      location_kind:
        this.catalog.find(entity.destinationConnector)?.capabilities.liveExport.locationKind ?? null,
    };
  }

  /**
   * `409 auth_required` (type `requires_action`, with the connect action) while a side has no credentials.
   */
  requireConnected(entity: LiveExportEntity, side: LiveExportSide): void {
    const connected =
      side === 'source' ? entity.sourceCredentials !== null : entity.destinationCredentials !== null;
    if (connected) return;
    const connector = side === 'source' ? entity.sourceConnector : entity.destinationConnector;
    const method = side === 'source' ? entity.sourceAuthMethod : entity.destinationAuthMethod;
    const name = this.catalog.find(connector)?.displayName ?? connector;
    throw new DomainError(
      ErrorCode.AuthRequired,
      `The live export's ${side} is not connected yet.`,
      { side },
      this.links.connectAction(entity.id, side, connector, name, method),
    );
  }
}
