import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { SchemaLocks } from './schema-locks';
import { SchemaController } from './schema.controller';
import { SchemaService } from './schema.service';

/** Schema discovery (spec 2.7, 4.3); exports `SchemaService` for the mappings module. */
@Module({
  imports: [SyncsModule],
  controllers: [SchemaController],
  providers: [SchemaService, SchemaLocks],
  exports: [SchemaService],
})
export class SchemaModule {}
