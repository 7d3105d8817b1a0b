import { HooksModule } from './hooks/hooks.module';
import {
  type DynamicModule,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  type Type,
} from '@nestjs/common';
import { AppConfig, ConfigModule } from '@lockstep/config';
import { JobsModule } from '@lockstep/jobs';
import { PersistenceModule } from '@lockstep/persistence';
import { AccountsModule } from './accounts/accounts.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { CommonModule } from './common/common.module';
import { JsonBodyMiddleware } from './common/http/json-body.middleware';
import { LoggingModule } from './common/logging/logging';
import { HttpMetricsMiddleware } from './common/metrics/metrics';
import { ConnectorsModule } from './connectors/connectors.module';
import { ConsoleModule } from './console/console.module';
import { OAuthConsoleModule } from './console/oauth/oauth.module';
import { ConsoleFallbackModule } from './console/live-exports-fallback';
import { DiscoveryController } from './discovery/discovery.controller';
import { HealthController } from './health/health.controller';
import { IssuesModule } from './issues/issues.module';
import { LiveExportModule } from './live-export/live-export.module';
import { MappingsModule } from './mappings/mappings.module';
import { McpModule } from './mcp/mcp.module';
import { OperationsModule } from './operations/operations.module';
import { PendingDeletesModule } from './pending-deletes/pending-deletes.module';
import { RecordsModule } from './records/records.module';
import { SchemaModule } from './schema/schema.module';
import { SyncsModule } from './syncs/syncs.module';

/** The API: one module per REST resource on top of the shared infrastructure. */
@Module({})
export class AppModule implements NestModule {
  static forRoot(config: AppConfig, extraModules: Type[] = []): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule,
        PersistenceModule.forRoot(),
        JobsModule.forRoot(),
        CommonModule,
        AccountsModule,
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
        McpModule,
        HooksModule,
        ConsoleModule,
        OAuthConsoleModule.forRoot(config),
        ...extraModules,
        ConsoleFallbackModule, // last: the console's catch-all 404 page for unknown /app paths
      ],
      controllers: [HealthController, DiscoveryController],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes('{*splat}');
    // The console's pages post HTML forms, parsed by its own middleware (ConsoleFormMiddleware); so does an
    // OAuth client at the token endpoint (OAuthTokenFormMiddleware).
    consumer.apply(JsonBodyMiddleware).exclude('app/{*path}', 'oauth/token').forRoutes('{*splat}');
  }
}
