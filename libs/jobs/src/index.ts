export * from './queues';
export * from './jobs.module';
export * from './heartbeat';
export * from './handlers';
