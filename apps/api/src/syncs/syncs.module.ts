import { Module } from '@nestjs/common';
import { OperatorAuth } from './operator-auth';
import { SideBuilder } from './side-builder';
import { SideConnections } from './side-connections';
import { SyncAccess } from './sync-access';
import { SyncLinks } from './sync-links';
import { SyncsController } from './syncs.controller';
import { SyncsService } from './syncs.service';
import { SyncLifecycleService } from './sync-lifecycle.service';

/** Syncs and their sides (spec 2.3-2.5, 4.2) and the lifecycle of 3.1; shared by schema and mappings. */
@Module({
  controllers: [SyncsController],
  providers: [
    SyncsService,
    SyncLifecycleService,
    SyncAccess,
    SideConnections,
    SideBuilder,
    SyncLinks,
    OperatorAuth,
  ],
  exports: [
    SyncsService,
    SyncLifecycleService,
    SyncAccess,
    SideConnections,
    SideBuilder,
    SyncLinks,
    OperatorAuth,
  ],
})
export class SyncsModule {}
