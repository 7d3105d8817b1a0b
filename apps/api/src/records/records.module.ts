import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { RecordTables } from './record-tables';
import { RecordsController } from './records.controller';
import { RecordsRepository } from './records.repository';
import { RecordsService } from './records.service';

/** Records of a sync (spec 2.12, 3.3, 4.6): search, the status document, refetch. */
@Module({
  imports: [SyncsModule],
  controllers: [RecordsController],
  providers: [RecordsService, RecordsRepository, RecordTables],
  exports: [RecordsService, RecordTables],
})
export class RecordsModule {}
