import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { LiveExportAccess, LiveExportLinks } from './live-export-access';
import { LiveExportConnections } from './live-export-connections';
import { LiveExportConnectorsController } from './live-export-connectors.controller';
import { LiveExportMappingsController } from './live-export-mappings.controller';
import { LiveExportMappingsService } from './live-export-mappings.service';
import { LiveExportRunsController, LiveExportScheduleController } from './live-export-runs.controller';
import { LiveExportRunsService } from './live-export-runs.service';
import { LiveExportSchemaService } from './live-export-schema.service';
import { LiveExportsController } from './live-exports.controller';
import { LiveExportsService } from './live-exports.service';

/**
 * Live export (spec 2.15, 3.4, 4.8): connectors with roles, live exports and their sides, source tables and
 * fields, destination locations, the mappings document, save (provisioning), schedule, trigger and runs. The
 * worker (`apps/worker/src/live-export/`) executes runs and fires schedules.
 */
@Module({
  imports: [SyncsModule],
  controllers: [
    LiveExportConnectorsController,
    LiveExportsController,
    LiveExportMappingsController,
    LiveExportScheduleController,
    LiveExportRunsController,
  ],
  providers: [
    LiveExportAccess,
    LiveExportLinks,
    LiveExportConnections,
    LiveExportsService,
    LiveExportSchemaService,
    LiveExportMappingsService,
    LiveExportRunsService,
  ],
  // The console's live export pages and the MCP tools go through the same services (access and plan gate,
  // PATCH's checks, mappings, runs).
  exports: [
    LiveExportAccess,
    LiveExportLinks,
    LiveExportConnections,
    LiveExportsService,
    LiveExportMappingsService,
    LiveExportRunsService,
    LiveExportSchemaService,
  ],
})
export class LiveExportModule {}
