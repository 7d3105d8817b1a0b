export * from './merge';
export * from './deletes';
export * from './filters';
