import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { OperationsController } from './operations.controller';
import { OperationsService } from './operations.service';

/** The record-level change log (spec 2.10, 4.5): `GET /sync/operations` and `GET /sync/operations/{id}`. */
@Module({
  imports: [SyncsModule],
  controllers: [OperationsController],
  providers: [OperationsService],
  exports: [OperationsService],
})
export class OperationsModule {}
