import { Module } from '@nestjs/common';
import { ConnectorsModule } from '../connectors/connectors.module';
import { IssuesModule } from '../issues/issues.module';
import { MappingsModule } from '../mappings/mappings.module';
import { OperationsModule } from '../operations/operations.module';
import { PendingDeletesModule } from '../pending-deletes/pending-deletes.module';
import { RecordsModule } from '../records/records.module';
import { SchemaModule } from '../schema/schema.module';
import { SyncsModule } from '../syncs/syncs.module';
import { McpServerService } from './mcp-server.service';
import { McpToolsService } from './mcp-tools.service';
import { McpController } from './mcp.controller';
import { ToolCatalog } from './tools/tool-catalog';
import { ToolServices } from './tools/tool-services';

/** The MCP server (issue 28): the `sync_*` tools over Streamable HTTP at `{PUBLIC_URL}/mcp`. */
@Module({
  imports: [
    ConnectorsModule,
    SyncsModule,
    SchemaModule,
    MappingsModule,
    OperationsModule,
    IssuesModule,
    RecordsModule,
    PendingDeletesModule,
  ],
  controllers: [McpController],
  providers: [ToolServices, ToolCatalog, McpToolsService, McpServerService],
})
export class McpModule {}
