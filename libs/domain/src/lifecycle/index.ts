export * from './sync-lifecycle';
