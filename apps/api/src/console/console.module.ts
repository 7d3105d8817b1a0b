import { Global, type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
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
import { ApiKeysConsoleController } from './api-keys.controller';
import { ConsoleFormMiddleware, ConsoleGuard, ConsoleSessionService } from './console-session';
import { IssuesConsoleController } from './issues.controller';
import { MappingsConsoleController } from './mappings.controller';
import { NewSyncConsoleController } from './new-sync.controller';
import { OperationsConsoleController } from './operations.controller';
import { PendingDeletesConsoleController } from './pending-deletes.controller';
import { RecordsConsoleController } from './records.controller';
import { ReviewConsoleController } from './review.controller';
import { SignInController } from './sign-in.controller';
import { SyncActionsConsoleController } from './sync-actions.controller';
import { SyncsConsoleController } from './syncs.controller';
import { LiveExportsConsoleController } from './live-exports.controller';
import { LiveExportEditConsoleController } from './live-export-edit.controller';

/**
 * The console's infrastructure, global so that (1) its form-body middleware runs before the API's JSON body
 * middleware (Nest mounts global modules' middleware first) and (2) other console modules (OAuth) can use
 * the session service and guard without importing this module.
 */
@Global()
@Module({
  providers: [ConsoleSessionService, ConsoleGuard, ConsoleFormMiddleware],
  exports: [ConsoleSessionService, ConsoleGuard],
})
export class ConsoleCoreModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ConsoleFormMiddleware).forRoutes('app/{*path}');
  }
}

/**
 * Lockstep's web console under `/app`: sign-in, API keys, connect, review and start, overview, pending
 * deletes.
 */
@Module({
  imports: [
    ConsoleCoreModule,
    AccountsModule,
    ApiKeysModule,
    ConnectorsModule,
    SyncsModule,
    MappingsModule,
    PendingDeletesModule,
    IssuesModule,
    OperationsModule,
    RecordsModule,
    LiveExportModule,
    SchemaModule,
  ],
  controllers: [
    SignInController,
    ApiKeysConsoleController,
    // Before SyncsConsoleController: `/app/syncs/new` must not reach its `/app/syncs/:id`.
    NewSyncConsoleController,
    SyncsConsoleController,
    SyncActionsConsoleController,
    OperationsConsoleController,
    IssuesConsoleController,
    ReviewConsoleController,
    MappingsConsoleController,
    PendingDeletesConsoleController,
    RecordsConsoleController,
    // Before LiveExportsConsoleController: `/app/live-exports/new` must not reach its `/:id`.
    LiveExportEditConsoleController,
    LiveExportsConsoleController,
  ],
})
export class ConsoleModule {}
