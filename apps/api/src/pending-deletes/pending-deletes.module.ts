import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { PendingDeletesController } from './pending-deletes.controller';
import { PendingDeletesService } from './pending-deletes.service';

/**
 * Deletes held for review (spec 2.13, 3.2, 4.7): the list, and a person's decision on one (the console and
 * the operator CLI).
 */
@Module({
  imports: [SyncsModule],
  controllers: [PendingDeletesController],
  providers: [PendingDeletesService],
  exports: [PendingDeletesService],
})
export class PendingDeletesModule {}
