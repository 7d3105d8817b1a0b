import { Module } from '@nestjs/common';
import { SchemaModule } from '../schema/schema.module';
import { SyncsModule } from '../syncs/syncs.module';
import { MappingsController } from './mappings.controller';
import { MappingsService } from './mappings.service';
import { SyncStartService } from './sync-start.service';

/** The mappings document, its validation, and the person's "review and start" (spec 2.8, 2.9, 4.4). */
@Module({
  imports: [SyncsModule, SchemaModule],
  controllers: [MappingsController],
  providers: [MappingsService, SyncStartService],
  exports: [MappingsService, SyncStartService],
})
export class MappingsModule {}
