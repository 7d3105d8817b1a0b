import { AccountEntity } from './account.entity';
import { ApiKeyEntity } from './api-key.entity';
import { IdempotencyRecordEntity } from './idempotency-record.entity';
import { SyncEntity } from './sync.entity';
import { SyncSideEntity } from './sync-side.entity';
import { SyncFieldEntity, SyncTableEntity } from './sync-schema.entity';
import { PendingDeleteEntity, SyncIssueEntity } from './sync-issue.entity';
import {
  OperationEntity,
  PendingDeleteEventEntity,
  RecordLinkEntity,
  RecordQueueEntity,
} from './engine.entity';
import { ConsoleSessionEntity } from './console-session.entity';
import { LiveExportEntity, LiveExportRunEntity, LiveExportScheduleEntity } from './live-export.entity';

export {
  AccountEntity,
  ApiKeyEntity,
  IdempotencyRecordEntity,
  SyncEntity,
  SyncSideEntity,
  SyncTableEntity,
  SyncFieldEntity,
  SyncIssueEntity,
  PendingDeleteEntity,
  RecordLinkEntity,
  RecordQueueEntity,
  OperationEntity,
  PendingDeleteEventEntity,
  ConsoleSessionEntity,
  LiveExportEntity,
  LiveExportScheduleEntity,
  LiveExportRunEntity,
};
export { liveExportOwner } from './live-export.entity';
export type {
  LiveExportAuthMethod,
  LiveExportCadence,
  LiveExportRunState,
  LiveExportRunTrigger,
  StoredLiveExportMappings,
} from './live-export.entity';
export type { Shadow, QueuedOperationType, FieldChange } from './engine.entity';
export type {
  SyncStatus,
  InitialSyncPhase,
  DeleteApproval,
  StoredMappings,
  StartOptions,
} from './sync.entity';
export type { SideName, AuthStatus } from './sync-side.entity';
export type { StoredViews } from './sync-schema.entity';
export type { IssueType, Remediation } from './sync-issue.entity';

/** Every entity of the service store (TypeORM needs the list). */
export const ENTITIES = [
  AccountEntity,
  ApiKeyEntity,
  IdempotencyRecordEntity,
  SyncEntity,
  SyncSideEntity,
  SyncTableEntity,
  SyncFieldEntity,
  SyncIssueEntity,
  PendingDeleteEntity,
  RecordLinkEntity,
  RecordQueueEntity,
  OperationEntity,
  PendingDeleteEventEntity,
  ConsoleSessionEntity,
  LiveExportEntity,
  LiveExportScheduleEntity,
  LiveExportRunEntity,
];
