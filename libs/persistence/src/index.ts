export * from './entities';
export * from './migrations';
export * from './data-source';
export * from './migrate';
export * from './persistence.module';
export * from './credentials/credential-cipher';
export * from './issues/credential-issues';
export * from './live-export-captures';
