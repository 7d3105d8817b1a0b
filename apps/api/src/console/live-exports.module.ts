import { Module } from '@nestjs/common';
import { LiveExportAccess, LiveExportLinks } from '../live-export/live-export-access';
import { LiveExportConnections } from '../live-export/live-export-connections';
import { LiveExportRunsService } from '../live-export/live-export-runs.service';
import { LiveExportsService } from '../live-export/live-exports.service';
import { SyncsModule } from '../syncs/syncs.module';

const SERVICES = [LiveExportAccess, LiveExportLinks, LiveExportConnections, LiveExportsService, LiveExportRunsService];

/**
 * The services behind the console's live export pages (`LiveExportsConsoleController`, registered in
 * ConsoleModule itself: Nest registers the routes of modules imported by AppModule before those of modules
 * nested deeper, so a controller here would come after the console's catch-all 404 route). The live export
 * module keeps its services to itself, so this module has its own instances of the same stateless services:
 * the pages go through exactly the code the API's endpoints use (access and plan gate, PATCH's checks, runs).
 */
@Module({
  imports: [SyncsModule],
  providers: SERVICES,
  exports: SERVICES,
})
export class LiveExportsConsoleModule {}
