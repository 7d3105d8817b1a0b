import { Foundation1763700000000 } from './1763700000000-foundation';
import { SyncResources1763800000000 } from './1763800000000-sync-resources';
import { Engine1763900000000 } from './1763900000000-engine';
import { RecordSearch1764000000200 } from './1764000000200-record-search';
import { Monitoring1764100000000 } from './1764100000000-monitoring';
import { LiveExport1764200000000 } from './1764200000000-live-export';
import { Console1764200000500 } from './1764200000500-console';
import { ConsoleOAuth1764200000600 } from './1764200000600-console-oauth';
import { LiveExportCapture1764300000000 } from './1764300000000-live-export-capture';
import { EngineStoreWrites1764400000000 } from './1764400000000-engine-store-writes';
import { EngineStoreValues1764400000100 } from './1764400000100-engine-store-values';
import { LinkChangeTimes1764500000000 } from './1764500000000-link-change-times';
import { IssueRecurrence1764600000000 } from './1764600000000-issue-recurrence';
import { InitialSyncRanges1764700000000 } from './1764700000000-initial-sync-ranges';
import { OperationBatches1764800000000 } from './1764800000000-operation-batches';

/** Every migration, oldest first. Add new ones at the end. */
export const MIGRATIONS = [
  Foundation1763700000000,
  SyncResources1763800000000,
  Engine1763900000000,
  RecordSearch1764000000200,
  Monitoring1764100000000,
  LiveExport1764200000000,
  Console1764200000500,
  ConsoleOAuth1764200000600,
  LiveExportCapture1764300000000,
  EngineStoreWrites1764400000000,
  EngineStoreValues1764400000100,
  LinkChangeTimes1764500000000,
  IssueRecurrence1764600000000,
  InitialSyncRanges1764700000000,
  OperationBatches1764800000000,
];
