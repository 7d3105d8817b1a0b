import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { ConnectorsModule } from '../connectors/connectors.module';
import { IssuesModule } from '../issues/issues.module';
import { LiveExportModule } from '../live-export/live-export.module';
import { MappingsModule } from '../mappings/mappings.module';
import { OperationsModule } from '../operations/operations.module';
import { PendingDeletesModule } from '../pending-deletes/pending-deletes.module';
import { RecordsModule } from '../records/records.module';
import { SchemaModule } from '../schema/schema.module';
import { SyncsModule } from '../syncs/syncs.module';
import { McpServerService } from './mcp-server.service';
import { McpToolsService } from './mcp-tools.service';
import { McpController } from './mcp.controller';
import { McpConsentController } from './oauth/consent.controller';
import { McpOAuthClients } from './oauth/oauth-clients';
import { McpOAuthCodes } from './oauth/oauth-codes';
import { McpOAuthController, OAuthTokenFormMiddleware } from './oauth/oauth.controller';
import { ToolCatalog } from './tools/tool-catalog';
import { ToolServices } from './tools/tool-services';

/**
 * The MCP server (issue 28): the `sync_*` tools over Streamable HTTP at `{PUBLIC_URL}/mcp`, and OAuth sign-in
 * for MCP clients (metadata, registration, token; consent in the console).
 */
@Module({
  imports: [
    ApiKeysModule,
    ConnectorsModule,
    SyncsModule,
    SchemaModule,
    MappingsModule,
    OperationsModule,
    IssuesModule,
    RecordsModule,
    PendingDeletesModule,
    LiveExportModule,
  ],
  controllers: [McpController, McpOAuthController, McpConsentController],
  providers: [
    ToolServices,
    ToolCatalog,
    McpToolsService,
    McpServerService,
    McpOAuthClients,
    McpOAuthCodes,
    OAuthTokenFormMiddleware,
  ],
})
export class McpModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(OAuthTokenFormMiddleware).forRoutes('oauth/token');
  }
}
