import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { IssuesController } from './issues.controller';
import { IssuesService } from './issues.service';

/** Issues (spec 2.11, 4.5): the open list, one issue with its remediation, and the retry. */
@Module({
  imports: [SyncsModule],
  controllers: [IssuesController],
  providers: [IssuesService],
  exports: [IssuesService],
})
export class IssuesModule {}
