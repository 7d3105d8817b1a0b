import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '@lockstep/config';
import { dataSourceOptions } from './data-source';
import { ENTITIES } from './entities';
import { CredentialCipher } from './credentials/credential-cipher';

/** The service store for Nest apps: one pool, every entity's repository injectable, the credential cipher. */
@Module({})
export class PersistenceModule {
  static forRoot(): DynamicModule {
    return {
      module: PersistenceModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) => dataSourceOptions(config.DATABASE_URL),
        }),
        TypeOrmModule.forFeature(ENTITIES),
      ],
      providers: [CredentialCipher],
      exports: [TypeOrmModule, CredentialCipher],
    };
  }
}
