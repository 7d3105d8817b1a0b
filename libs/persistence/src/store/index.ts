export * from './accounts/account-store';
export * from './live-export/capture-store';
export * from './live-export/export-store';
export * from './live-export/run-store';
export * from './live-export/schedule-store';
export * from './syncs/mappings';
export * from './syncs/schema';
export * from './syncs/syncs';
