import { type DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AppConfig, ConfigModule } from '@lockstep/config';
import { loadConnectorPlugins } from '@lockstep/connectors-registry';
import { JobsModule } from '@lockstep/jobs';
import { PersistenceModule } from '@lockstep/persistence';
import { MaintenanceProcessor } from './maintenance/maintenance.processor';
import { SyncsProcessor } from './syncs/syncs.processor';
import { EngineScheduler } from './engine/engine.scheduler';
import { LiveExportProcessor } from './live-export/live-export.processor';
import { WorkerHeartbeat } from './heartbeat/worker-heartbeat';
import { ConnectorCoordinationProvider } from './connector-coordination';

/** The worker: Bull consumers, no HTTP. */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig): DynamicModule {
    // Connectors added by the operator (CONNECTOR_PLUGINS), as the API loads them: loading twice is harmless.
    loadConnectorPlugins(config.CONNECTOR_PLUGINS);
    return {
      module: WorkerModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot({ pinoHttp: { level: config.LOG_LEVEL, base: { service: 'worker' } } }),
        PersistenceModule.forRoot(),
        JobsModule.forRoot(),
      ],
      providers: [
        MaintenanceProcessor,
        SyncsProcessor,
        EngineScheduler,
        LiveExportProcessor,
        WorkerHeartbeat,
        ConnectorCoordinationProvider,
      ],
    };
  }
}
