import { type DynamicModule, Module } from '@nestjs/common';
import { AppConfig, ConfigModule } from '@lockstep/config';
import { loadConnectorPlugins } from '@lockstep/connectors-registry';
import { JobsModule } from '@lockstep/jobs';
import { PersistenceModule } from '@lockstep/persistence';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { CommonModule } from '../common/common.module';
import { ConnectorsModule } from '../connectors/connectors.module';
import { MappingsModule } from '../mappings/mappings.module';
import { PendingDeletesModule } from '../pending-deletes/pending-deletes.module';
import { SyncsModule } from '../syncs/syncs.module';

/** The services the operator CLI drives (no HTTP): accounts, keys, and what a person does to a sync. */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    // Connectors added by the operator (CONNECTOR_PLUGINS), as the API loads them: loading twice is harmless.
    loadConnectorPlugins(config.CONNECTOR_PLUGINS);
    return {
      module: CliModule,
      imports: [
        ConfigModule.forRoot(config),
        PersistenceModule.forRoot(),
        JobsModule.forRoot(),
        CommonModule,
        AccountsModule,
        ApiKeysModule,
        ConnectorsModule,
        SyncsModule,
        MappingsModule,
        PendingDeletesModule,
      ],
    };
  }
}
