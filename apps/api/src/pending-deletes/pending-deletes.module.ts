import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { PendingDeletesService } from './pending-deletes.service';

/** Deletes held for review (spec 2.13, 3.2): a person's decision on one (the console and the operator CLI). */
@Module({
  imports: [SyncsModule],
  providers: [PendingDeletesService],
  exports: [PendingDeletesService],
})
export class PendingDeletesModule {}
