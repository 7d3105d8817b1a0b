import { Global, Module } from '@nestjs/common';
import { ConnectorCatalog } from './connector-catalog';
import { ConnectorsController } from './connectors.controller';

@Global()
@Module({ controllers: [ConnectorsController], providers: [ConnectorCatalog], exports: [ConnectorCatalog] })
export class ConnectorsModule {}
