import { type DynamicModule, Module } from '@nestjs/common';
import { AppConfig, ConfigModule } from '@lockstep/config';
import { PersistenceModule } from '@lockstep/persistence';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKeysModule } from '../api-keys/api-keys.module';

/** The services the operator CLI drives (no HTTP, no queues). */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: CliModule, imports: [ConfigModule.forRoot(config), PersistenceModule.forRoot(), AccountsModule, ApiKeysModule] };
  }
}
