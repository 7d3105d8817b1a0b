import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ConnectorListDto } from '@lockstep/contracts';
import { Auth, type AuthContext } from '../common/auth/auth-context';
import { RequiredScope } from '../common/auth/auth.decorators';
import { ConnectorCatalog } from './connector-catalog';
import { toConnectorDto } from './connectors.mapper';

@ApiTags('Connectors')
@ApiBearerAuth('api_key')
@Controller('v1/sync/connectors')
export class ConnectorsController {
  constructor(private readonly catalog: ConnectorCatalog) {}

  @Get()
  @RequiredScope('read')
  @ApiOperation({
    operationId: 'listConnectors',
    summary: 'List connectors',
    description:
      'Every connector a side can use (`postgres`, `mysql`, `airtable`, `nocodb`), with the credential ' +
      'fields it declares (spec 2.6: Airtable lists `api_key` with one field, `apiKey`; NocoDB two, ' +
      '`baseUrl` and `apiToken`). Connectors ' +
      "above the account's plan are listed with `available: false` and their `required_plan`. " +
      'One-sync keys may call it.',
  })
  @ApiOkResponse({ type: ConnectorListDto })
  list(@Auth() auth: AuthContext): ConnectorListDto {
    return {
      data: this.catalog.list().map((c) => toConnectorDto(c, auth.plan)),
      has_more: false,
      next_cursor: null,
    };
  }
}
