import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { LiveExportConnectorListDto } from '@lockstep/contracts';
import { planIncludes } from '@lockstep/domain';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { NotForSyncRestrictedKeys, RequiredScope } from '../common/auth/auth.decorators';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { LiveExportAccess } from './live-export-access';
import { connectorRoles } from './live-export-connections';

@ApiTags('Live export')
@ApiBearerAuth('api_key')
@NotForSyncRestrictedKeys()
@Controller('v1/live-export/connectors')
export class LiveExportConnectorsController {
  constructor(
    private readonly catalog: ConnectorCatalog,
    private readonly access: LiveExportAccess,
  ) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listLiveExportConnectors',
    summary: 'List live export connectors',
    description: [
      'Every connector that can take part in a live export, with its `roles` (`source`, ' +
        '`destination`), the kind of a destination `location` (PostgreSQL: `schema`; MySQL/MariaDB: ' +
        '`database`; Airtable and NocoDB: `base`) and its credential fields. `postgres`, `mysql`, ' +
        '`airtable` and `nocodb` serve as source and destination (an Airtable or NocoDB destination keeps ' +
        '`lockstep_source_id` and `lockstep_row_hash` as text fields and writes 10 (Airtable) or 100 ' +
        '(NocoDB) records a request, without a transaction).',
      '`available` is false when live export is unavailable to the account (plan or subscription) or ' +
        'the connector is above its plan. `live_export_available` and `allowed_cadences` say what the ' +
        'plan permits: free has no live export; pro allows `manual`, `hourly`, `daily`; business adds ' +
        '`every_30_minutes` and `every_10_minutes`. Live export also needs an active subscription.',
      'A key limited to one sync gets `403 sync_restricted_key` here, as on every live export endpoint.',
    ].join('\n\n'),
  })
  @ApiOkResponse({ type: LiveExportConnectorListDto })
  async list(@Auth() auth: AuthContext): Promise<LiveExportConnectorListDto> {
    const gate = await this.access.gate(auth);
    const data = this.catalog
      .list()
      .filter((connector) => connectorRoles(connector).length > 0)
      .map((connector) => ({
        type: connector.type,
        name: connector.displayName,
        roles: connectorRoles(connector),
        location_kind: connector.capabilities.liveExport.destination
          ? connector.capabilities.liveExport.locationKind
          : null,
        auth: {
          method: connector.auth.method,
          fields:
            connector.auth.method === 'api_key'
              ? connector.auth.fields.map((f) => ({
                  id: f.id,
                  label: f.label,
                  optional: f.optional,
                  placeholder: f.placeholder,
                  options: f.options,
                }))
              : null,
        },
        available: gate.available && planIncludes(auth.plan, connector.plan),
        required_plan: connector.plan,
      }));
    return {
      data,
      has_more: false,
      next_cursor: null,
      live_export_available: gate.available,
      allowed_cadences: gate.allowedCadences,
    };
  }
}
