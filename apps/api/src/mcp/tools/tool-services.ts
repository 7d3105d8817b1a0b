import { Injectable } from '@nestjs/common';
import { ConnectorCatalog } from '../../connectors/connector-catalog';
import { IssuesService } from '../../issues/issues.service';
import { LiveExportMappingsService } from '../../live-export/live-export-mappings.service';
import { LiveExportRunsService } from '../../live-export/live-export-runs.service';
import { LiveExportsService } from '../../live-export/live-exports.service';
import { MappingsService } from '../../mappings/mappings.service';
import { OperationsService } from '../../operations/operations.service';
import { PendingDeletesService } from '../../pending-deletes/pending-deletes.service';
import { RecordsService } from '../../records/records.service';
import { SchemaService } from '../../schema/schema.service';
import { SyncLifecycleService } from '../../syncs/sync-lifecycle.service';
import { SyncsService } from '../../syncs/syncs.service';

/** The services the REST controllers call, gathered for the tools (which call them the same way). */
@Injectable()
export class ToolServices {
  constructor(
    readonly connectors: ConnectorCatalog,
    readonly syncs: SyncsService,
    readonly lifecycle: SyncLifecycleService,
    readonly schema: SchemaService,
    readonly mappings: MappingsService,
    readonly operations: OperationsService,
    readonly issues: IssuesService,
    readonly records: RecordsService,
    readonly pendingDeletes: PendingDeletesService,
    readonly liveExports: LiveExportsService,
    readonly liveExportMappings: LiveExportMappingsService,
    readonly liveExportRuns: LiveExportRunsService,
  ) {}
}
