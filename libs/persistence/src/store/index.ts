export * from './accounts/account-store';
export * from './live-export/capture-store';
export * from './live-export/export-store';
export * from './live-export/run-store';
export * from './live-export/schedule-store';
