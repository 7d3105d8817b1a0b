// The service store's repositories, one folder per table family. Encodings stay inside (the right shadow's
// `SAME_AS_LEFT`: record-links/right-shadow.ts is not exported).
export * from './db';
export * from './issues/record-issues';
export * from './operations/operation-reads';
export * from './operations/operation-writes';
export * from './pending-deletes/engine-pending-deletes';
export * from './record-links/link-hashes';
export * from './record-links/record-links';
export * from './record-links/record-search';
export * from './record-queue/record-queue';
export * from './syncs/initial-sync-state';
export * from './syncs/sync-leases';
export * from './syncs/sync-plan';
export * from './syncs/sync-sides';
export * from './syncs/sync-views';
